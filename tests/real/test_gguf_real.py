"""llama.cpp's 19 vocab GGUFs (llama-cpp-python 0.3.36's sdist, in the real cache): tokaudit's GGUF reader
against the ``gguf`` package's, and the port of llama.cpp's load logic and ``llama_detokenize`` against
llama-cpp-python itself (special ids, the EOG set, add_bos/add_eos, every token's attributes, decoded text)."""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

import pytest

from realkit import fetch_module, gguf_keys
from test_llamacpp_real import GOLDEN_CASES, VOCAB_NAMES

pytestmark = pytest.mark.real

NEEDS_LLAMACPP = pytest.mark.skipif(
    find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed (pip install 'tokaudit[llamacpp]')"
)
NEEDS_GGUF = pytest.mark.skipif(
    find_spec("gguf") is None, reason="the gguf package is not installed (pip install 'tokaudit[test]')"
)
#: The token attribute bits the port computes (llama.h: UNDEFINED .. BYTE); llama.cpp adds LSTRIP/RSTRIP/... by
#: model name.
ATTR_MASK = 0x3F


#: The gguf package's reader takes seconds per MB (about 7 s on Llama 3's 7.8 MB): it checks the files under 2.5 MB,
#: these 11 (held to the sizes by test_the_19_vocab_files_and_the_ones_the_gguf_package_reads).
GGUF_PACKAGE_MAX_BYTES = 2_500_000
GGUF_PACKAGE_FILES = (
    "baichuan",
    "bert-bge",
    "deepseek-coder",
    "falcon",
    "gpt-2",
    "gpt-neox",
    "llama-spm",
    "mpt",
    "phi-3",
    "refact",
    "starcoder",
)
#: llama.cpp's EOG sets, checked id by id by the load port's test: Llama 3 stops on <|end_of_text|> and <|eot_id|>,
#: Qwen2 and Phi-3 on three ids.
EOG_SIZES = {"llama-bpe": 2, "qwen2": 3, "phi-3": 3}


def test_the_19_vocab_files_and_the_ones_the_gguf_package_reads(vocab_files: dict[str, Path]) -> None:
    """The per-file tests below are parametrized at collection (one test per file spreads over the xdist workers):
    their lists are the files there are."""
    assert sorted(vocab_files) == VOCAB_NAMES and len(VOCAB_NAMES) == 19
    assert sorted(n for n, p in vocab_files.items() if p.stat().st_size < GGUF_PACKAGE_MAX_BYTES) == list(
        GGUF_PACKAGE_FILES
    )
    assert set(EOG_SIZES) <= set(VOCAB_NAMES)


@pytest.mark.parametrize("name", VOCAB_NAMES)
def test_reader_equals_a_plain_reader_on_every_vocab_file(vocab_files: dict[str, Path], name: str) -> None:
    """Tokens (as bytes), types and merges of each of the 19, against the test's own struct reader
    (realkit.gguf_keys)."""
    from tokaudit.artifacts.gguf import read_gguf_tokenizer

    path = vocab_files[name]
    ours, keys = read_gguf_tokenizer(path), gguf_keys(path)
    assert list(ours.tokens) == keys["tokenizer.ggml.tokens"], name
    assert list(ours.merges or ()) == keys.get("tokenizer.ggml.merges", []), name
    assert list(ours.types or ()) == keys.get("tokenizer.ggml.token_type", []), name
    assert ours.pre == (keys["tokenizer.ggml.pre"].decode() if "tokenizer.ggml.pre" in keys else None), name


@NEEDS_GGUF
@pytest.mark.parametrize("name", GGUF_PACKAGE_FILES)
def test_reader_equals_the_gguf_package(vocab_files: dict[str, Path], name: str) -> None:
    import gguf

    from tokaudit.artifacts.gguf import read_gguf_tokenizer

    path = vocab_files[name]
    ours = read_gguf_tokenizer(path)
    reader = gguf.GGUFReader(str(path))
    field = reader.fields["tokenizer.ggml.tokens"]
    assert list(ours.tokens) == [bytes(field.parts[i]) for i in field.data], name
    if "tokenizer.ggml.merges" in reader.fields:
        merges = reader.fields["tokenizer.ggml.merges"]
        assert list(ours.merges or ()) == [bytes(merges.parts[i]) for i in merges.data], name
    types = reader.fields["tokenizer.ggml.token_type"]
    assert list(ours.types or ()) == [int(types.parts[i][0]) for i in types.data], name


@NEEDS_LLAMACPP
@pytest.mark.parametrize("name", VOCAB_NAMES)
def test_load_port_equals_llamacpp_on_every_vocab_file(vocab_files: dict[str, Path], name: str) -> None:
    """Special ids, EOG membership of every id, add_bos/add_eos and every token's attributes."""
    from tokaudit.artifacts.gguf import read_gguf_tokenizer
    from tokaudit.backends.llamacpp_backend import LlamaCppBackend
    from tokaudit.model.llamacpp_load import llamacpp_load, piece_rules

    path = vocab_files[name]
    g = read_gguf_tokenizer(path)
    load = llamacpp_load(g)
    real = LlamaCppBackend.load(path)
    ours = {k: load.id_of(k) for k in ("bos", "eos", "eot", "sep", "pad")}
    assert {k: (v if v is not None else -1) for k, v in ours.items()} == {
        k: v for k, v in real.special_ids().items() if k != "nl"
    }, name
    assert (load.flags["add_bos"], load.flags["add_eos"]) == (real.add_bos, real.add_eos), name
    every = list(range(real.n_vocab))  # asked of llama.cpp in batches: a worker round trip per id took minutes
    assert sorted(load.eog) == real.eog_ids(every), name
    rules = piece_rules(g, load)
    wrong = [i for i, attr in zip(every, real.attrs(every)) if rules.attr(i) & ATTR_MASK != attr & ATTR_MASK]
    assert wrong == [], (name, wrong[:5])
    if name in EOG_SIZES:
        assert len(load.eog) == EOG_SIZES[name]


def test_the_vocab_files_with_golden_ids_are_the_ones_checked(vocab_files: dict[str, Path]) -> None:
    """The detokenize port's test is parametrized at collection: its list is the files that ship .inp (15)."""
    assert sorted(n for n, p in vocab_files.items() if p.with_name(p.name + ".inp").is_file()) == sorted(GOLDEN_CASES)
    assert sum(GOLDEN_CASES.values()) == 694


@NEEDS_LLAMACPP
@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_detokenize_port_equals_llamacpp_on_the_golden_ids(vocab_files: dict[str, Path], name: str) -> None:
    """The strict backend decodes a GGUF alone as ``llama_detokenize`` does, specials kept or skipped."""
    from tokaudit.backends.llamacpp_backend import LlamaCppBackend
    from tokaudit.backends.strict import StrictBackend
    from tokaudit.compare.golden import read_golden
    from tokaudit.model.load import load_model

    path = vocab_files[name]
    real, strict = LlamaCppBackend.load(path), StrictBackend(load_model(str(path)))
    cases = read_golden(path.with_name(path.name + ".inp")).cases
    for case in cases:
        for skip in (False, True):
            assert strict.decode(list(case.ids), skip) == real.decode(list(case.ids), skip), (name, case.where, skip)
    assert len(cases) == GOLDEN_CASES[name]


@pytest.mark.parametrize(
    ("hf_dir", "vocab", "findings"),
    [
        # llama.cpp's llama-bpe family forces add_bos; the @lenml Llama 3 tokenizer.json's post-processor is a bare
        # ByteLevel (it adds no <|begin_of_text|>, unlike Meta's TemplateProcessing): a true difference of these files
        ("llama3", "llama-bpe", [("TA703", "warning", [[128000, 128000]])]),
        # every id, type, merge (50,000), the pre-tokenizer: faithful
        ("gpt2-json", "gpt-2", []),
    ],
)
def test_diff_hf_and_gguf_of_the_same_model(
    hf_dir: str, vocab: str, findings: list, vocab_files: dict[str, Path]
) -> None:
    import json

    from conftest import run_cli

    hf = fetch_module().default_cache() / "models" / hf_dir
    result = run_cli("diff", str(hf), str(vocab_files[vocab]), "--format", "json")
    doc = json.loads(result.stdout)
    assert [(f["code"], f["severity"], f["ids"]) for f in doc["findings"]] == findings
    d = doc["diff"]
    assert (
        d["mismatched"],
        d["gguf_only"],
        d["type_flag_mismatches"],
        d["merges"]["first_difference"],
        d["pre"]["matches"],
    ) == (0, 0, 0, None, True)
    assert result.exit_code == 0
    if findings:
        assert d["specials"] == [
            {"subject": "add_bos", "id": 128000, "hf": False, "gguf": True, "gguf_origin": "pre-tokenizer llama-bpe"}
        ]


@NEEDS_LLAMACPP
@pytest.mark.parametrize("name", VOCAB_NAMES)
def test_replay_a_gguf_alone_streams_as_llamacpp(vocab_files: dict[str, Path], tmp_path: Path, name: str) -> None:
    """replay on a bare .gguf: a stream that llama-cpp-python encodes is replayed to the text llama.cpp's own
    pieces make (``llama_token_to_piece`` per id, specials skipped, as the server streams it), no error."""
    import json

    from conftest import run_cli
    from realkit import STREAM_TEXT
    from tokaudit.backends.llamacpp_backend import LlamaCppBackend

    path = vocab_files[name]
    real = LlamaCppBackend.load(path)
    ids = real.encode(STREAM_TEXT)
    stream = tmp_path / f"{name}.json"
    stream.write_text(json.dumps({"ids": ids}), encoding="utf-8")
    result = run_cli("replay", str(path), str(stream), "--format", "json")
    assert result.exit_code == 0, (name, result.stderr)
    doc = json.loads(result.stdout)
    assert doc["text"] == b"".join(real.piece(i, False) for i in ids).decode("utf-8", "replace"), name
    assert "llama.cpp-server" in {r["name"] for r in doc["detokenizers"]}, name
    assert [f["code"] for f in doc["findings"] if f["severity"] == "error"] == [], name
