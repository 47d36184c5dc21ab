"""``tokaudit compare`` on real files with the real libraries (fixtures/compare, made by
fixtures/make_compare_fixtures.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli, tree_snapshot

SAME = FIXTURES / "compare" / "same"
CHANGED = FIXTURES / "compare" / "changed-regex"
FAST = "tiktoken,hf,reference,strict"


def compare_json(*args: str) -> tuple[int, dict, str]:
    r = run_cli("compare", *args, "--format", "json", "--quiet")
    return r.exit_code, json.loads(r.stdout), r.stderr


def pair(doc: dict, a: str, b: str) -> dict:
    return next(p for p in doc["pairs"] if p["backends"] == [a, b])


# -- acceptance -----------------------------------------------------------------------------------


def test_same_ranks_and_pattern_agree_on_the_builtin_corpus() -> None:
    before = tree_snapshot(SAME)
    code, doc, stderr = compare_json(str(SAME), "--backends", FAST)
    assert code == 0, stderr
    assert stderr == ""
    assert doc["command"] == "compare"
    assert doc["corpus"]["cases"] == doc["corpus"]["builtin_cases"] == 478
    assert [p["backends"] for p in doc["pairs"]] == [
        ["tiktoken", "hf"], ["tiktoken", "reference"], ["hf", "reference"],
        ["tiktoken", "strict"], ["hf", "strict"], ["reference", "strict"],
    ]  # fmt: skip
    for p in doc["pairs"]:
        assert p["cases"] == 478
        assert p["decode_mismatch"] == 0
        if p["kind"] == "encode":
            assert (p["encode_mismatch"], p["roundtrip_failure"], p["cross_roundtrip_failure"]) == (0, 0, 0)
    # the only finding: hf drops unknown ids where the others raise (a warning, not a failure)
    assert [(f["code"], f["name"], f["severity"]) for f in doc["findings"]] == [
        ("TA604", "unknown-id-behaviour", "warning")
    ]
    assert tree_snapshot(SAME) == before


def test_one_changed_regex_alternative_is_an_encode_mismatch_with_a_readable_example() -> None:
    code, doc, _ = compare_json(str(CHANGED), "--backends", FAST)
    assert code == 1
    p = pair(doc, "tiktoken", "hf")
    assert (p["cases"], p["encode_mismatch"], p["encode_mismatch_benign"], p["encode_mismatch_real"]) == (478, 4, 4, 0)
    assert (p["decode_mismatch"], p["roundtrip_failure"]) == (0, 0)
    assert (
        pair(doc, "tiktoken", "reference")["encode_mismatch"] == 0
    )  # both read the pattern from tokenization_compare.py
    assert pair(doc, "hf", "reference")["encode_mismatch"] == 4
    first = p["examples"]["encode"][0]
    assert first["case"] == "builtin:scripts/mixed"
    assert first["class"] == "benign"
    assert first["text"] == "…pple工作1314151天～ Hello世界 abc中文def…"
    assert (first["a"]["tokens"], first["a"]["ids"]) == (["1", "3", "1", "4"], [49, 51, 49, 52])
    assert (first["b"]["tokens"], first["b"]["ids"]) == (["1", "3", "14"], [49, 51, 919])
    # one cause (hf's changed regex), one finding: tiktoken and reference agree on every case, so the two
    # pair differences are hf's
    mismatch = [f for f in doc["findings"] if f["code"] == "TA601"]
    assert [f["details"]["backends"] for f in mismatch] == [["hf", "tiktoken", "reference"]]
    assert (mismatch[0]["details"]["outlier"], mismatch[0]["details"]["agreeing"]) == ("hf", ["tiktoken", "reference"])
    assert [p["backends"] for p in mismatch[0]["details"]["pairs"]] == [["tiktoken", "hf"], ["hf", "reference"]]
    assert mismatch[0]["severity"] == "error"
    assert mismatch[0]["message"] == (
        "hf alone encodes 4 of 478 cases to other ids than tiktoken, reference (which agree with each other on every "
        "case), "
        "so the cause is in hf: 4 benign (same decoded text), 0 real (the decoded text differs). First, "
        "builtin:scripts/mixed "
        "at \"…pple工作1314151天～ Hello世界 abc中文def…\": hf '1' '3' '14' (ids 49, 51, 919) "
        "vs tiktoken '1' '3' '1' '4' "
        "(ids 49, 51, 49, 52)"
    )


def test_rich_output_shows_the_first_difference_side_by_side() -> None:
    r = run_cli("compare", str(CHANGED), "--backends", "tiktoken,hf", "--unicode-sweep", "off")
    assert r.exit_code == 1
    lines = r.stdout.splitlines()
    k = lines.index("  first encode difference, tiktoken × hf (benign): builtin:scripts/mixed")
    assert [line.rstrip() for line in lines[k + 1 : k + 6]] == [
        "    text      …pple工作1314151天～ Hello世界 abc中文def…",
        "    tiktoken  1   3   1   4",
        "              49  51  49  52",
        "    hf        1   3   14",
        "              49  51  919",
    ]
    assert " ERROR  TA601 encode-mismatch" in lines
    assert lines[-1] == "✗ FAIL: 1 error, 1 warning, 0 notes (1 at or above --fail-on error)"


# -- triage: a real divergence --------------------------------------------------------------------


@pytest.fixture
def drifted(tmp_path: Path) -> Path:
    """The same files, but tokenizer.json declares <|im_end|> at 1005: tokenizers ignores that id
    for content outside the vocabulary and hands out 1002, tiktoken (built from the declared ids) uses 1005."""
    d = tmp_path / "drifted"
    shutil.copytree(SAME, d)
    tj = json.loads((d / "tokenizer.json").read_text(encoding="utf-8"))
    for added in tj["added_tokens"]:
        if added["content"] == "<|im_end|>":
            added["id"] = 1005
    (d / "tokenizer.json").write_text(json.dumps(tj, ensure_ascii=False), encoding="utf-8")
    return d


def test_added_token_id_drift_is_benign_by_text_but_breaks_cross_decoding(drifted: Path) -> None:
    code, doc, _ = compare_json(str(drifted), "--backends", "tiktoken,hf", "--unicode-sweep", "off")
    assert code == 1
    p = pair(doc, "tiktoken", "hf")
    # every case holding <|im_end|>: 5 fixed (alone, in context, ...) plus the random added-token strips
    assert p["encode_mismatch"] == p["encode_mismatch_benign"] > 0
    assert p["encode_mismatch_real"] == 0
    assert p["decode_mismatch"] == p["encode_mismatch"]
    assert p["cross_roundtrip_failure"] == p["encode_mismatch"]
    first = p["examples"]["encode"][0]
    assert first["case"] == "builtin:special <|im_end|>"
    assert (first["a"]["ids"], first["b"]["ids"]) == ([1005], [1002])
    decode = p["examples"]["decode"][0]
    assert (decode["ids"], decode["tiktoken"], decode["hf"]) == ([1005], "<|im_end|>", "")  # hf drops 1005
    rt = p["examples"]["roundtrip"][0]
    assert (rt["encode"], rt["decode"], rt["input"], rt["output"]) == ("tiktoken", "hf", "<|im_end|>", "")
    names = [f["name"] for f in doc["findings"]]
    assert names == ["encode-mismatch", "decode-mismatch", "roundtrip-failure", "unknown-id-behaviour"]


def test_a_backend_that_raises_is_a_crash_pinned_to_its_input(drifted: Path) -> None:
    # hf encodes <|im_end|> to 1002, which the files (a files-only gateway: strict) do not map
    code, doc, _ = compare_json(str(drifted), "--backends", "hf,strict", "--unicode-sweep", "off")
    assert code == 1
    crash = next(f for f in doc["findings"] if f["code"] == "TA605")
    assert crash["name"] == "backend-crash"
    assert crash["details"]["backend"] == "strict"
    ex = crash["details"]["examples"][0]
    assert (ex["case"], ex["operation"], ex["input"], ex["error_type"]) == (
        "builtin:special <|im_end|>",
        "decode",
        "<|im_end|>",
        "UnknownId",
    )
    assert ex["error"] == "'no entry found for key 1002 (a files-only loader maps no token to it)'"
    strict = next(b for b in doc["backends"] if b["name"] == "strict")
    assert strict["crashes"] == crash["details"]["crashes"] > 0
    # the other cases were still compared
    assert pair(doc, "hf", "strict")["cases"] == doc["corpus"]["cases"] - strict["crashes"]


# -- unknown ids ----------------------------------------------------------------------------------


def test_unknown_id_table() -> None:
    code, doc, _ = compare_json(
        str(SAME), "--backends", FAST, "--no-builtin-corpus", "--corpus", str(SAME / "config.json")
    )
    assert code == 0
    table = doc["unknown_ids"]
    assert table["probes"] == [
        {"label": "gap", "id": 1003}, {"label": "last declared", "id": 1007}, {"label": "declared size", "id": 1008},
        {"label": "2**32", "id": 2**32}, {"label": "negative", "id": -1},
    ]  # fmt: skip
    kinds = {name: [a["kind"] for a in answers] for name, answers in table["backends"].items()}
    assert kinds == {
        "tiktoken": ["error"] * 5,
        "hf": ["dropped", "dropped", "dropped", "error", "error"],
        "reference": ["error"] * 5,
        "strict": ["error"] * 5,
    }
    assert table["backends"]["tiktoken"][0]["value"] == "KeyError: 'Invalid token for decoding: 1003'"
    assert table["backends"]["hf"][4]["value"].startswith("OverflowError: ")
    assert table["differing"] == ["gap", "last declared", "declared size"]
    finding = doc["findings"][0]
    assert (finding["code"], finding["ids"], finding["count"]) == ("TA604", [[1003, 1003], [1007, 1008]], 3)


# -- corpora --------------------------------------------------------------------------------------


def test_user_corpus_a_case_per_line(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("hello world\n\n2024-01-15 <|im_end|>\r\n中文 text\n", encoding="utf-8")
    code, doc, _ = compare_json(
        str(CHANGED), "--backends", "tiktoken,hf", "--no-builtin-corpus", "--corpus", str(corpus)
    )
    assert code == 1
    assert doc["corpus"] == {"cases": 3, "bytes": 11 + 21 + 11, "builtin_cases": 0, "user_cases": 3}
    p = pair(doc, "tiktoken", "hf")
    assert (p["cases"], p["encode_mismatch"]) == (3, 1)
    assert p["examples"]["encode"][0]["case"] == f"{corpus}:3"


def test_whole_file_sample_and_seed(tmp_path: Path) -> None:
    d = tmp_path / "corpus"
    d.mkdir()
    for k in range(5):
        (d / f"{k}.txt").write_text(f"line {k}\nsecond {k}\n", encoding="utf-8")
    code, doc, _ = compare_json(
        str(SAME), "--backends", "tiktoken,hf", "--no-builtin-corpus", "--corpus", str(d), "--whole-file"
    )
    assert (code, doc["corpus"]["cases"]) == (0, 5)
    code, doc, _ = compare_json(
        str(SAME),
        "--backends",
        "tiktoken,hf",
        "--no-builtin-corpus",
        "--corpus",
        str(d),
        "--sample",
        "3",
        "--seed",
        "7",
    )
    assert (code, doc["corpus"]["cases"]) == (0, 3)
    again = compare_json(
        str(SAME),
        "--backends",
        "tiktoken,hf",
        "--no-builtin-corpus",
        "--corpus",
        str(d),
        "--sample",
        "3",
        "--seed",
        "7",
    )[1]
    assert again["corpus"] == doc["corpus"]


def test_corpus_directory_walk_leaves_out_hidden_names_and_does_not_follow_directory_links(tmp_path: Path) -> None:
    d = tmp_path / "corpus"
    (d / "sub").mkdir(parents=True)
    (d / ".git" / "objects").mkdir(parents=True)
    (d / "a.txt").write_text("alpha\n", encoding="utf-8")
    (d / "sub" / "b.txt").write_text("beta\n", encoding="utf-8")
    (d / ".hidden.txt").write_text("hidden\n", encoding="utf-8")
    (d / ".git" / "objects" / "c.txt").write_text("in .git\n", encoding="utf-8")
    (d / "loop").symlink_to(d, target_is_directory=True)  # a link back to the corpus: never walked
    (d / "link.txt").symlink_to(d / "a.txt")  # a link to a file is a file
    code, doc, _ = compare_json(str(SAME), "--backends", "tiktoken,hf", "--no-builtin-corpus", "--corpus", str(d))
    assert (code, doc["corpus"]["cases"], doc["corpus"]["bytes"]) == (0, 3, len("alpha") * 2 + len("beta"))


def test_corpus_directory_over_the_entry_budget_is_one_line_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A corpus given as a huge tree (``~`` by mistake) is refused after MAX_CORPUS_ENTRIES names, not walked
    whole; the budget is lowered here so that the test makes 31 files, not 100,001."""
    from tokaudit.compare import corpus

    monkeypatch.setattr(corpus, "MAX_CORPUS_ENTRIES", 30)
    d = tmp_path / "corpus"
    (d / "deep").mkdir(parents=True)
    for k in range(30):
        (d / "deep" / f"{k}.txt").write_text("x\n", encoding="utf-8")
    r = run_cli("compare", str(SAME), "--backends", "tiktoken,hf", "--no-builtin-corpus", "--corpus", str(d))
    assert r.exit_code == 2
    assert r.stderr == (
        f"tokaudit: error: {d}: the corpus directory holds more than 30 files and directories; "
        "give a smaller one (or a file)\n"
    )


def test_builtin_corpus_is_seeded() -> None:
    from tokaudit.compare.corpus import builtin_corpus

    a = builtin_corpus(["<|x|>"], seed=1, sweep="off")
    assert a == builtin_corpus(["<|x|>"], seed=1, sweep="off")
    assert a != builtin_corpus(["<|x|>"], seed=2, sweep="off")
    assert {c.text for c in a if c.source.startswith("builtin:special <|x|>")} >= {
        "<|x|>",
        "Hello<|x|>world <|x|> <|x|><|x|>\n<|x|>\n",
    }


def test_unicode_sweep_covers_every_scalar_value_when_full() -> None:
    from tokaudit.compare.corpus import sweep_points

    full = list(sweep_points(full=True))
    assert len(full) == 0x110000 - 0x800 == 1_112_064
    planes = list(sweep_points())
    assert set(range(0x30000)) - set(range(0xD800, 0xE000)) <= set(planes)
    assert {0x40000, 0x401FF, 0x4FFFF, 0x10FFFF} <= set(planes)
    assert 0x40200 not in planes and len(planes) < 400_000


# -- bad input ------------------------------------------------------------------------------------


def test_corpus_that_is_not_utf8_is_one_line_exit_2(tmp_path: Path) -> None:
    corpus = tmp_path / "bad.txt"
    corpus.write_bytes(b"fine\nstill fine\nbad \xff byte\n")
    r = run_cli("compare", str(SAME), "--corpus", str(corpus), "--backends", "tiktoken,hf")
    assert r.exit_code == 2
    assert r.stderr == f"tokaudit: error: {corpus}:3: corpus is not UTF-8 (byte 0xFF at offset 20)\n"
    assert r.stdout == ""


@pytest.mark.parametrize(
    ("args", "stderr"),
    [
        (
            ["--corpus", "/nonexistent/corpus.txt"],
            "tokaudit: error: /nonexistent/corpus.txt: no such corpus file or directory\n",
        ),
        (
            ["--backends", "tiktoken,bogus"],
            "tokaudit: error: key --backends: unknown backend 'bogus' (choose from tiktoken, hf, sentencepiece, "
            "fastokens, "
            "reference, strict, transformers-fast, transformers-slow, llama.cpp, transformers-gguf)\n",
        ),
        (
            ["--backends", "tiktoken"],
            "tokaudit: error: key --backends: compare needs two usable backends, one of which encodes (fewer than two "
            "were asked for)\n",
        ),
        (
            ["--backends", "strict,tiktoken", "--no-builtin-corpus"],
            "tokaudit: error: key --no-builtin-corpus: nothing to compare: the corpus is empty\n",
        ),
    ],
)
def test_bad_options_are_one_line_exit_2(args: list[str], stderr: str) -> None:
    r = run_cli("compare", str(SAME), *args)
    assert (r.exit_code, r.stderr, r.stdout) == (2, stderr, "")


def test_no_pattern_says_pattern_unknown_instead_of_guessing(tmp_path: Path) -> None:
    d = tmp_path / "ranks-only"
    d.mkdir()
    shutil.copy(SAME / "tiktoken.model", d / "tiktoken.model")
    r = run_cli("compare", str(d), "--backends", "tiktoken,reference")
    assert r.exit_code == 2
    reason = "no pre-tokenizer pattern found (pattern-unknown); pass --pat-str"
    assert r.stderr == (
        f"tokaudit: error: {d / 'tiktoken.model'}: compare needs a usable backend that encodes "
        f"(tiktoken: {reason}; reference: {reason})\n"
    )
    # with the pattern given, the same directory compares
    pat = (SAME / "tokenizer.json").read_text(encoding="utf-8")
    pattern = json.loads(pat)["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"]
    code, doc, _ = compare_json(
        str(d), "--backends", "tiktoken,hf,reference", "--pat-str", pattern, "--unicode-sweep", "off"
    )
    assert code == 0
    assert next(b for b in doc["backends"] if b["name"] == "hf")["detail"] == "rebuilt from tiktoken.model ranks"
    assert all(p["encode_mismatch"] == 0 for p in doc["pairs"])
