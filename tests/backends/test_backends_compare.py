"""Backends as compare uses them: specials, batch calls, the rebuilt HF BPE, strict decode, and the
transformers backends (the test extras install transformers; one test blocks its import in a child process)."""

from __future__ import annotations

import base64
import json
import shutil
from importlib.metadata import version
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli, tree_snapshot
from tokaudit.backends.base import UnknownId, call, decode_batch, encode_batch
from tokaudit.backends.registry import load_backends
from tokaudit.backends.vocab import byte_vocab
from tokaudit.model.load import load_model

SAME = FIXTURES / "compare" / "same"
TEXTS = ["Hello world, it's 2024!", "中文 and カタカナ <|im_end|>", "", "  \n\t x 👍🏽", "<|endoftext|><|im_start|>"]


def backends(target: Path | str, names: list[str], **kwargs: object) -> dict:
    return {lb.name: lb for lb in load_backends(load_model(str(target)), names, **kwargs)}  # type: ignore[arg-type]


def test_specials_of_a_directory_with_tokenizer_json_are_its_added_tokens() -> None:
    vocab = byte_vocab(load_model(str(SAME)))
    assert vocab.specials == {"<|endoftext|>": 1000, "<|im_start|>": 1001, "<|im_end|>": 1002}
    assert len(vocab.ranks) == 1000


def test_batch_calls_equal_single_calls() -> None:
    loaded = backends(SAME, ["tiktoken", "hf", "reference", "strict"])
    ids = [loaded["tiktoken"].backend.encode(t) for t in TEXTS]
    assert ids[4] == [1000, 1001]
    for name in ("tiktoken", "hf", "reference"):
        b = loaded[name].backend
        assert encode_batch(b, TEXTS) == ids, name
        assert decode_batch(b, ids) == TEXTS, name
        assert decode_batch(b, ids, skip_special_tokens=True)[4] == "", name
    assert decode_batch(loaded["strict"].backend, ids) == TEXTS


def test_strict_decode_fails_on_unmapped_ids_and_keeps_layer_precedence() -> None:
    strict = backends(SAME, ["strict"])["strict"].backend
    assert strict.decode([72, 1002]) == "H<|im_end|>"
    assert strict.decode([72, 1002], skip_special_tokens=True) == "H"
    out = call(strict.decode, [72, 1003])
    assert (out.error_type, out.error) == (
        "UnknownId",
        "'no entry found for key 1003 (a files-only loader maps no token to it)'",
    )
    with pytest.raises(UnknownId):
        strict.decode([-1])


def test_rebuilt_hf_takes_a_whole_pre_token_like_tiktoken(tmp_path: Path) -> None:
    """ranks with b"xyz" but neither b"xy" nor b"yz": tiktoken takes the whole piece; so must the rebuilt BPE."""
    ranks = [bytes([i]) for i in range(256)] + [b"xyz"]
    (tmp_path / "tiktoken.model").write_text(
        "".join(f"{base64.b64encode(t).decode()} {i}\n" for i, t in enumerate(ranks))
    )
    loaded = backends(tmp_path, ["tiktoken", "hf", "reference"], pat_str=r"\S+|\s+")
    assert loaded["hf"].detail == "rebuilt from tiktoken.model ranks"
    for name in ("tiktoken", "hf", "reference"):
        b = loaded[name].backend
        assert b.encode("xyz") == [256], name
        assert b.encode("xyzq") == [120, 121, 122, 113], name


def test_reference_reads_class_intersection_like_tiktoken() -> None:
    """Kimi's [\\p{L}&&[^\\p{Han}]]: regex.VERSION1 (reference) splits as fancy-regex (tiktoken) and Oniguruma (hf)."""
    loaded = backends(SAME, ["tiktoken", "hf", "reference"])
    text = "ab中文cd &&x"
    ids = {name: lb.backend.encode(text) for name, lb in loaded.items()}
    assert ids["tiktoken"] == ids["hf"] == ids["reference"]
    pieces = [m.group() for m in loaded["reference"].backend.regex.finditer(text)]
    assert pieces == ["ab", "中文", "cd", " &&", "x"]


def test_tiktoken_drops_text_its_pattern_does_not_match_and_hf_keeps_it(tmp_path: Path) -> None:
    """Verified behaviour: text no alternative matches is skipped by tiktoken (and by reference, which mirrors
    it) but kept as its own piece by tokenizers' Split(isolated)."""
    ranks = [bytes([i]) for i in range(256)]
    (tmp_path / "tiktoken.model").write_text(
        "".join(f"{base64.b64encode(t).decode()} {i}\n" for i, t in enumerate(ranks))
    )
    loaded = backends(tmp_path, ["tiktoken", "hf", "reference"], pat_str=r"[a-z]+")
    assert loaded["tiktoken"].backend.encode("ab cd") == [97, 98, 99, 100]
    assert loaded["reference"].backend.encode("ab cd") == [97, 98, 99, 100]
    assert loaded["hf"].backend.encode("ab cd") == [97, 98, 32, 99, 100]
    code, doc = _json(
        "compare",
        str(tmp_path / "tiktoken.model"),
        "--backends",
        "tiktoken,hf",
        "--pat-str",
        r"[a-z]+",
        "--unicode-sweep",
        "off",
    )
    p = doc["pairs"][0]
    assert (
        code == 1
        and p["encode_mismatch_real"] > 0
        and p["encode_mismatch_real"] == p["encode_mismatch"] - p["encode_mismatch_benign"]
    )
    # one cause: tiktoken's own round trip loses the text exactly where its ids differ from hf's (and hf's holds
    # there), so the loss is a consequence listed in the one encode-mismatch, not a second error
    errors = [f for f in doc["findings"] if f["severity"] == "error"]
    assert [f["name"] for f in errors] == ["encode-mismatch"]
    own = errors[0]["details"]["consequences"]["roundtrip_failure"]
    assert own["backend"] == "tiktoken" and own["examples"][0]["case"] == "builtin:scripts/english"
    assert "Consequence: tiktoken's own decode(encode(text)) loses the text in " in errors[0]["message"]


def _json(*args: str) -> tuple[int, dict]:
    r = run_cli(*args, "--format", "json", "--quiet")
    return r.exit_code, json.loads(r.stdout)


# -- transformers (optional extra) ----------------------------------------------------------------


def test_transformers_unavailable_reason_names_the_extra_when_missing() -> None:
    """Run where ``import transformers`` fails (a child process with the module blocked, as on an install without
    the extra): the row names the extra instead of skipping the backend silently."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['transformers'] = None\n"
        "from tokaudit.backends.registry import load_backends\n"
        "from tokaudit.model.load import load_model\n"
        f"(lb,) = load_backends(load_model({str(SAME)!r}), ['transformers-fast'])\n"
        "print(lb.unavailable)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "transformers is not installed (pip install 'tokaudit[transformers]')"


def test_transformers_backends_report_the_class_really_loaded() -> None:
    loaded = backends(SAME, ["tiktoken", "transformers-fast", "transformers-slow"])
    fast, slow = loaded["transformers-fast"], loaded["transformers-slow"]
    assert fast.detail == "TokenizersBackend (fast)"
    # transformers v5 ignores use_fast=False and this model has no SentencePiece tokenizer.model: there is
    # no slow path, and a fast tokenizer is never called slow
    assert slow.backend is None
    assert slow.unavailable == (
        f"transformers {version('transformers')} has no slow tokenizer for this model: AutoTokenizer(use_fast=False) "
        "gives the Rust "
        "PreTrainedTokenizerFast; the model's remote tokenizer class may be slow: pass --trust-remote-code to run it"
    )
    ids = [loaded["tiktoken"].backend.encode(t) for t in TEXTS]
    assert encode_batch(fast.backend, TEXTS) == ids
    assert decode_batch(fast.backend, ids) == TEXTS
    assert fast.backend.decode([1003]) == ""


def test_transformers_fast_and_slow_share_one_autotokenizer_load(tmp_path: Path) -> None:
    """transformers >= 5.23 drops use_fast in AutoTokenizer.from_pretrained: one load_backends call loads once for
    both backends (a tiktoken file's conversion takes transformers seconds), a failure's reason included."""
    from tokaudit.backends.base import BackendUnavailable
    from tokaudit.backends.transformers_backend import AutoLoads, ignores_use_fast, load_auto_tokenizer

    import transformers

    versions = ("5.24.0", "5.23.0", "6.0.0.dev0", "5.22.1", "4.57.1", "main")
    assert [ignores_use_fast(v) for v in versions] == [True, True, False, False, False, False]
    # the premise, on the installed transformers (its version from the package, not asserted): where the gate says
    # use_fast is ignored, asking for the slow tokenizer gives the fast one
    shared = ignores_use_fast(version("transformers"))
    if shared:
        assert transformers.AutoTokenizer.from_pretrained(str(SAME), use_fast=False, local_files_only=True).is_fast
    loads: AutoLoads = {}
    fast = load_auto_tokenizer(SAME, True, False, loads)
    assert (load_auto_tokenizer(SAME, False, False, loads) is fast) == shared
    assert list(loads) == ([(SAME, None, False)] if shared else [(SAME, True, False), (SAME, False, False)])
    assert load_auto_tokenizer(SAME, True, False) is not fast  # without the shared loads: a load of its own
    (tmp_path / "tokenizer.json").write_text("{", encoding="utf-8")
    reasons = []
    for use_fast in (True, False):
        with pytest.raises(BackendUnavailable) as caught:
            load_auto_tokenizer(tmp_path, use_fast, False, loads)
        reasons.append(str(caught.value))
    assert reasons[0] == reasons[1] and reasons[0].startswith("AutoTokenizer failed: ")
    assert len(loads) == (2 if shared else 4)


def test_transformers_slow_is_only_a_class_that_really_is_slow(tmp_path: Path) -> None:
    """transformers 5 implements LlamaTokenizer only in Rust: no slow path, said with the reason. A class
    it keeps as SentencePiece-only (BertGenerationTokenizer) is the slow path, and encodes like the
    sentencepiece library."""
    import sentencepiece

    llama = backends(FIXTURES / "spm-llama-like", ["transformers-fast", "transformers-slow"])
    assert llama["transformers-fast"].detail == "LlamaTokenizer (fast)"
    assert llama["transformers-slow"].backend is None
    assert llama["transformers-slow"].unavailable == (
        f"transformers {version('transformers')} has no slow tokenizer for this model: AutoTokenizer(use_fast=False) "
        "gives the Rust "
        "LlamaTokenizer; the library under transformers' SentencePiece path is compared as the sentencepiece backend"
    )
    d = tmp_path / "bert-generation"
    d.mkdir()
    shutil.copy(FIXTURES / "spm-unigram" / "tokenizer.model", d / "tokenizer.model")
    (d / "tokenizer_config.json").write_text('{"tokenizer_class": "BertGenerationTokenizer"}', encoding="utf-8")
    slow = backends(d, ["transformers-slow"])["transformers-slow"]
    assert slow.detail == "BertGenerationTokenizer (slow)"
    sp = sentencepiece.SentencePieceProcessor(model_file=str(d / "tokenizer.model"))
    for text in ("Hello world", "naïve café", "  two  spaces"):
        assert slow.backend.encode(text) == sp.encode(text)
    assert slow.backend.decode(sp.encode("Hello world")) == "Hello world"


def test_remote_code_is_never_trusted_by_default(tmp_path: Path) -> None:
    d = tmp_path / "remote"
    shutil.copytree(SAME, d)
    cfg = json.loads((d / "tokenizer_config.json").read_text())
    cfg["auto_map"] = {"AutoTokenizer": ["tokenization_compare.CompareTokenizer", None]}
    cfg["tokenizer_class"] = "CompareTokenizer"
    (d / "tokenizer_config.json").write_text(json.dumps(cfg))
    marker = tmp_path / "EXECUTED"
    with (d / "tokenization_compare.py").open("a") as fh:
        fh.write(f"\nimport pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n")
    before = tree_snapshot(d)
    lb = backends(d, ["transformers-fast"])["transformers-fast"]
    assert lb.backend is None
    assert lb.unavailable.startswith("needs the model's remote code; pass --trust-remote-code to run it (")
    # a named backend that cannot load is a row with its reason; what loads (tiktoken's own round trip) runs
    r = run_cli(
        "compare", str(d), "--backends", "tiktoken,transformers-fast", "--unicode-sweep", "off", "--format", "json"
    )
    row = next(b for b in json.loads(r.stdout)["backends"] if b["name"] == "transformers-fast")
    assert r.exit_code == 0 and not row["available"] and "pass --trust-remote-code" in row["reason"]
    assert not marker.exists()
    assert tree_snapshot(d) == before


def test_concurrent_loads_are_checked_in_threads_and_processes() -> None:
    code, doc = _json(
        "compare", str(SAME), "--backends", "tiktoken,transformers-fast", "--unicode-sweep", "off", "--concurrency", "2"
    )
    assert code == 0
    (race,) = doc["race"]["results"]
    assert (race["backend"], race["concurrency"], race["consistent"], race["classes"]) == (
        "transformers-fast",
        2,
        True,
        ["TokenizersBackend"],
    )
    assert [(load["mode"], load["class"], load["error"]) for load in race["loads"]] == [
        ("thread", "TokenizersBackend", None), ("thread", "TokenizersBackend", None),
        ("process", "TokenizersBackend", None), ("process", "TokenizersBackend", None),
    ]  # fmt: skip


def test_concurrency_without_a_transformers_backend_says_why() -> None:
    code, doc = _json("compare", str(SAME), "--backends", "tiktoken,hf", "--unicode-sweep", "off", "--concurrency", "2")
    assert code == 0
    assert doc["race"] == {
        "results": [],
        "note": "no transformers backend is loaded (is the transformers extra installed, and is it in --backends?)",
    }
