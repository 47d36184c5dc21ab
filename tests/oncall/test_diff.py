"""diff: identical with itself, incompatible with one rank changed (naming the id), compatible
for a suffix draft, special-token divergence, bad input."""

from __future__ import annotations

import json

from tests.conftest import FIXTURES, run_cli, tree_snapshot

TINY = FIXTURES / "tiny-tiktoken"
CHANGED = FIXTURES / "oncall" / "tiny-changed-rank"
DRAFT = FIXTURES / "oncall" / "tiny-draft"


def diff(a, b, *extra):
    r = run_cli("diff", a, b, "--format", "json", *extra)
    return r, json.loads(r.stdout)


def test_a_model_with_itself_is_identical():
    r, doc = diff(TINY, TINY)
    assert r.exit_code == 0
    assert doc["diff"]["classification"] == "identical"
    assert (doc["diff"]["same_bytes"], doc["diff"]["mismatched"], doc["findings"]) == (1005, 0, [])


def test_one_changed_rank_is_incompatible_and_names_the_id():
    before = tree_snapshot(CHANGED)
    r, doc = diff(CHANGED, TINY)
    assert r.exit_code == 1
    d = doc["diff"]
    assert (d["classification"], d["mismatched"], d["mismatched_ids"]) == ("incompatible", 1, [[500, 500]])
    assert d["examples"] == [
        {"id": 500, "draft": " zq", "target": " bu", "draft_hex": "207a71", "target_hex": "206275"}
    ]
    [f] = doc["findings"]
    assert (f["code"], f["name"], f["severity"], f["ids"], f["count"]) == (
        "TA701",
        "id-token-mismatch",
        "error",
        [[500, 500]],
        1,
    )
    assert "500:  zq ≠  bu" in f["message"]
    rich = run_cli("diff", CHANGED, TINY)
    assert rich.exit_code == 1
    assert "  verdict      INCOMPATIBLE" in rich.stdout.splitlines()
    assert " ERROR  TA701 id-token-mismatch" in rich.stdout.splitlines()
    assert tree_snapshot(CHANGED) == before


def test_suffix_draft_is_compatible_with_a_size_warning():
    r, doc = diff(DRAFT, TINY)
    assert r.exit_code == 0
    d = doc["diff"]
    assert (d["classification"], d["same_bytes"], d["target_only"], d["draft_only"]) == ("compatible", 905, 100, 0)
    [f] = doc["findings"]
    assert (f["code"], f["name"], f["severity"]) == ("TA702", "draft-size-mismatch", "warning")
    assert f["details"] == {"draft": 1008, "target": 1024, "draft_mapped": 905, "target_mapped": 1005}
    assert run_cli("diff", DRAFT, TINY, "--fail-on", "warning").exit_code == 1


def test_the_other_way_round_is_incompatible():
    r, doc = diff(TINY, DRAFT)
    assert r.exit_code == 1
    assert doc["diff"]["draft_only"] == 100 and doc["diff"]["mismatched_ids"] == [[900, 999]]


def test_special_tokens_that_differ():
    r, doc = diff(TINY, FIXTURES / "kimi-k2.5")
    assert r.exit_code == 1
    codes = [f["code"] for f in doc["findings"]]
    assert codes == ["TA701", "TA702", "TA703"]
    special = doc["findings"][2]
    assert special["ids"][:2] == [[1000, 1002], [1004, 1005]]
    assert special["details"]["examples"][0] == {
        "id": 1000,
        "draft": "[BOS]",
        "draft_special": True,
        "target": " tokenizer",
        "target_special": False,
    }


def test_missing_target_is_one_line_exit_2(tmp_path):
    r = run_cli("diff", TINY, tmp_path / "nope")
    assert r.exit_code == 2
    assert r.stdout == ""
    assert r.stderr.startswith(f"tokaudit: error: {tmp_path / 'nope'}") and r.stderr.count("\n") == 1
