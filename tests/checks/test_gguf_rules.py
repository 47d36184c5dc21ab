"""The GGUF rules on the defect fixtures (fixtures/gguf/, one thing broken in each), llama.cpp's load logic
as ported, the EOG table scan shows, and ``diff HF_DIR model.gguf``.

Each expectation is what llama.cpp (src/llama-vocab.cpp, as llama-cpp-python 0.3.36 vendors it) does with
the file; tests/real/test_gguf_real.py checks the port against llama-cpp-python itself on 19 real GGUFs.
"""

from __future__ import annotations

import json
import shutil
from importlib.metadata import version
from importlib.util import find_spec
from pathlib import Path

import pytest

from conftest import FIXTURES, run_cli, tree_snapshot

NEEDS_LLAMACPP = pytest.mark.skipif(
    find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed (pip install 'tokaudit[llamacpp]')"
)

GGUF = FIXTURES / "gguf"
HF = FIXTURES / "clean-bpe"


def _scan(path: Path) -> tuple[int, dict]:
    result = run_cli("scan", str(path), "--format", "json")
    assert result.exit_code in (0, 1), result.stderr
    return result.exit_code, json.loads(result.stdout)


def _errors(doc: dict) -> dict[str, tuple[str, list | None]]:
    """Errors and warnings, but TA810: the fixtures' ChatML template prints content as a string, so typed content
    parts leak for transformers (a warning on every fixture, pinned in test_a_faithful_conversion_scans_clean)."""
    return {
        f["code"]: (f["severity"], f["ids"])
        for f in doc["findings"]
        if f["severity"] in ("error", "warning") and f["code"] != "TA810"
    }


def _one(doc: dict, code: str) -> dict:
    found = [f for f in doc["findings"] if f["code"] == code]
    assert len(found) == 1, (code, [f["code"] for f in doc["findings"]])
    return found[0]


def test_a_faithful_conversion_scans_clean() -> None:
    code, doc = _scan(GGUF / "clean.gguf")
    assert (code, _errors(doc)) == (0, {})
    # typed parts printed as a list (transformers), a reasoning-only turn's null printed as None (smg, TGI keep it)
    assert [(f["code"], f["severity"], f["details"]["stacks"]) for f in doc["findings"] if f["code"] == "TA810"] == [
        ("TA810", "warning", ["transformers"]),
        ("TA810", "warning", ["smg", "tgi"]),
    ]
    g = doc["gguf"]
    assert (g["model"], g["vocab_type"], g["pre"], g["pre_state"], g["pre_family"]) == (
        "gpt2",
        "BPE",
        "gpt-2",
        "ok",
        "GPT2",
    )
    assert [(e["id"], e["token"]) for e in g["eog"]] == [(997, "<|endoftext|>"), (999, "<|im_end|>")]
    assert g["eos_ids"] == [{"id": 999, "token": "<|im_end|>"}]
    assert g["end_of_turn"] == {
        "token": "<|im_end|>",
        "id": 999,
        "llamacpp_stops": True,
        "eos_only_runtimes_stop": True,
    }
    assert g["flags"]["add_bos"] == {"value": False, "set_by": "GGUF key"}
    assert g["special"]["eos"] == {"id": 999, "token": "<|im_end|>", "origin": "file", "bad_value": None}


def test_never_stops_eos_is_not_the_turn_terminator() -> None:
    """Llama 3's bug: eos <|endoftext|> (997) while turns end with <|im_end|> (999). llama.cpp stops on 999 by its
    text; runtimes that read only the eos id never stop."""
    code, doc = _scan(GGUF / "never-stops.gguf")
    assert code == 1 and _errors(doc) == {"TA207": ("error", [[997, 997], [999, 999]])}
    f = _one(doc, "TA207")
    assert f["message"].startswith(
        "the chat template ends each turn with <|im_end|> (999), but never-stops.gguf's eos id is "
        "997 '<|endoftext|>': llama.cpp (and Ollama, LM Studio on current llama.cpp) stops on it "
        "(its text <|im_end|> makes it end-of-generation)"
    )
    assert "mistral.rs" in f["message"] and f["location"]["key"] == "tokenizer.ggml.eos_token_id"
    assert doc["gguf"]["end_of_turn"] == {
        "token": "<|im_end|>",
        "id": 999,
        "llamacpp_stops": True,
        "eos_only_runtimes_stop": False,
    }
    assert doc["gguf"]["eos_ids"] == [{"id": 997, "token": "<|endoftext|>"}]


@pytest.mark.parametrize(
    ("name", "state", "words"),
    [
        ("pre-default.gguf", "default", "says tokenizer.ggml.pre = 'default'"),
        (
            "pre-unknown.gguf",
            "unknown",
            "llama.cpp does not know: it refuses to load the file (\"unknown pre-tokenizer type: 'gpt-2-custom'\"; "
            "tokaudit's table mirrors llama.cpp as vendored by llama-cpp-python 0.3.36; the installed "
            "llama-cpp-python {installed} refuses it too)",
        ),
    ],
)
def test_a_bpe_gguf_needs_a_known_pre_tokenizer(name: str, state: str, words: str) -> None:
    code, doc = _scan(GGUF / name)
    assert code == 1 and _errors(doc) == {"TA307": ("error", None)}
    f = _one(doc, "TA307")
    installed = version("llama_cpp_python") if find_spec("llama_cpp") else None
    assert words.format(installed=installed) in f["message"] and f["details"]["state"] == state
    assert f["location"]["key"] == "tokenizer.ggml.pre"
    assert doc["gguf"]["load_error"] == (None if state == "default" else "unknown pre-tokenizer type: 'gpt-2-custom'")


@NEEDS_LLAMACPP
def test_the_installed_llamacpp_is_asked_about_a_pre_name() -> None:
    """A vocab-only load in a bounded child: llama.cpp loads llama-bpe and refuses the unknown 'gpt-2-custom'. (A
    name outside tokaudit's table that the installed llama.cpp loads is a TA307 note; llama-cpp-python 0.3.36 knows
    exactly the table's 91 names, so no real file shows that case here.)"""
    from tokaudit.backends.llamacpp_backend import installed_loads
    from tokaudit.model.llamacpp_load import PRE_TOKENIZERS

    assert installed_loads(FIXTURES / "llamacpp" / "clean-bpe.gguf") is True
    assert installed_loads(GGUF / "pre-unknown.gguf") is False
    assert installed_loads(GGUF / "pre-unknown.gguf", timeout=0.0) in (
        False,
        None,
    )  # killed or already done: never blocks
    assert len(PRE_TOKENIZERS) == 91


def test_missing_pre_is_the_degraded_banner() -> None:
    code, doc = _scan(FIXTURES / "llamacpp" / "clean-bpe-no-pre.gguf")
    f = _one(doc, "TA307")
    assert "GENERATION QUALITY WILL BE DEGRADED!" in f["message"] and f["details"]["state"] == "missing"
    assert f["location"]["key"] == "tokenizer.ggml.model"


def test_a_bpe_gguf_without_merges_does_not_load() -> None:
    code, doc = _scan(GGUF / "no-merges.gguf")
    assert code == 1 and _errors(doc) == {"TA308": ("error", None)}
    assert "cannot find tokenizer merges in model file" in _one(doc, "TA308")["message"]


def test_a_missing_bos_id_takes_the_bpe_default_11_a_comma() -> None:
    code, doc = _scan(GGUF / "bos-default.gguf")
    assert code == 1 and _errors(doc) == {"TA209": ("error", [[11, 11]])}
    f = _one(doc, "TA209")
    assert f["message"].startswith(
        "bos-default.gguf sets no tokenizer.ggml.bos_token_id: llama.cpp uses the gpt2 default 11 ',', "
        "a NORMAL text token, as put in front of every prompt (add_bos is on)"
    )
    assert doc["gguf"]["special"]["bos"] == {"id": 11, "token": ",", "origin": "default", "bad_value": None}


def test_an_eos_id_out_of_range_falls_back_to_the_default() -> None:
    code, doc = _scan(GGUF / "eos-out-of-range.gguf")
    assert code == 1
    # one root cause, one finding: TA209 (default id) and TA207 (eos vs the turn end) leave it to TA201
    assert _errors(doc) == {"TA201": ("error", [[1000, 1000]])}
    assert _one(doc, "TA201")["message"] == (
        'tokenizer.ggml.eos_token_id = 1000 is outside the 1000 tokens of eos-out-of-range.gguf: llama.cpp warns "bad '
        "special "
        'token" and uses its gpt2 default id 11 as eos, other GGUF readers fail or index past the vocabulary.'
    )
    assert [e["id"] for e in doc["gguf"]["eog"]] == [11, 997, 999]


def test_an_added_word_typed_control_vanishes_from_the_output() -> None:
    code, doc = _scan(GGUF / "word-typed-control.gguf")
    assert code == 1 and _errors(doc) == {"TA208": ("error", [[576, 576]])}
    assert _one(doc, "TA208")["message"].startswith(
        "1 word token(s) typed CONTROL in word-typed-control.gguf: 576 'the'."
    )


def test_a_control_looking_token_typed_normal_is_retyped_by_llamacpp() -> None:
    code, doc = _scan(GGUF / "control-typed-normal.gguf")
    assert code == 0 and _errors(doc) == {"TA208": ("warning", [[999, 999]])}
    assert "typed NORMAL" in _one(doc, "TA208")["message"]
    assert doc["gguf"]["control_override"] == [999]


def test_embedding_rows_beyond_the_tokens() -> None:
    code, doc = _scan(GGUF / "embedding-rows.gguf")
    assert (
        doc["vocab"]["sizes"]["config_vocab_size"],
        doc["vocab"]["sizes"]["embedding_rows"],
        doc["vocab"]["sizes"]["entries"],
    ) == (1024, 1024, 1000)
    assert "TA104" in {f["code"] for f in doc["findings"]} or "TA101" in {f["code"] for f in doc["findings"]}


def test_double_bos_is_a_warning_on_a_gguf() -> None:
    """llama.cpp's server strips a leading BOS the template wrote when add_bos is on (common/chat.cpp:959)."""
    code, doc = _scan(GGUF / "double-bos.gguf")
    f = _one(doc, "TA803")
    assert f["severity"] == "warning" and "llama.cpp's server strips the leading BOS" in f["message"]
    assert f["details"]["token"] == "<|endoftext|>" and f["details"]["token_id"] == 997


def test_scan_shows_the_three_stop_sets(tmp_path: Path) -> None:
    before = tree_snapshot(GGUF)
    result = run_cli("scan", str(GGUF / "never-stops.gguf"))
    assert result.exit_code == 1
    out = result.stdout
    assert "llama.cpp (GGUF)" in out and "llama.cpp (its EOG set)" in out and "997 <|endoftext|>, 999 <|im_end|>" in out
    assert "runtimes reading only the eos id" in out and "eos-only runtimes: never stop" in out
    assert tree_snapshot(GGUF) == before


def test_the_port_of_llamacpps_load() -> None:
    from tokaudit.artifacts.gguf import read_gguf_tokenizer
    from tokaudit.model.llamacpp_load import PRE_TOKENIZERS, llamacpp_load

    load = llamacpp_load(read_gguf_tokenizer(GGUF / "clean.gguf"))
    assert (load.vocab_type, load.pre_family, load.load_error) == ("BPE", "GPT2", None)
    assert dict(load.flags) == {
        "add_bos": False,
        "add_eos": False,
        "add_sep": False,
        "add_space_prefix": False,
        "clean_spaces": True,
    }
    assert {k: (v.id, v.origin) for k, v in load.special.items() if v.id is not None} == {
        "bos": (997, "file"),
        "eos": (999, "file"),
        "pad": (997, "file"),
        "eot": (999, "detected"),
    }
    assert dict(load.eog) == {997: "its text <|endoftext|>", 999: "its text <|im_end|>"}
    # the llama-bpe family forces add_bos; tekken, chameleon too; glm4 drops the BOS default
    assert PRE_TOKENIZERS["llama-bpe"] == ("LLAMA3", frozenset({"ignore_merges", "add_bos"}))
    assert PRE_TOKENIZERS["glm4"] == ("CHATGLM4", frozenset({"no_bos", "ignore_merges"}))
    assert len(PRE_TOKENIZERS) == 91  # every name llama.cpp's load() knows


def test_diff_a_faithful_conversion_is_clean() -> None:
    for args in ((HF, GGUF / "clean.gguf"), (GGUF / "clean.gguf", HF)):
        result = run_cli("diff", *map(str, args), "--format", "json")
        doc = json.loads(result.stdout)
        assert (result.exit_code, doc["findings"]) == (0, []), doc["findings"]
        d = doc["diff"]
        assert (d["mode"], d["classification"], d["same_bytes"], d["mismatched"]) == ("conversion", "faithful", 1000, 0)
        assert d["merges"] == {
            "hf": 741,
            "gguf": 741,
            "first_difference": None,
            "hf_at_first": None,
            "gguf_at_first": None,
        }
        assert d["template"] == {"hf": True, "gguf": True, "same": True, "first_difference": None}
        assert d["pre"]["matches"] is True


def test_diff_lists_the_drift() -> None:
    def diff(name: str) -> dict:
        result = run_cli("diff", str(HF), str(GGUF / name), "--format", "json")
        assert result.exit_code in (0, 1), result.stderr
        return json.loads(result.stdout)

    doc = diff("never-stops.gguf")
    assert [(f["code"], f["ids"]) for f in doc["findings"]] == [("TA703", [[997, 997], [999, 999]])]
    assert "eos_id: HF 999 <|im_end|> vs GGUF 997 <|endoftext|>" in doc["findings"][0]["message"]
    doc = diff("word-typed-control.gguf")
    assert [(f["code"], f["severity"], f["ids"]) for f in doc["findings"]] == [("TA208", "error", [[576, 576]])]
    doc = diff("control-typed-normal.gguf")
    assert [(f["code"], f["severity"], f["ids"]) for f in doc["findings"]] == [("TA208", "warning", [[999, 999]])]
    doc = diff("no-merges.gguf")
    assert [f["code"] for f in doc["findings"]] == ["TA308"]
    assert doc["diff"]["merges"]["gguf"] == 0 and doc["diff"]["merges"]["first_difference"] == 0
    doc = diff("pre-default.gguf")
    assert [f["code"] for f in doc["findings"]] == ["TA307"]


def test_diff_names_a_wrong_pre_against_the_hf_regex(tmp_path: Path) -> None:
    """clean-bpe splits with GPT-2's ByteLevel regex; llama-bpe is Llama 3's regex family."""
    root = tmp_path / "model"
    shutil.copytree(HF, root)
    shutil.copyfile(FIXTURES / "llamacpp" / "clean-bpe-wrong-pre.gguf", root / "model.gguf")
    code, doc = _scan(root)
    f = _one(doc, "TA307")
    assert f["message"].startswith(
        "model.gguf says tokenizer.ggml.pre = 'llama-bpe' (llama.cpp's LLAMA3 regexes), but tokenizer.json "
        "splits with GPT-2 regex"
    )
    assert f["details"]["hf_families"] == ["GPT2", "JAIS", "MPT", "OLMO"]


@NEEDS_LLAMACPP
def test_template_renders_a_ggufs_templates() -> None:
    """The GGUF's tokenizer.chat_template, rendered by both engines and tokenized as llama.cpp's server does."""
    result = run_cli("template", str(GGUF / "double-bos.gguf"), "--format", "json")
    doc = json.loads(result.stdout)
    assert doc["templates"] == [{"source": "double-bos.gguf (tokenizer.chat_template)", "name": "default"}]
    (bos,) = [f for f in doc["findings"] if f["code"] == "TA803"]
    # llama_tokenize(add_special, parse_special) on the rendered text: add_bos adds 997 before the template's own 997
    assert (bos["severity"], bos["details"]["first_ids"][:2]) == ("warning", [997, 997])
    assert result.exit_code == 0


@NEEDS_LLAMACPP
def test_compare_on_a_gguf_alone_runs_llamacpp_against_its_detokenizer() -> None:
    result = run_cli("compare", str(GGUF / "clean.gguf"), "--format", "json", "--unicode-sweep", "off")
    doc = json.loads(result.stdout)
    rows = {b["name"]: b["available"] for b in doc["backends"]}
    assert rows["strict"] and set(rows) == {
        "strict",
        "llama.cpp",
        "transformers-gguf",
    }  # no HF-file backend: none to read
    assert result.exit_code == 0 and [f for f in doc["findings"] if f["severity"] == "error"] == []


def test_decode_and_encode_a_gguf_alone_with_its_own_engines() -> None:
    """decode defaults to strict (llama_detokenize emulated, no extra needed), encode to llama.cpp."""
    doc = json.loads(
        run_cli("decode", str(GGUF / "clean.gguf"), "9 999", "--keep-special-tokens", "--format", "json").stdout
    )
    assert (doc["backend"], doc["ids"], doc["text"]) == ("strict", [9, 999], "*<|im_end|>")
    if find_spec("llama_cpp") is not None:
        doc = json.loads(run_cli("encode", str(GGUF / "clean.gguf"), "Hello <|im_end|>", "--format", "json").stdout)
        assert doc["backend"] == "llama.cpp" and doc["ids"][-1] == 999


def test_replay_a_gguf_alone(tmp_path: Path) -> None:
    """Decoded with a tokenizer built from the GGUF's pieces; llama.cpp's server detokenizer runs beside the others."""
    stream = tmp_path / "stream.json"
    stream.write_text(json.dumps({"ids": [9, 128, 77, 999, 576, 320]}), encoding="utf-8")
    for args, text in (((), "*\ufffdnthe h"), (("--keep-special-tokens",), "*\ufffdn<|im_end|>the h")):
        result = run_cli("replay", str(GGUF / "clean.gguf"), str(stream), *args, "--format", "json")
        doc = json.loads(result.stdout)
        assert (result.exit_code, doc["text"], doc["findings"]) == (0, text, [])
        assert {r["name"]: r["text"] for r in doc["detokenizers"]}["llama.cpp-server"] == text
        assert doc["tokenizer"]["origin"] == "decode only, from the llama.cpp pieces of clean.gguf"
