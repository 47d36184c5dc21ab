"""What a CI user plugs in: the GitHub Action's script, the pre-commit hook's entry and fleet scans
(``--targets-from``, ``--format jsonl``), run as whole processes on fixtures without network; and the
rule catalog every module reads its codes from, and the import arrows between the packages."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT

KIMI = "fixtures/kimi-k2.5"
TINY = "fixtures/tiny-tiktoken"
yaml = pytest.importorskip("yaml")


def run(
    *command: object, env: dict[str, str] | None = None, input: str | None = None, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(c) for c in command],
        capture_output=True,
        text=True,
        cwd=cwd,
        input=input,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def tokaudit(*args: object, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return run(sys.executable, "-m", "tokaudit", *args, **kwargs)  # type: ignore[arg-type]


def json_findings(*targets: str) -> list[dict]:
    return json.loads(tokaudit("scan", *targets, "--format", "json").stdout)["findings"]


# --- GitHub Action ------------------------------------------------------------------------------


def _action_env(tmp_path: Path, **inputs: str) -> dict[str, str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    env = {
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "GITHUB_OUTPUT": str(tmp_path / "output.txt"),
        "INPUT_SARIF_FILE": str(tmp_path / "tokaudit.sarif"),
        "INPUT_FAIL_ON": "error",
        "INPUT_BASELINE": "",
        "INPUT_ARGS": "",
    }
    env.update({f"INPUT_{k.upper()}": v for k, v in inputs.items()})
    return env


def test_action_script_writes_sarif_summary_and_outputs(tmp_path: Path) -> None:
    env = _action_env(tmp_path, targets=f"{KIMI}\n{TINY}", args="--ignore TA401")
    proc = run(sys.executable, "scripts/github_action.py", env=env)
    assert proc.returncode == 1
    expected = [f for f in json_findings(KIMI, TINY) if f["code"] != "TA401"]
    sarif = json.loads((tmp_path / "tokaudit.sarif").read_text())
    results = sarif["runs"][0]["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [(f["code"], f["severity"]) for f in expected]
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
    assert "fixtures/kimi-k2.5/config.json" in uris  # relative to the repository root, as code scanning needs
    summary = (tmp_path / "summary.md").read_text()
    errors = sum(f["severity"] == "error" for f in expected)
    assert summary.startswith("## tokaudit scan: ❌ FAIL\n")
    assert f"({errors} at or above `--fail-on error`)" in summary and "TA401" not in summary
    assert "### `fixtures/kimi-k2.5`" in summary and "### `fixtures/tiny-tiktoken`" in summary
    assert (tmp_path / "output.txt").read_text() == f"sarif-file={tmp_path / 'tokaudit.sarif'}\nexit-code=1\n"


def test_action_script_fail_on_never_and_baseline(tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    baseline.write_text(tokaudit("scan", TINY, "--format", "json").stdout)
    env = _action_env(tmp_path, targets=TINY, baseline=str(baseline))
    proc = run(sys.executable, "scripts/github_action.py", env=env)
    assert proc.returncode == 0
    assert json.loads((tmp_path / "tokaudit.sarif").read_text())["runs"][0]["results"] == []
    n = len(json.loads(baseline.read_text())["findings"])
    assert (
        f"0 errors, 0 warnings, 0 notes (0 at or above `--fail-on error`, {n} baselined)"
        in (tmp_path / "summary.md").read_text()
    )
    proc = run(sys.executable, "scripts/github_action.py", env=_action_env(tmp_path, targets=TINY, fail_on="never"))
    assert proc.returncode == 0 and (tmp_path / "output.txt").read_text().endswith("exit-code=0\n")


def test_action_script_bad_target_still_writes_sarif_and_summary(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    proc = run(sys.executable, "scripts/github_action.py", env=_action_env(tmp_path, targets=f"{TINY} {missing}"))
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[0] == f"tokaudit: error: {missing}: no such file or directory"
    sarif = json.loads((tmp_path / "tokaudit.sarif").read_text())
    (invocation,) = sarif["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    assert invocation["toolExecutionNotifications"][0]["message"]["text"] == f"{missing}: no such file or directory"
    assert {r["properties"]["target"] for r in sarif["runs"][0]["results"]} == {TINY}  # the readable target is there
    assert f"### `{missing}`\n\n❌ could not be read: " in (tmp_path / "summary.md").read_text()
    assert (tmp_path / "output.txt").read_text() == f"sarif-file={tmp_path / 'tokaudit.sarif'}\nexit-code=2\n"
    # a single target that cannot be read: still a SARIF (no results, the notification), so the upload step runs
    alone = run(sys.executable, "scripts/github_action.py", env=_action_env(tmp_path / "b", targets=str(missing)))
    assert alone.returncode == 2
    assert json.loads((tmp_path / "b" / "tokaudit.sarif").read_text())["runs"][0]["results"] == []


def test_action_script_scans_once_with_the_category(tmp_path: Path) -> None:
    script = (ROOT / "scripts" / "github_action.py").read_text()
    assert script.count("subprocess.run(") == 1  # SARIF and the job summary come from one scan (--also)
    proc = run(
        sys.executable, "scripts/github_action.py", env=_action_env(tmp_path, targets=TINY, category="tokenizers/tiny")
    )
    assert proc.returncode == 1
    assert json.loads((tmp_path / "tokaudit.sarif").read_text())["runs"][0]["automationDetails"] == {
        "id": "tokenizers/tiny/"
    }
    default = run(sys.executable, "scripts/github_action.py", env=_action_env(tmp_path / "d", targets=TINY))
    assert json.loads((tmp_path / "d" / "tokaudit.sarif").read_text())["runs"][0]["automationDetails"] == {
        "id": "tokaudit/"
    }
    assert default.returncode == 1


def test_action_yml_wires_inputs_to_the_script() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    steps = {s.get("id") or s.get("name"): s for s in action["runs"]["steps"]}
    scan = steps["scan"]
    assert scan["run"] == 'python "$GITHUB_ACTION_PATH/scripts/github_action.py"'
    script = (ROOT / "scripts" / "github_action.py").read_text()
    for var, expression in scan["env"].items():
        assert var in script  # every variable the step sets is read by the script
        assert expression == "${{ inputs.%s }}" % var.removeprefix("INPUT_").lower().replace("_", "-")
        assert var.removeprefix("INPUT_").lower().replace("_", "-") in action["inputs"]
    assert set(action["inputs"]) >= {"targets", "fail-on", "baseline", "args"}
    upload = steps["Upload SARIF to code scanning"]
    assert upload["uses"] == "github/codeql-action/upload-sarif@v4"  # v3 is deprecated
    assert upload["with"]["sarif_file"] == "${{ steps.scan.outputs.sarif-file }}" and "always()" in upload["if"]
    assert (
        upload["with"]["category"] == "${{ inputs.category }}" and action["inputs"]["category"]["default"] == "tokaudit"
    )


# --- pre-commit ---------------------------------------------------------------------------------


def test_pre_commit_hook_definition() -> None:
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts[hook["entry"]] == "tokaudit.cli.precommit:main"
    files = re.compile(hook["files"])
    for touched in (
        "models/kimi/tiktoken.model",
        "tokenizer.json",
        "a/b/tokenizer_config.json",
        "m/cl100k_base.tiktoken",
        "m/tokenization_kimi.py",
        "m/chat_template.jinja",
        "m/tokenizer.model",
        "gguf/llama-3-8b.Q4_K_M.gguf",
    ):
        assert files.search(touched), touched
    for untouched in ("README.md", "src/tokenizer.py", "model.safetensors", "m/tiktoken.model.bak"):
        assert not files.search(untouched), untouched


def test_pre_commit_entry_scans_touched_model_directories(tmp_path: Path) -> None:
    touched = [f"{KIMI}/config.json", f"{KIMI}/tiktoken.model", f"{TINY}/tokenizer_config.json", "README.md"]
    entry = (sys.executable, "-m", "tokaudit.cli.precommit")
    proc = run(*entry, "--format", "json", *touched)
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    assert [t["target"] for t in doc["targets"]] == [KIMI, TINY]  # each directory once; README.md's is no model
    assert doc["findings"] == json_findings(KIMI, TINY)
    passed = run(*entry, "--fail-on", "never", "-q", *touched)
    assert passed.returncode == 0 and passed.stdout.splitlines()[-1].startswith("✓ PASS:")
    elsewhere = tmp_path / "config.json"
    elsewhere.write_text("{}")
    nothing = run(*entry, elsewhere)
    assert (nothing.returncode, nothing.stdout, nothing.stderr) == (0, "", "")


def test_pre_commit_entry_with_a_baseline_and_a_staged_gguf(tmp_path: Path) -> None:
    """``args: [--baseline, FILE]``: FILE is the option's value, not a staged file (it used to be taken for one:
    exit 2); a staged .gguf is scanned as the model it is."""
    baseline = tmp_path / "baseline.json"
    baseline.write_text(tokaudit("scan", KIMI, "--format", "json").stdout)
    entry = (sys.executable, "-m", "tokaudit.cli.precommit")
    gguf = "fixtures/gguf/never-stops.gguf"
    proc = run(*entry, "--baseline", baseline, "--format", "json", f"{KIMI}/config.json", gguf)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert [t["target"] for t in doc["targets"]] == [KIMI, gguf]
    assert {f["target"] for f in doc["findings"]} == {gguf}  # Kimi's are all in the baseline
    assert "TA207" in {f["code"] for f in doc["findings"]}
    assert doc["targets"][0]["policy"]["baselined"] == len(json.loads(baseline.read_text())["findings"])
    same = run(*entry, f"--baseline={baseline}", "-q", f"{KIMI}/tiktoken.model")
    assert same.returncode == 0 and same.stdout.splitlines()[-1].startswith("✓ PASS:")


# --- fleet scans --------------------------------------------------------------------------------


def test_targets_from_file_and_stdin_jsonl(tmp_path: Path) -> None:
    listing = tmp_path / "targets.txt"
    listing.write_text(f"# models to check\n{TINY}\n\n  {KIMI}  \n")
    proc = tokaudit("scan", "--targets-from", listing, "--format", "jsonl")
    assert proc.returncode == 1
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [d["target"] for d in lines] == [TINY, KIMI]
    assert [d["findings"] for d in lines] == [json_findings(TINY), json_findings(KIMI)]
    assert proc.stderr.startswith("tokaudit scan: 2 targets, 0 unreadable: ")
    piped = tokaudit("scan", "--targets-from", "-", "--format", "jsonl", input=listing.read_text())
    assert piped.stdout == proc.stdout
    # with positional targets too, and in the other formats: one report over all of them
    both = json.loads(tokaudit("scan", KIMI, "--targets-from", listing, "--format", "json").stdout)
    assert [t["target"] for t in both["targets"]] == [KIMI, TINY, KIMI]


def test_jsonl_records_an_unreadable_target_and_goes_on(tmp_path: Path) -> None:
    missing = tmp_path / "gone"
    proc = tokaudit("scan", TINY, missing, KIMI, "--format", "jsonl", env={"HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 2
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [d["target"] for d in lines] == [TINY, str(missing), KIMI]
    assert set(lines[1]) == {"tokaudit", "command", "target", "error"} and lines[1]["error"].startswith(str(missing))
    assert lines[2]["findings"] == json_findings(KIMI)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("tokaudit: error: ")]
    assert errors == [f"tokaudit: error: {lines[1]['error']}"]


def test_jsonl_with_jobs_writes_every_target_once() -> None:
    proc = tokaudit("scan", TINY, KIMI, TINY, "--format", "jsonl", "--jobs", "2")
    assert sorted(json.loads(line)["target"] for line in proc.stdout.splitlines()) == sorted([TINY, KIMI, TINY])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read targets file: No such file or directory"),
        (b"\xff\xfe\n", "not UTF-8 text"),
    ],
)
def test_bad_targets_file_is_one_line_exit_2(tmp_path: Path, content: bytes | None, message: str) -> None:
    listing = tmp_path / "targets.txt"
    if content is not None:
        listing.write_bytes(content)
    proc = tokaudit("scan", "--targets-from", listing)
    where = f"{listing}:1" if content is not None else str(listing)
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", f"tokaudit: error: {where}: {message}\n")


def test_no_target_at_all_is_exit_2(tmp_path: Path) -> None:
    empty = tmp_path / "targets.txt"
    empty.write_text("# nothing yet\n")
    proc = tokaudit("scan", "--targets-from", empty)
    assert (proc.returncode, proc.stderr) == (
        2,
        "tokaudit: error: key TARGET: no target: give TARGET... or --targets-from FILE\n",
    )


# --- catalog ------------------------------------------------------------------------------------


def test_every_catalog_code_is_raised_by_one_module() -> None:
    """The modules take code, name, severity and summary from the catalog (an unknown code fails at import);
    this checks the other way: no catalog row that no module raises, none claimed by two families."""
    from tokaudit.catalog import CATALOG
    from tokaudit.compare.codes import ALL_CODES as COMPARE
    from tokaudit.oncall.codes import ALL_CODES as ONCALL
    from tokaudit.report.policy import META_CODES
    from tokaudit.rules import all_rules
    from tokaudit.stream.codes import ALL_CODES as STREAM
    from tokaudit.template.common import CODES as TEMPLATE

    families = [[r.code for r in all_rules()], [c.code for c in (*STREAM, *COMPARE, *ONCALL, *META_CODES)]]
    assert sorted(families[0] + families[1]) == sorted(CATALOG)
    assert set(TEMPLATE) <= set(families[0])
    assert len({info.name for info in CATALOG.values()}) == len(CATALOG)
    assert {info.severity for info in CATALOG.values()} == {"error", "warning", "note"}
    assert all(
        re.fullmatch(r"TA\d{3}", code)
        and re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", info.name)
        and info.summary.endswith(".")
        for code, info in CATALOG.items()
    )


def test_a_rule_is_declared_by_its_catalog_code_alone() -> None:
    from tokaudit.catalog import CATALOG
    from tokaudit.checks.registry import RULES, rule
    from tokaudit.rules import all_rules

    ta206 = next(r for r in all_rules() if r.code == "TA206")
    assert (ta206.name, ta206.severity.value, ta206.summary) == (
        CATALOG["TA206"].name,
        "error",
        CATALOG["TA206"].summary,
    )
    assert ta206.finding("x").to_json()["name"] == "empty-token"
    with pytest.raises(KeyError, match="TA999"):
        rule("TA999")
    with pytest.raises(ValueError, match="rule TA206 empty-token registered twice"):
        rule("TA206")(lambda model: ())
    assert RULES["TA206"] is ta206


def test_report_layer_does_not_import_the_rules() -> None:
    code = (
        "import sys; import tokaudit.report.render_sarif, tokaudit.report.render_markdown, "
        "tokaudit.report.render_junit; "
        "print(sorted(m for m in sys.modules if m.startswith('tokaudit.checks')))"
    )
    assert run(sys.executable, "-c", code).stdout.strip() == "[]"
    from tokaudit.report.locations import rule_summary

    assert rule_summary("TA605") == "An exception or Rust panic inside a backend."
    assert rule_summary("TA999") is None


def test_rules_table_agrees_with_the_catalog() -> None:
    """The table of docs/rules/README.md (each code linked to its page) lists exactly the catalog's codes."""
    from tokaudit.catalog import CATALOG

    text = (ROOT / "docs" / "rules" / "README.md").read_text()
    rows = re.findall(r"^\| \[(TA\d{3})\]\((TA\d{3})\.md\) \| ([a-z0-9-]+) \| (error|warning|note) \|", text, re.M)
    assert [(code, name, severity) for code, _, name, severity in rows] == [
        (code, info.name, info.severity) for code, info in sorted(CATALOG.items())
    ]
    assert all(code == page for code, page, _, _ in rows)


# --- transformers without --trust-remote-code (what the README states) --------------------------


def test_transformers_converts_kimi_without_running_its_code(tmp_path: Path) -> None:
    """transformers 5.x does not need tokenization_kimi.py for Kimi-K2.5: it converts tiktoken.model
    into its Rust backend by itself; the model's code is never run without --trust-remote-code."""
    pytest.importorskip("transformers")
    import shutil

    model = tmp_path / "kimi"
    shutil.copytree(ROOT / KIMI, model)
    marker = tmp_path / "EXECUTED"
    with (model / "tokenization_kimi.py").open("a") as fh:
        fh.write(f"\nimport pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n")
    proc = tokaudit("explain", model, "163586", "--backends", "tiktoken,transformers-fast", "--format", "json")
    doc = json.loads(proc.stdout)
    row = {b["name"]: b for b in doc["backends"]}["transformers-fast"]
    assert (proc.returncode, row["available"], row["detail"]) == (0, True, "TokenizersBackend (fast)")
    decoded = doc["ids"][0]["backends"]
    assert decoded["transformers-fast"]["text"] == decoded["tiktoken"]["text"] == "<|im_end|>"
    assert not marker.exists()
