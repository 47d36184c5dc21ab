"""An audit says what it audited: the Hub commit a repo id resolved to (in every format), warnings when --revision
does not apply or diff compares a snapshot with itself, baselines that match however the target is given (and
say when they are stale), complete library versions, and a JSON Schema every command's JSON output follows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import FIXTURES, ROOT, run_cli
from tests.source.test_source import COMMIT, _hf_cache
from tokaudit.report.report import versions

SCHEMA = json.loads((ROOT / "tokaudit" / "report" / "report.schema.json").read_text(encoding="utf-8"))
KIMI = FIXTURES / "kimi-k2.5"
TINY = FIXTURES / "tiny-tiktoken"


def _run(args: list[object], hf_home: Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HF_HOME": str(hf_home),
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "TOKAUDIT_CACHE": "off",
    }
    env.pop("HF_HUB_CACHE", None)
    return subprocess.run(
        [sys.executable, "-m", "tokaudit", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd or hf_home,
        timeout=300,
    )


# --- the resolved Hub commit ---------------------------------------------------------------------


def test_hub_commit_in_every_format(tmp_path: Path) -> None:
    home = _hf_cache(tmp_path)
    url = f"https://huggingface.co/acme/tiny/tree/{COMMIT}"
    doc = json.loads(_run(["scan", "acme/tiny", "--format", "json"], home).stdout)
    source = {"key": "acme/tiny", "repo_id": "acme/tiny", "revision": None, "commit": COMMIT, "url": url}
    assert doc["origin"] == source and doc["targets"][0]["origin"] == source
    jsonschema.validate(doc, SCHEMA)

    sarif = json.loads(_run(["scan", "acme/tiny", "--format", "sarif"], home).stdout)["runs"][0]
    assert sarif["properties"]["sources"] == {"acme/tiny": source}
    gap = sarif["results"][0]
    assert gap["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (
        f"https://huggingface.co/acme/tiny/blob/{COMMIT}/config.json"
    )  # a Hub file, at the commit that was read
    assert gap["locations"][0]["physicalLocation"]["region"] == {"startLine": 1, "startColumn": 2}

    junit = ET.fromstring(_run(["scan", "acme/tiny", "--format", "junit"], home).stdout)
    props = {p.get("name"): p.get("value") for p in junit.find("testsuite").find("properties")}
    assert props["source.commit"] == COMMIT and props["source.repo_id"] == "acme/tiny"

    md = _run(["scan", "acme/tiny", "--format", "markdown"], home).stdout
    assert f"### `acme/tiny`\n\nHugging Face commit `{COMMIT}` (main)\n" in md
    github = _run(["scan", "acme/tiny", "--format", "github"], home).stdout
    assert github.splitlines()[0] == f"::group::tokaudit scan acme/tiny @ {COMMIT}"
    rich = _run(["scan", "acme/tiny"], home)
    assert rich.stdout.splitlines()[0] == f"tokaudit scan  acme/tiny @ {COMMIT[:12]} (main)"
    concise = _run(["scan", "acme/tiny", "--format", "concise"], home)
    assert concise.stderr.splitlines()[0] == f"tokaudit: acme/tiny: main resolved to commit {COMMIT}"
    assert concise.stdout.splitlines()[0].startswith("acme/tiny/config.json:1:2: TA101 vocab-gap ")


def test_diff_of_a_snapshot_with_itself_warns(tmp_path: Path) -> None:
    home = _hf_cache(tmp_path)
    proc = _run(["diff", "acme/tiny", "acme/tiny", "--revision", COMMIT, "-q"], home)
    assert proc.returncode == 0
    assert proc.stderr.splitlines() == [
        f"tokaudit: warning: both sides are the same files (acme/tiny at commit {COMMIT}): every id matches itself; "
        "give the other side's revision with --target-revision"
    ]


def test_revision_on_a_local_path_warns() -> None:
    result = run_cli("scan", TINY, "--revision", "v2", "--select", "TA101", "-q")
    assert result.exit_code == 1
    assert (
        result.stderr
        == f"tokaudit: warning: --revision v2 does not apply to {TINY}: a local path is read as it is on disk\n"
    )


# --- baselines keyed by the target, whatever way it is given -------------------------------------------


def test_baseline_matches_an_absolute_target_and_one_given_from_another_directory(tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    written = subprocess.run(
        [sys.executable, "-m", "tokaudit", "scan", "fixtures/tiny-tiktoken", "--format", "json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    baseline.write_text(written.stdout)
    assert json.loads(written.stdout)["origin"] == {"key": "fixtures/tiny-tiktoken"}  # the path from the project root
    n = len(json.loads(written.stdout)["findings"])
    for target, cwd in ((TINY.resolve(), ROOT), ("../tiny-tiktoken", FIXTURES / "kimi-k2.5")):
        proc = subprocess.run(
            [sys.executable, "-m", "tokaudit", "scan", str(target), "--baseline", str(baseline), "--format", "json"],
            capture_output=True,
            text=True,
            cwd=cwd,
            timeout=300,
        )
        doc = json.loads(proc.stdout)
        assert (proc.returncode, doc["findings"], doc["targets"][0]["policy"]["baselined"]) == (0, [], n), (
            target,
            proc.stderr,
        )
        assert proc.stderr == "tokaudit scan: 0 errors, 0 warnings, 0 notes\n"


def test_baseline_of_other_targets_or_with_fixed_findings_is_stale(tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    baseline.write_text(run_cli("scan", KIMI, "--format", "json").stdout)
    other = run_cli("scan", TINY, "--baseline", baseline, "--format", "json")
    assert other.stderr.splitlines()[0] == (
        f"tokaudit: warning: baseline {baseline}: none of its 12 entries is for a target scanned here "
        "(it names fixtures/kimi-k2.5); no finding was baselined"
    )
    # Kimi with one of its findings gone (TA401 ignored): one entry matches nothing
    fixed = run_cli("scan", KIMI, "--baseline", baseline, "--ignore", "TA401", "--format", "json")
    assert fixed.exit_code == 0 and fixed.stderr.splitlines()[0] == (
        f"tokaudit: warning: baseline {baseline}: 1 of its 12 entries for the targets scanned here matched no finding "
        "(fixed, or changed): regenerate it with --format json"
    )
    clean = run_cli("scan", KIMI, "--baseline", baseline, "--format", "json")
    assert clean.stderr == "tokaudit scan: 0 errors, 0 warnings, 0 notes\n"


def test_a_baseline_written_before_target_keys_still_matches(tmp_path: Path) -> None:
    doc = json.loads(run_cli("scan", TINY, "--format", "json").stdout)
    del doc["origin"]
    for t in doc["targets"]:
        del t["origin"]
    baseline = tmp_path / "old.json"
    baseline.write_text(json.dumps(doc))
    result = run_cli("scan", TINY, "--baseline", baseline, "--format", "json")
    assert result.exit_code == 0 and json.loads(result.stdout)["findings"] == []


# --- versions and the JSON Schema -----------------------------------------------------------------------


def test_versions_name_every_library_a_finding_depends_on() -> None:
    found = versions()
    assert {"python", "tokenizers", "tiktoken", "sentencepiece", "jinja2", "minijinja"} <= set(found)
    assert "llama-cpp-python" in found  # installed with the test extras
    assert all(isinstance(v, str) and v for v in found.values())


@pytest.mark.parametrize(
    "args",
    [
        ("scan", KIMI),
        ("scan", KIMI, TINY),
        ("scan", "fixtures/gguf/never-stops.gguf"),
        ("compare", "fixtures/compare/changed-regex", "--backends", "tiktoken,hf"),
        ("replay", KIMI, "fixtures/streams/kimi-toolcall-cut.json"),
        ("explain", KIMI, "163600"),
        ("decode", KIMI, "163600"),
        ("encode", KIMI, "hello"),
        ("fuzz", TINY, "--iterations", "20"),
        ("diff", "fixtures/oncall/tiny-draft", TINY),
        ("template", "fixtures/templates/broken"),
    ],
    ids=lambda a: " ".join(str(x) for x in a[:2]) if isinstance(a, tuple) else str(a),
)
def test_json_output_of_every_command_follows_the_schema(args: tuple[object, ...]) -> None:
    doc = json.loads(run_cli(*args, "--format", "json").stdout)
    jsonschema.validate(doc, SCHEMA)
    assert doc["schema_version"] == 1 and doc["command"] == args[0]


def test_jsonl_lines_and_an_unreadable_target_follow_the_schema(tmp_path: Path) -> None:
    missing = tmp_path / "gone"
    result = run_cli("scan", TINY, missing, "--format", "json")
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert result.exit_code == 2 and doc["unreadable"] == [
        {"target": str(missing), "error": f"{missing}: no such file or directory"}
    ]
    lines = run_cli("scan", KIMI, TINY, "--format", "jsonl").stdout.splitlines()
    for line in lines:
        jsonschema.validate(json.loads(line), SCHEMA)


def test_a_finding_that_breaks_the_schema_is_caught() -> None:
    doc = json.loads(run_cli("scan", TINY, "--format", "json").stdout)
    doc["findings"][0]["location"]["line"] = 0
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, SCHEMA)
