"""--select/--ignore, [tool.tokaudit] in pyproject.toml, --baseline, unused suppressions, --jobs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tokaudit import __version__
from tests.conftest import FIXTURES, run_cli
from tokaudit.report.baseline import fingerprint_json

TINY = FIXTURES / "tiny-tiktoken"
CLEAN = FIXTURES / "clean-bpe"
SPECIAL = FIXTURES / "rules" / "special-tokens"


def scan(*args: object) -> tuple[int, dict, str]:
    result = run_cli("scan", *args, "--format", "json")
    doc = json.loads(result.stdout) if result.stdout else {}
    return result.exit_code, doc, result.stderr


def codes(doc: dict) -> list[str]:
    return [f["code"] for f in doc["findings"]]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A project directory with a pyproject.toml; the test runs from a subdirectory of it."""

    def write(text: str) -> Path:
        (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
        return tmp_path / "pyproject.toml"

    sub = tmp_path / "ci" / "jobs"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    return write


# ---- selection ---------------------------------------------------------------------------------


def test_select_by_prefix_name_and_code() -> None:
    _, doc, _ = scan(TINY, "--select", "TA2")
    assert codes(doc) == ["TA202"] and [r["code"] for r in doc["rules"]] == [
        "TA201",
        "TA202",
        "TA203",
        "TA204",
        "TA205",
        "TA206",
        "TA207",
        "TA208",
        "TA209",
        "TA220",
    ]
    _, doc, _ = scan(TINY, "--select", "id-", "--select", "TA101")
    assert [r["code"] for r in doc["rules"]] == ["TA101", "TA102", "TA103"] and codes(doc) == ["TA101", "TA103"]


def test_ignore_by_name_and_prefix_changes_the_exit_code() -> None:
    code, doc, _ = scan(TINY, "--ignore", "vocab-gap,TA3")
    assert code == 0 and codes(doc) == [
        "TA103",
        "TA105",
        "TA202",
        "TA401",
        "TA810",
        "TA810",
    ]  # TA810: typed parts, a warning


def test_deep_rule_runs_when_selected_by_exact_code() -> None:
    _, doc, _ = scan(TINY, "--select", "TA402")
    assert codes(doc) == ["TA402"]
    _, doc, _ = scan(TINY, "--select", "TA4")
    assert codes(doc) == ["TA401"]  # a prefix does not switch on --deep rules


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ("--select", "vocab-gaps"),
            "tokaudit: error: key --select: unknown rule 'vocab-gaps' (did you mean vocab-gap?)\n",
        ),
        (("--ignore", "XX1"), "tokaudit: error: key --ignore: unknown rule 'XX1'\n"),
        (("--select", "TA101", "--ignore", "TA1"), "tokaudit: error: key --select/--ignore: no rule is selected\n"),
    ],
)
def test_bad_selectors_are_one_line_exit_2(args: tuple[str, ...], line: str) -> None:
    code, _, err = scan(TINY, *args)
    assert code == 2 and err == line


# ---- [tool.tokaudit] ---------------------------------------------------------------------------


def test_config_is_found_by_walking_up_and_applies_defaults_and_reasons(project) -> None:
    path = project(
        '[tool.tokaudit]\nignore = ["TA3", "partial-utf8-token"]\n\n'
        "[[tool.tokaudit.per-target-ignores]]\n"
        'target = "*/tiny-tiktoken"\nrules = ["vocab-gap", "TA105"]\nreason = "filled by the remote code we deploy"\n'
    )
    code, doc, _ = scan(TINY)
    assert code == 0
    assert codes(doc) == ["TA103", "TA202", "TA810", "TA810"]
    assert doc["policy"] == {"suppressed": 2, "baselined": 0, "config": str(path), "baseline": None}
    code, doc, _ = scan(TINY, "--select", "TA1")  # the command line's --select replaces none of the config's ignores
    assert codes(doc) == ["TA103"]


def test_unused_suppression_is_a_note(project) -> None:
    project(
        "[tool.tokaudit]\n[[tool.tokaudit.per-target-ignores]]\n"
        'target = "*/clean-bpe"\nrules = ["TA101"]\nreason = "legacy"\n'
    )
    code, doc, _ = scan(CLEAN)
    (unused,) = [f for f in doc["findings"] if f["code"] == "TA001"]
    assert code == 0 and unused["name"] == "unused-suppression" and unused["severity"] == "note"
    assert unused["location"] == {"file": "pyproject.toml", "key": "tool.tokaudit.per-target-ignores[0]"}
    assert unused["target"] == str(CLEAN)
    assert "the per-target ignore of TA101 for '*/clean-bpe' (legacy) matched no finding" in unused["message"]
    _, doc, _ = scan(CLEAN, "--select", "TA2")  # its rule did not run: nothing to say
    assert codes(doc) == []
    _, doc, _ = scan(TINY)  # the glob does not match this target
    assert "TA001" not in codes(doc)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[tool.tokaudit]\nselect = [\n", ":3: invalid TOML: Invalid value"),
        ('[tool.tokaudit]\nselect = ["a" "b"]\n', ":2: invalid TOML: Unclosed array"),
        (
            "[tool.tokaudit]\nselekt = []\n",
            " (key tool.tokaudit.selekt): unknown key 'selekt' (known: select, ignore, baseline, per-target-ignores, "
            "stacks, tool-parser, reasoning-parser, parsers, require-reason)",
        ),
        (
            '[tool.tokaudit]\nselect = ["vocab-gapp"]\n',
            " (key tool.tokaudit.select): unknown rule 'vocab-gapp' (did you mean vocab-gap?)",
        ),
        (
            '[[tool.tokaudit.per-target-ignores]]\ntarget = "x"\nrules = ["TA101"]\n',
            " (key tool.tokaudit.per-target-ignores[0].reason): a per-target ignore needs a non-empty 'reason'",
        ),
        (
            '[[tool.tokaudit.per-target-ignores]]\ntarget = "x"\nrules = "TA1"\nreason = " "\n',
            " (key tool.tokaudit.per-target-ignores[0].reason): a per-target ignore needs a non-empty 'reason'",
        ),
        (
            '[[tool.tokaudit.per-target-ignores]]\nrules = ["TA101"]\nreason = "r"\n',
            " (key tool.tokaudit.per-target-ignores[0].target): a per-target ignore needs a 'target'",
        ),
    ],
)
def test_bad_config_is_one_line_exit_2(project, text: str, message: str) -> None:
    path = project(text)
    code, _, err = scan(TINY)
    assert code == 2
    assert err.startswith(f"tokaudit: error: {path}") and message in err and err.count("\n") == 1


# ---- baseline ----------------------------------------------------------------------------------


def test_baseline_only_new_findings_count(tmp_path: Path) -> None:
    old = run_cli("scan", TINY, "--format", "json", "--select", "TA1")
    (tmp_path / "baseline.json").write_text(old.stdout, encoding="utf-8")
    code, doc, _ = scan(TINY, "--baseline", tmp_path / "baseline.json")
    assert code == 0  # the only error (TA101) is in the baseline
    assert codes(doc) == ["TA202", "TA301", "TA302", "TA401", "TA810", "TA810"]
    assert doc["policy"]["baselined"] == 3


def test_fingerprints_ignore_line_numbers() -> None:
    f = {
        "code": "TA205",
        "name": "template-token-unregistered",
        "target": "m/",
        "details": {"subject": "<|x|>"},
        "location": {"file": "chat_template.jinja", "line": 3},
    }
    moved = dict(f, target="./m", location={"file": "chat_template.jinja", "line": 30})
    assert fingerprint_json(f) == fingerprint_json(moved)
    assert fingerprint_json(f) != fingerprint_json(dict(f, details={"subject": "<|y|>"}))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", ":1: invalid JSON: Expecting property name enclosed in double quotes (column 2)"),
        ("[]", " (key findings): not a tokaudit JSON report (expected an object with a 'findings' list)"),
        ('{"findings": [{"name": "x"}]}', " (key findings[0]): expected a finding with a string 'code'"),
    ],
)
def test_bad_baseline_is_one_line_exit_2(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "baseline.json"
    path.write_text(content, encoding="utf-8")
    code, _, err = scan(TINY, "--baseline", path)
    assert code == 2 and err == f"tokaudit: error: {path}{message}\n"


def test_missing_baseline_file(tmp_path: Path) -> None:
    code, _, err = scan(TINY, "--baseline", tmp_path / "nope.json")
    assert code == 2 and err == f"tokaudit: error: {tmp_path / 'nope.json'}: no such file\n"


# ---- several targets ---------------------------------------------------------------------------


def test_jobs_give_the_same_report_in_target_order() -> None:
    targets = (CLEAN, TINY, FIXTURES / "qwen-remote", FIXTURES / "rules" / "id-drift")
    code1, one, _ = scan(*targets, "--jobs", "1")
    code3, three, _ = scan(*targets, "--jobs", "3")
    assert one == three and code1 == code3 == 1
    assert [t["target"] for t in three["targets"]] == [str(t) for t in targets]
    assert [f["target"] for f in three["findings"]] == sorted(
        (f["target"] for f in three["findings"]), key=lambda t: [str(x) for x in targets].index(t)
    )


def test_worst_exit_code_over_targets_and_first_bad_target_is_exit_2() -> None:
    code, _, _ = scan(CLEAN, "--jobs", "2")
    assert code == 0
    code, _, err = scan(CLEAN, FIXTURES / "malformed" / "bad-rank", "--jobs", "2")
    assert (
        code == 2
        and err.startswith("tokaudit: error: ")
        and "tiktoken.model:2: rank is not a non-negative integer" in err
    )


# ---- require-reason and what was not checked -------------------------------------------------------------------


def test_require_reason_refuses_a_global_ignore(project) -> None:
    path = project('[tool.tokaudit]\nignore = ["TA401"]\nrequire-reason = true\n')
    code, _, err = scan(TINY)
    assert (code, err.strip()) == (
        2,
        f"tokaudit: error: {path} (key tool.tokaudit.ignore[0]): require-reason is on and "
        "ignore has no reason for 'TA401': suppress it with [[tool.tokaudit.per-target-ignores]] "
        '(target = "*", rules, reason)',
    )
    path = project('[tool.tokaudit]\nrequire-reason = "yes"\n')
    code, _, err = scan(TINY)
    assert (code, err.strip()) == (
        2,
        f"tokaudit: error: {path} (key tool.tokaudit.require-reason): expected true or false",
    )


def test_require_reason_baselines_only_entries_that_say_why(project, tmp_path: Path) -> None:
    _, doc, _ = scan(SPECIAL)
    before = codes(doc)
    doc["findings"][0]["reason"] = "the gap is filled by the remote code we deploy"
    doc["findings"][1]["reason"] = "   "
    (tmp_path / "base.json").write_text(json.dumps(doc), encoding="utf-8")
    project('[tool.tokaudit]\nbaseline = "base.json"\n')
    _, plain, _ = scan(SPECIAL)
    assert (plain["findings"], plain["policy"]["baselined"]) == (
        [],
        len(before),
    )  # without require-reason: all baselined
    project('[tool.tokaudit]\nbaseline = "base.json"\nrequire-reason = true\n')
    _, strict, _ = scan(SPECIAL)
    assert strict["policy"]["baselined"] == 1
    assert codes(strict) == before[1:] + ["TA010"]
    (f,) = [f for f in strict["findings"] if f["code"] == "TA010"]
    n = len(before) - 1
    assert (f["severity"], f["location"]) == ("warning", {"file": str(tmp_path / "base.json"), "key": "findings[1]"})
    assert f["details"]["entries"] == [f"findings[{i}]" for i in range(1, len(before))]
    assert f["message"].startswith(
        f'{n} entries of the baseline have no "reason" and require-reason is on, so their findings '
        "are reported, not baselined: findings[1], findings[2]"
    )


def test_the_headline_says_which_backend_was_not_checked(tmp_path: Path) -> None:
    from importlib.util import find_spec

    if find_spec("torch") is not None:
        pytest.skip("torch is installed here: transformers-gguf is checked, nothing is missing")
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world\n", encoding="utf-8")
    args = ("compare", FIXTURES / "gguf" / "clean.gguf", "--no-builtin-corpus", "--corpus", corpus)
    doc = json.loads(run_cli(*args, "--format", "json").stdout)
    assert doc["not_checked"] == ["backend transformers-gguf (torch is not installed)"]
    rich = run_cli(*args, env={"COLUMNS": "200"})
    assert rich.stdout.rstrip().splitlines()[-1] == (
        "✓ PASS: 0 errors, 0 warnings, 0 notes (--fail-on error; not checked: backend transformers-gguf (torch is not "
        "installed))"
    )
    github = run_cli(*args, "--format", "github").stdout.rstrip().splitlines()[-1]
    assert github.startswith(
        f"tokaudit {__version__} compare: PASS: 0 errors, 0 warnings, 0 notes; not checked: backend "
        "transformers-gguf (torch is not installed) (python "
    )
