"""The ``fastokens`` backend (Dynamo's hybrid: fastokens encodes, HF tokenizers decodes), Dynamo's row of
the loader table and TA306 gateway-fallback, on fixtures/spm-llama-like (fastokens loads it) and
fixtures/fastokens/refused-unigram (it refuses: made by fixtures/make_fastokens_fixtures.py), plus the
real Llama 2 / GPT-4o tokenizer.json files when the real suite has fetched them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

fastokens = pytest.importorskip("fastokens", reason="fastokens is not installed (pip install 'tokaudit[fastokens]')")

from tokenizers import Tokenizer  # noqa: E402 - after the importorskip: the file skips without fastokens

from tests.conftest import FIXTURES, run_cli  # noqa: E402 - after the importorskip: the file skips without fastokens
from tokaudit.backends.registry import load_backends, parse_backend_list  # noqa: E402 - after the importorskip: the file skips without fastokens
from tokaudit.model.load import load_model  # noqa: E402 - after the importorskip: the file skips without fastokens

LOADS = FIXTURES / "spm-llama-like"
REFUSED = FIXTURES / "fastokens" / "refused-unigram"
TEXTS = [
    "Hello world! Où est la bibliothèque? 日本語 1234 🙂",
    "   leading\n\n  spaces\t",
    "<s>[INST] hi [/INST] ok</s>",
    "",
]
REFUSAL = "pre-tokenizer error: unsupported pre-tokenizer type: Metaspace"


def own_refusal(path: Path) -> str:
    """fastokens' own words for a file it refuses (the oracle: the library itself)."""
    with pytest.raises(BaseException) as info:  # whatever fastokens raises is the answer
        fastokens.Tokenizer.from_file(str(path))
    return str(info.value)


def test_backend_encodes_with_fastokens_and_decodes_with_tokenizers() -> None:
    (lb,) = load_backends(load_model(str(LOADS)), ["fastokens"])
    assert lb.backend is not None, lb.unavailable
    assert (
        lb.detail == f"fastokens {lb.backend.version} encode, tokenizers decode, from tokenizer.json (Dynamo's hybrid)"
    )
    fast = fastokens.Tokenizer.from_file(str(LOADS / "tokenizer.json"))
    hf = Tokenizer.from_file(str(LOADS / "tokenizer.json"))
    for text in TEXTS:
        ids = lb.backend.encode(text)
        assert ids == list(fast.encode(text, add_special_tokens=False).ids)
        assert ids == hf.encode(text, add_special_tokens=False).ids
        assert lb.backend.decode(ids) == hf.decode(ids, skip_special_tokens=False)
    assert lb.backend.encode_batch(TEXTS) == [hf.encode(t, add_special_tokens=False).ids for t in TEXTS]


def test_compare_fastokens_against_hf_agrees() -> None:
    r = run_cli("compare", str(LOADS), "--backends", "hf,fastokens", "--format", "json", "--quiet")
    assert r.exit_code in (0, 1), r.stderr
    doc = json.loads(r.stdout)
    pair = next(p for p in doc["pairs"] if p["backends"] == ["hf", "fastokens"])
    assert pair["cases"] == doc["corpus"]["cases"] > 400
    assert (pair["encode_mismatch"], pair["decode_mismatch"], pair["cross_roundtrip_failure"]) == (0, 0, 0)
    assert not [f for f in doc["findings"] if f["code"] == "TA601"]


def test_refused_model_row_says_why_in_fastokens_words() -> None:
    assert own_refusal(REFUSED / "tokenizer.json") == REFUSAL
    r = run_cli("compare", str(REFUSED), "--backends", "hf,fastokens,strict", "--format", "json", "--quiet")
    assert r.exit_code in (0, 1), r.stderr
    rows = {b["name"]: b for b in json.loads(r.stdout)["backends"]}
    assert rows["fastokens"]["available"] is False
    assert rows["fastokens"]["reason"] == f"fastokens cannot load tokenizer.json: {REFUSAL} (Dynamo falls back to HF)"
    assert rows["hf"]["available"] is True


def test_default_backends_include_fastokens_only_with_tokenizer_json() -> None:
    names = [lb.name for lb in load_backends(load_model(str(LOADS)), parse_backend_list(None))]
    assert "fastokens" in names
    names = [lb.name for lb in load_backends(load_model(str(FIXTURES / "spm-unigram")), parse_backend_list(None))]
    assert "fastokens" not in names


def _dynamo_rule(doc: dict) -> str:
    target = doc["targets"][0] if doc.get("targets") else doc
    return next(row["rule"] for row in target["loaders"] if row["loader"] == "Dynamo")


def test_loader_table_dynamo_row_and_ta306_on_a_refused_model(tmp_path: Path) -> None:
    # a copy: the probe is cached per file version within one process
    target = tmp_path / "refused"
    target.mkdir()
    (target / "tokenizer.json").write_bytes((REFUSED / "tokenizer.json").read_bytes())
    quick = run_cli("scan", str(target), "--format", "json")
    doc = json.loads(quick.stdout)
    # the quick scan loads the file's configuration (vocabulary cut short) with fastokens: refused already
    assert _dynamo_rule(doc) == (
        "tokenizer.json; encoder by default: HF tokenizers; with --dyn-tokenizer-backend fastokens: "
        f"fastokens cannot load it ({REFUSAL}) → falls back to HF"
    )
    assert "TA306" not in {f["code"] for f in doc["findings"]}  # a deep rule
    deep = run_cli("scan", str(target), "--deep", "--format", "json")
    assert deep.exit_code in (0, 1), deep.stderr
    doc = json.loads(deep.stdout)
    assert _dynamo_rule(doc) == (
        "tokenizer.json; encoder by default: HF tokenizers; with --dyn-tokenizer-backend fastokens: "
        f"fastokens cannot load it ({REFUSAL}) → falls back to HF"
    )
    (finding,) = [f for f in doc["findings"] if f["code"] == "TA306"]
    assert (finding["name"], finding["severity"]) == ("gateway-fallback", "note")
    assert finding["location"] == {"file": "tokenizer.json"}
    assert finding["details"]["error"] == REFUSAL
    assert finding["details"]["falls_back_to"] == "HF tokenizers"
    assert finding["message"].startswith(
        "Dynamo with --dyn-tokenizer-backend fastokens (DYN_TOKENIZER_BACKEND=fastokens) "
        f"cannot use fastokens for this model: fastokens {fastokens_version()} refuses "
        f"tokenizer.json ({REFUSAL})."
    )


def fastokens_version() -> str:
    from importlib.metadata import version

    return version("fastokens")


def test_deep_scan_on_a_model_fastokens_loads(tmp_path: Path) -> None:
    # a copy: earlier tests loaded the fixture with fastokens, and one process keeps that answer
    target = tmp_path / "loads"
    target.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (target / name).write_bytes((LOADS / name).read_bytes())
    quick = json.loads(run_cli("scan", str(target), "--format", "json").stdout)
    assert _dynamo_rule(quick).endswith(
        "with --dyn-tokenizer-backend fastokens: fastokens accepts its configuration; "
        "the full file is loaded only by scan --deep or compare"
    )
    r = run_cli("scan", str(target), "--deep", "--format", "json")
    assert r.exit_code in (0, 1), r.stderr
    doc = json.loads(r.stdout)
    assert "TA306" not in {f["code"] for f in doc["findings"]}
    assert _dynamo_rule(doc).endswith(
        "with --dyn-tokenizer-backend fastokens: fastokens encodes, HF tokenizers decodes"
    )


# -- real tokenizer.json files (fetched by scripts/fetch_real_tokenizers.py) ----------------------


@pytest.mark.real
def test_real_mistral_7b_loads_and_agrees(real_dirs: dict[str, Path]) -> None:
    path = real_dirs["mistral-7b-json"] / "tokenizer.json"
    (lb,) = load_backends(load_model(str(path.parent)), ["fastokens"])
    assert lb.backend is not None, lb.unavailable
    hf = Tokenizer.from_file(str(path))
    for text in TEXTS + ["def add(a, b):\n    return a + b  # 1314151", "မြန်မာဘာသာ 👨‍👩‍👧 مرحبا"]:
        assert lb.backend.encode(text) == hf.encode(text, add_special_tokens=False).ids


@pytest.mark.real
def test_real_gpt4o_is_refused_with_fastokens_words(real_dirs: dict[str, Path]) -> None:
    path = real_dirs["gpt4o"] / "tokenizer.json"
    words = own_refusal(path)
    assert words == "model error: unsupported model type: Other"
    model = load_model(str(path.parent))
    (lb,) = load_backends(model, ["fastokens"])
    assert lb.unavailable == f"fastokens cannot load tokenizer.json: {words} (Dynamo falls back to HF)"
    # this refusal depends on the vocabulary itself: the quick scan's configuration probe cannot see it
    from tokaudit.model.fastokens_probe import config_refusal

    assert config_refusal(model.artifacts.tokenizer_json.raw) is None  # type: ignore[union-attr]


def test_compare_with_only_hf_and_a_refused_fastokens_is_a_report() -> None:
    """Issue 21 §4: "fastokens cannot load this model, Dynamo falls back to HF" is the answer, not exit 2: the row
    says why, TA306 is raised, hf's own round trip runs, and the exit code follows --fail-on."""
    r = run_cli("compare", str(REFUSED), "--backends", "hf,fastokens", "--format", "json", "--unicode-sweep", "off")
    doc = json.loads(r.stdout)
    rows = {b["name"]: b for b in doc["backends"]}
    assert (rows["hf"]["available"], rows["fastokens"]["available"]) == (True, False)
    (fallback,) = [f for f in doc["findings"] if f["code"] == "TA306"]
    assert (fallback["name"], fallback["severity"], fallback["location"]["file"]) == (
        "gateway-fallback",
        "note",
        "tokenizer.json",
    )
    assert fallback["message"].startswith(
        "Dynamo with --dyn-tokenizer-backend fastokens (DYN_TOKENIZER_BACKEND=fastokens) cannot "
        f"use fastokens for this model: fastokens {fallback['details']['version']} refuses "
        f"tokenizer.json ({REFUSAL})."
    )
    assert doc["pairs"] == [] and doc["corpus"]["cases"] > 0
    # the exit code is the policy's: hf's own round trip loses a space of "        " (Metaspace: TA603, an error);
    # the fallback alone is a note, below the default --fail-on error (the real GPT-4o test below exits 0)
    assert r.exit_code == 1 and {f["code"] for f in doc["findings"] if f["severity"] == "error"} == {"TA603"}


def test_compare_exits_2_only_when_nothing_named_loads(tmp_path: Path) -> None:
    r = run_cli("compare", str(REFUSED), "--backends", "fastokens,sentencepiece")
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr == (
        f"tokaudit: error: {REFUSED / 'tokenizer.json'}: compare needs a usable backend that encodes (fastokens: "
        f"fastokens cannot load tokenizer.json: {REFUSAL} (Dynamo falls back to HF); sentencepiece: "
        "needs a SentencePiece tokenizer.model)\n"
    )


def test_real_gpt4o_compare_hf_fastokens_reports_the_fallback(real_dirs: dict[str, Path]) -> None:
    r = run_cli(
        "compare", str(real_dirs["gpt4o"]), "--backends", "hf,fastokens", "--format", "json", "--unicode-sweep", "off"
    )
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [(f["code"], f["details"]["error"]) for f in doc["findings"] if f["code"] == "TA306"] == [
        ("TA306", "model error: unsupported model type: Other")
    ]
    assert [b["name"] for b in doc["backends"] if b["available"]] == ["hf"]
