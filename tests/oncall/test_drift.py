"""``diff A B --corpus FILE``: token counts under two tokenizers, TA704 token-count-drift, the counts baseline."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from tests.conftest import FIXTURES, run_cli

BASE = FIXTURES / "rules" / "stop-suppressed"  # byte-level BPE with the merges of "hello"
CORPUS = "hello hello\nsay hello\n\nhi\n"


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(old, new, corpus): ``new`` is ``old`` without its merges, so "hello" takes 5 tokens instead of 1."""
    old, new = tmp_path / "old", tmp_path / "new"
    for d in (old, new):
        d.mkdir()
        for name in ("tokenizer.json", "tokenizer_config.json", "config.json"):
            shutil.copyfile(BASE / name, d / name)
    tj = json.loads((new / "tokenizer.json").read_text(encoding="utf-8"))
    tj["model"]["merges"] = []
    (new / "tokenizer.json").write_text(json.dumps(tj), encoding="utf-8")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS, encoding="utf-8")
    return old, new, corpus


def _lengths(model: Path) -> list[int]:
    tok = Tokenizer.from_file(str(model / "tokenizer.json"))
    return [len(tok.encode(line).ids) for line in CORPUS.splitlines() if line]


def test_counts_per_text_and_total_and_the_drift(pair) -> None:
    old, new, corpus = pair
    result = run_cli("diff", old, new, "--corpus", corpus, "--format", "json")
    assert result.exit_code == 0  # TA704 is a warning
    doc = json.loads(result.stdout)
    counts = doc["targets"][0]["counts"]
    assert [r["a"] for r in counts["texts"]] == _lengths(old) == [3, 5, 2]
    assert [r["b"] for r in counts["texts"]] == _lengths(new) == [11, 9, 2]
    assert [r["name"] for r in counts["texts"]] == [f"{corpus}:1", f"{corpus}:2", f"{corpus}:4"]
    assert (counts["a"]["total"], counts["b"]["total"], counts["delta"], counts["growth_percent"]) == (
        10,
        22,
        12,
        120.0,
    )
    assert (counts["a"]["backend"], counts["changed"]) == ("hf", 2)
    (f,) = [f for f in doc["findings"] if f["code"] == "TA704"]
    assert (f["name"], f["severity"], f["location"]) == ("token-count-drift", "warning", {"file": str(corpus)})
    assert f["message"] == (
        f"the corpus (3 texts) encodes to 10 tokens under {old} (hf) and 22 under {new} (hf): +120.00 %, over "
        "--max-growth 2 %. "
        f"Prompts cost more, fit less context and hit max_tokens sooner. Grew most: {corpus}:1 3 -> 11; {corpus}:2 5 "
        "-> 9."
    )
    assert run_cli("diff", old, new, "--corpus", corpus, "--fail-on", "warning").exit_code == 1


def test_growth_within_the_limit_or_shrinking_is_quiet(pair) -> None:
    old, new, corpus = pair
    within = json.loads(run_cli("diff", old, new, "--corpus", corpus, "--max-growth", "120", "--format", "json").stdout)
    assert [f["code"] for f in within["findings"] if f["code"] == "TA704"] == []
    shrinking = json.loads(run_cli("diff", new, old, "--corpus", corpus, "--format", "json").stdout)
    assert shrinking["targets"][0]["counts"]["growth_percent"] == -54.5455
    assert [f["code"] for f in shrinking["findings"] if f["code"] == "TA704"] == []


def test_a_committed_counts_baseline_gates_a_new_tokenizer(pair, tmp_path: Path) -> None:
    old, new, corpus = pair
    baseline = tmp_path / "counts.json"
    written = run_cli("diff", old, "--corpus", corpus, "--write-counts", baseline, "--format", "json")
    assert written.exit_code == 0, written.stderr
    doc = json.loads(baseline.read_text(encoding="utf-8"))
    assert {k: doc[k] for k in ("tokaudit_counts", "target", "backend", "corpus", "total")} == {
        "tokaudit_counts": 1,
        "target": str(old),
        "backend": "hf",
        "corpus": str(corpus),
        "total": 10,
    }
    assert doc["texts"] == [
        {"name": f"{corpus}:1", "tokens": 3},
        {"name": f"{corpus}:2", "tokens": 5},
        {"name": f"{corpus}:4", "tokens": 2},
    ]
    same = json.loads(
        run_cli("diff", old, "--corpus", corpus, "--counts-baseline", baseline, "--format", "json").stdout
    )
    assert (same["targets"][0]["counts"]["growth_percent"], same["findings"]) == (0.0, [])
    gated = run_cli(
        "diff", new, "--corpus", corpus, "--counts-baseline", baseline, "--fail-on", "warning", "--format", "json"
    )
    assert gated.exit_code == 1
    (f,) = json.loads(gated.stdout)["findings"]
    assert f["code"] == "TA704" and f"encodes to 10 tokens under {old} (hf) and 22 under {new} (hf)" in f["message"]


def test_counts_options_misused_are_one_error_line(pair, tmp_path: Path) -> None:
    old, new, corpus = pair
    baseline = tmp_path / "counts.json"
    run_cli("diff", old, "--corpus", corpus, "--write-counts", baseline)
    cases = [
        (("diff", old, "--counts-baseline", baseline), "tokaudit: error: key --counts-baseline: needs --corpus FILE"),
        (
            ("diff", old, new, "--corpus", corpus, "--counts-baseline", baseline),
            "tokaudit: error: key --counts-baseline: give TARGET_B or --counts-baseline, not both",
        ),
        (
            ("diff", old),
            "tokaudit: error: key TARGET_B: missing TARGET_B (or --counts-baseline / --write-counts with --corpus)",
        ),
    ]
    for args, line in cases:
        result = run_cli(*args)
        assert (result.exit_code, result.stderr.strip()) == (2, line)
    other = tmp_path / "other.txt"
    other.write_text("something else\n", encoding="utf-8")
    result = run_cli("diff", old, "--corpus", other, "--counts-baseline", baseline)
    assert result.exit_code == 2
    assert result.stderr.strip().startswith(
        f"tokaudit: error: {baseline} (key corpus_sha256): the counts were written for another corpus (3 texts, sha256 "
    )
    assert result.stderr.strip().endswith("rewrite them with --write-counts")
    result = run_cli("diff", old, "--corpus", corpus, "--counts-baseline", BASE / "config.json")
    assert (result.exit_code, result.stderr.strip()) == (
        2,
        f"tokaudit: error: {BASE / 'config.json'} (key tokaudit_counts): not a "
        'tokaudit counts file (expected "tokaudit_counts": 1; write one with --write-counts)',
    )
