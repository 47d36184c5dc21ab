"""fuzz: the Kimi gap crash found in strict/tiktoken with a one-id reproducer, determinism,
classification, shrinking, and the command's exit codes."""

from __future__ import annotations

import json


from tests.conftest import FIXTURES, run_cli, tree_snapshot
from tokaudit.backends.registry import load_backends
from tokaudit.oncall.fuzz import FuzzOptions, fuzz, sequences
from tokaudit.oncall.shrink import Shrinker
from tokaudit.model.load import load_model

KIMI = FIXTURES / "kimi-k2.5"
TINY = FIXTURES / "tiny-tiktoken"


def test_kimi_gap_crash_in_strict_and_tiktoken_with_one_id_reproducers(kimi):
    model, backends = kimi
    result, findings = fuzz(model, backends, FuzzOptions(iterations=400, seed=7))
    gaps = model.files.mapped.complement(model.checked_size)
    assert gaps.count == 233
    rows = {row["name"]: row for row in result.to_json()["backends"]}
    for name, cls in (("tiktoken", "KeyError"), ("strict", "UnknownId")):
        inside = [r for r in rows[name]["reproducers"] if r["in_declared_range"]]
        assert inside, name
        assert all(len(r["ids"]) == 1 and r["ids"][0] in gaps and r["class"] == cls for r in inside)
        assert rows[name]["by_class"][cls]["in_declared_range"] > 0
        assert rows[name]["calls"] == 400 and rows[name]["calls_per_second"] > 0
    errors = [f for f in findings if f.severity.value == "error"]
    assert sorted(f.details["backend"] for f in errors) == ["strict", "tiktoken"]
    for f in errors:
        assert (f.code, f.name) == ("TA605", "backend-crash")
        assert all(i in gaps for i in f.ids)
        assert f.details["first_reproducer"]["ids"][0] in gaps


def test_same_seed_same_sequences_and_edges_are_hit(kimi):
    model, _ = kimi
    a, pools = sequences(model, FuzzOptions(iterations=200, seed=3))
    b, _ = sequences(model, FuzzOptions(iterations=200, seed=3))
    c, _ = sequences(model, FuzzOptions(iterations=200, seed=4))
    assert a == b and a != c
    assert pools["declared-end"] == [163838, 163839]
    assert pools["gap"][:4] == [163589, 163592, 163600, 163608]
    assert pools["negative"] == [-1, -2, -(2**31), -(2**63)] and 2**32 in pools["huge"]
    assert all(not (0 <= i < 163840) for i in pools["out-of-range"])
    flat = {i for seq in a for i in seq}
    assert flat & set(pools["gap"]) and flat & set(pools["huge"]) and flat & set(pools["partial-utf8"])


def test_shrinks_to_a_one_id_reproducer_with_a_real_backend():
    model = load_model(str(TINY))
    [strict] = load_backends(model, ["strict"])
    ids, outcome = Shrinker(strict.backend.decode).shrink([5, 300, 1003, 7, 1006], "UnknownId")
    assert ids == [1003] and outcome.error_type == "UnknownId"


def test_shrinks_to_a_minimal_pair_when_no_single_id_fails():
    def decode(ids: list[int]) -> str:
        if 3 in ids and 5 in ids:
            raise ValueError("3 with 5")
        return ""

    shrinker = Shrinker(decode)
    assert shrinker.shrink([1, 3, 2, 5, 4], "ValueError")[0] == [3, 5]


def test_cli_on_tiny_json_exit_1_and_hf_fails_only_outside_the_range():
    before = tree_snapshot(TINY)
    r = run_cli("fuzz", TINY, "--backends", "tiktoken,hf", "--iterations", "300", "--seed", "1", "--format", "json")
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    rows = {row["name"]: row for row in doc["backends"]}
    assert set(rows["hf"]["by_class"]) == {"OverflowError"}
    assert rows["hf"]["by_class"]["OverflowError"]["in_declared_range"] == 0
    assert rows["hf"]["rate"] == round(rows["hf"]["failures"] / 300, 6)
    crash = [(f["code"], f["severity"], f["details"]["backend"]) for f in doc["findings"]]
    assert ("TA605", "error", "tiktoken") in crash and ("TA605", "note", "hf") in crash
    assert ("TA605", "error", "hf") not in crash
    assert doc["fuzz"]["edges"]["gap"]["examples"][:2] == [1003, 1006]
    assert tree_snapshot(TINY) == before
    again = run_cli("fuzz", TINY, "--backends", "tiktoken,hf", "--iterations", "300", "--seed", "1", "--format", "json")
    assert [row["by_class"] for row in json.loads(again.stdout)["backends"]] == [
        row["by_class"] for row in doc["backends"]
    ]


def test_clean_model_passes_with_fail_on_error():
    r = run_cli("fuzz", FIXTURES / "clean-bpe", "--backends", "hf", "-n", "200")
    assert r.exit_code == 0
    assert r.stdout.splitlines()[-1].startswith("✓ PASS: 0 errors, 0 warnings, 1 note")
    assert any(line.split()[:2] == ["hf", "200"] for line in r.stdout.splitlines())


def test_bad_iterations_is_a_usage_error():
    r = run_cli("fuzz", TINY, "--iterations", "0")
    assert r.exit_code == 2
