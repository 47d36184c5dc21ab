"""SARIF, JUnit, markdown and GitHub annotations: validated structurally and with real parsers."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest
import xmlschema

from tests.conftest import FIXTURES, run_cli
from tokaudit import REPOSITORY_URL, __version__
from tokaudit.compare.result import CompareResult
from tokaudit.compare.run import CompareOptions, compare_model
from tokaudit.model.load import load_model
from tokaudit.records import Provenance
from tokaudit.ids import IdRanges
from tokaudit.report.finding import Finding, Severity
from tokaudit.report.render_github import annotation, escape_data, escape_property
from tokaudit.report.render_junit import render_junit
from tokaudit.report.render_markdown import md as md_escape
from tokaudit.report.render_sarif import sarif_document
from tokaudit.report.report import Report, versions
from tokaudit.rule_docs import rule_page
from tokaudit.rules import all_rules
from tokaudit.scan.result import ScanResult
from tokaudit.scan.run import scan_model

# CI tools want repository-relative paths: targets are given relative to the repository root
TINY = Path("fixtures/tiny-tiktoken")
CLEAN = Path("fixtures/clean-bpe")
RULES = Path("fixtures/rules")


@pytest.fixture(autouse=True)
def _in_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(FIXTURES.parent)


_TEXT = {
    "type": "object",
    "required": ["text"],
    "properties": {"text": {"type": "string", "minLength": 1, "maxLength": 1024}},
}
_ANY_TEXT = {"type": "object", "required": ["text"], "properties": {"text": {"type": "string", "minLength": 1}}}
#: The parts of SARIF 2.1.0 that GitHub code scanning requires (docs: "SARIF support for code scanning"), strictly.
GITHUB_SARIF = {
    "type": "object",
    "required": ["$schema", "version", "runs"],
    "properties": {
        "$schema": {"type": "string", "pattern": "sarif-2\\.1\\.0"},
        "version": {"const": "2.1.0"},
        "runs": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["tool", "results"],
                "properties": {
                    "tool": {
                        "type": "object",
                        "required": ["driver"],
                        "properties": {
                            "driver": {
                                "type": "object",
                                "required": ["name", "rules"],
                                "properties": {
                                    "name": {"type": "string", "minLength": 1},
                                    "semanticVersion": {"type": "string", "pattern": "^\\d+\\.\\d+\\.\\d+"},
                                    "rules": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "required": [
                                                "id",
                                                "name",
                                                "shortDescription",
                                                "fullDescription",
                                                "help",
                                                "helpUri",
                                            ],
                                            "properties": {
                                                "id": {"type": "string", "pattern": "^TA\\d{3}$"},
                                                "name": {"type": "string", "minLength": 1, "maxLength": 255},
                                                # GitHub limits the short description to 1024 characters;
                                                # help is the rule's page
                                                "shortDescription": _TEXT,
                                                "fullDescription": _ANY_TEXT,
                                                "help": {**_ANY_TEXT, "required": ["text", "markdown"]},
                                                "helpUri": {"type": "string", "pattern": "^https://"},
                                                "defaultConfiguration": {
                                                    "type": "object",
                                                    "properties": {"level": {"enum": ["note", "warning", "error"]}},
                                                },
                                            },
                                        },
                                    },
                                },
                            }
                        },
                    },
                    "results": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["ruleId", "message", "locations", "partialFingerprints"],
                            "properties": {
                                "ruleId": {"type": "string", "pattern": "^TA\\d{3}$"},
                                "level": {"enum": ["note", "warning", "error"]},
                                "message": {
                                    "type": "object",
                                    "required": ["text"],
                                    "properties": {"text": {"type": "string", "minLength": 1}},
                                },
                                "locations": {
                                    "type": "array",
                                    "minItems": 1,
                                    "maxItems": 10,
                                    "items": {
                                        "type": "object",
                                        "required": ["physicalLocation"],
                                        "properties": {
                                            "physicalLocation": {
                                                "type": "object",
                                                "required": ["artifactLocation", "region"],
                                                "properties": {
                                                    "artifactLocation": {
                                                        "type": "object",
                                                        "required": ["uri"],
                                                        "properties": {
                                                            "uri": {
                                                                "type": "string",
                                                                "minLength": 1,
                                                                "pattern": "^[^/]",
                                                            }
                                                        },
                                                    },
                                                    "region": {
                                                        "type": "object",
                                                        "required": ["startLine"],
                                                        "properties": {"startLine": {"type": "integer", "minimum": 1}},
                                                    },
                                                },
                                            }
                                        },
                                    },
                                },
                                # GitHub reads primaryLocationLineHash only
                                "partialFingerprints": {
                                    "type": "object",
                                    "required": ["primaryLocationLineHash"],
                                    "additionalProperties": {"type": "string", "minLength": 1},
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}


#: The OASIS SARIF 2.1.0 schema (errata 01) and Jenkins' junit-10.xsd, vendored as test data (tests/data/README.md).
DATA = Path(__file__).resolve().parents[1] / "data"
OASIS_SARIF = json.loads((DATA / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))


def valid_sarif(doc: dict) -> dict:
    """``doc`` after checking it against the OASIS schema and GitHub's constraints."""
    jsonschema.Draft4Validator(OASIS_SARIF).validate(doc)
    jsonschema.validate(doc, GITHUB_SARIF)
    return doc


def test_sarif_of_a_scan_is_valid_and_complete() -> None:
    result = run_cli("scan", TINY, "--format", "sarif")
    assert result.exit_code == 1
    doc = valid_sarif(json.loads(result.stdout))
    run = doc["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == ["TA101", "TA103", "TA105", "TA202", "TA301", "TA302", "TA401", "TA810"]
    assert rules[0]["name"] == "vocab-gap" and rules[0]["defaultConfiguration"]["level"] == "error"
    # help and helpUri come from the rule's page, docs/rules/TA101.md
    page = rule_page("TA101")
    assert rules[0]["help"] == {"text": page.body, "markdown": page.body} and rules[0]["help"]["text"].startswith(
        "Severity: error"
    )
    assert rules[0]["fullDescription"]["text"] == page.sections["What it finds"]
    assert rules[0]["helpUri"] == f"{REPOSITORY_URL}/blob/v{__version__}/docs/rules/TA101.md"
    assert run["tool"]["driver"]["properties"]["versions"] == versions()
    assert run["columnKind"] == "unicodeCodePoints" and run["invocations"] == [{"executionSuccessful": True}]
    gap = run["results"][0]
    assert gap["ruleId"] == "TA101" and rules[gap["ruleIndex"]]["id"] == "TA101"
    # the real line and column of "vocab_size" in the fixture's config.json
    assert gap["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": f"{TINY.as_posix()}/config.json"},
        "region": {"startLine": 2, "startColumn": 3},
    }
    assert (TINY / "config.json").read_text().splitlines()[1].startswith('  "vocab_size":')
    assert gap["locations"][0]["logicalLocations"] == [{"name": "vocab_size", "kind": "member"}]
    assert gap["properties"]["ids"] == [[1003, 1003], [1006, 1023]]
    ph = next(r for r in run["results"] if r["ruleId"] == "TA105")
    assert ph["locations"][0]["physicalLocation"]["region"] == {"startLine": 26, "startColumn": 1}
    # no directory: a finding that names no file points at the vocabulary file
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"]}
    assert all(not (FIXTURES.parent / uri).is_dir() for uri in uris)


def test_sarif_fingerprints_are_where_github_reads_them_stable_and_line_free(tmp_path: Path) -> None:
    a = json.loads(run_cli("scan", TINY, "--format", "sarif").stdout)["runs"][0]["results"]
    b = json.loads(run_cli("scan", f"{TINY}/", "--format", "sarif").stdout)["runs"][0]["results"]
    # the same target given as an absolute path: the same fingerprints (the target's key is its path from the
    # project root); its URIs stay relative, since it lies below the working directory
    c = json.loads(run_cli("scan", TINY.resolve(), "--format", "sarif").stdout)["runs"][0]["results"]
    assert (
        [r["partialFingerprints"] for r in a]
        == [r["partialFingerprints"] for r in b]
        == [r["partialFingerprints"] for r in c]
    )
    assert [r["locations"] for r in a] == [r["locations"] for r in c]
    assert len({r["partialFingerprints"]["primaryLocationLineHash"] for r in a}) == len(a)
    assert all(
        r["partialFingerprints"]["primaryLocationLineHash"] == r["partialFingerprints"]["tokaudit/v1"] for r in a
    )


def test_sarif_uri_outside_the_working_directory_is_a_file_uri(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    target = tmp_path / "my model"
    shutil.copytree(TINY, target)
    monkeypatch.chdir(FIXTURES)  # the target is not below it
    doc = valid_sarif(json.loads(run_cli("scan", target, "--format", "sarif", "--select", "TA101").stdout))
    (gap,) = doc["runs"][0]["results"]
    assert gap["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (target / "config.json").as_uri()
    assert "my%20model" in (target / "config.json").as_uri()


def _compare_result(target: str) -> CompareResult:
    """A real compare of the tiny tiktoken fixture (tiktoken and the reference backend, the built-in corpus), named
    ``target``."""
    model = load_model(str(FIXTURES / "tiny-tiktoken"))
    result, _ = compare_model(model, CompareOptions(backends=["tiktoken", "reference"], sweep="off"))
    return replace(result, target=target, source=None)


def _scan_result(target: str) -> ScanResult:
    """A real scan of the tiny tiktoken fixture, named ``target``."""
    result, _ = scan_model(load_model(str(FIXTURES / "tiny-tiktoken")))
    return replace(result, target=target, source=None)


def _other_command_report() -> Report:
    crash = Finding(
        "TA605",
        "backend-crash",
        Severity.ERROR,
        "hf: PanicException: no entry found for key",
        location=Provenance("tiktoken.model", line=3),
        ids=IdRanges.from_ids([1003]),
        target="models/x",
    )
    return Report("compare", [_compare_result("models/x")], [crash])


def test_sarif_works_for_findings_of_other_commands() -> None:
    doc = valid_sarif(sarif_document(_other_command_report()))
    (rule,) = doc["runs"][0]["tool"]["driver"]["rules"]
    assert (
        rule["id"] == "TA605"
        and rule["name"] == "backend-crash"
        and rule["shortDescription"]["text"] == "An exception or Rust panic inside a backend."
    )
    (res,) = doc["runs"][0]["results"]
    assert res["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "models/x/tiktoken.model"},
        "region": {"startLine": 3, "startColumn": 1},
    }


def test_sarif_of_compare_points_at_the_vocabulary_file_not_the_directory() -> None:
    result = run_cli("compare", "fixtures/compare/changed-regex", "--backends", "tiktoken,hf", "--format", "sarif")
    doc = valid_sarif(json.loads(result.stdout))
    results = doc["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["TA601", "TA604"]
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results} == {
        "fixtures/compare/changed-regex/tokenizer.json"
    }


def test_sarif_and_junit_of_a_scan_with_an_unreadable_target(tmp_path: Path) -> None:
    missing = tmp_path / "gone"
    result = run_cli("scan", TINY, missing, "--format", "sarif")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == f"tokaudit: error: {missing}: no such file or directory"
    doc = valid_sarif(json.loads(result.stdout))
    run = doc["runs"][0]
    assert run["invocations"] == [
        {
            "executionSuccessful": False,
            "toolExecutionNotifications": [
                {
                    "level": "error",
                    "message": {"text": f"{missing}: no such file or directory"},
                    "properties": {"target": str(missing)},
                }
            ],
        }
    ]
    assert {r["properties"]["target"] for r in run["results"]} == {str(TINY)}
    junit = run_cli("scan", TINY, missing, "--format", "junit")
    assert junit.exit_code == 2
    root = ET.fromstring(junit.stdout)
    JUNIT_XSD.validate(junit.stdout)
    assert root.get("errors") == "1"
    (case,) = root.findall("testsuite")[1].findall("testcase")
    assert case.find("error").get("message") == f"{missing}: no such file or directory"


JUNIT_XSD = xmlschema.XMLSchema(DATA / "junit-10.xsd")


def _junit(*args: object) -> tuple[int, ET.Element]:
    result = run_cli("scan", *args, "--format", "junit")
    JUNIT_XSD.validate(result.stdout)
    return result.exit_code, ET.fromstring(result.stdout)


def test_junit_one_case_per_rule_per_target_failures_at_fail_on() -> None:
    code, root = _junit(TINY, CLEAN)
    assert code == 1
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [str(TINY), str(CLEAN)]
    for s in suites:
        cases = s.findall("testcase")
        assert len(cases) == int(s.get("tests")) == len([r for r in all_rules() if not r.deep])
        # the target is in the name: Jenkins splits a classname at its last dot
        assert all(
            c.get("classname") == "tokaudit.scan" and c.get("name").endswith(f" ({s.get('name')})") for c in cases
        )
        assert sum(1 for c in cases if c.find("failure") is not None) == int(s.get("failures"))
    tiny_cases = {c.get("name"): c for c in suites[0].findall("testcase")}
    name = f"TA101 vocab-gap ({TINY})"
    assert [n for n, c in tiny_cases.items() if c.find("failure") is not None] == [name]
    assert tiny_cases[name].find("failure").get("type") == "error"
    assert (
        tiny_cases[name]
        .find("failure")
        .text.startswith(f"[error] {TINY}/config.json:2 (vocab_size)\n19 ids in [0, 1024)")
    )
    assert "1003, 1006–1023" in tiny_cases[name].find("failure").text
    assert tiny_cases[f"TA202 eos-mismatch ({TINY})"].find("system-out") is not None  # a warning below --fail-on error
    assert root.get("tests") == str(2 * len([r for r in all_rules() if not r.deep])) and root.get("failures") == "1"
    props = {p.get("name"): p.get("value") for p in suites[0].find("properties")}
    assert props["tokaudit"] == __version__ and props["version.tiktoken"] == versions()["tiktoken"]


def test_junit_of_kimi_is_valid_with_whole_messages() -> None:
    code, root = _junit("fixtures/kimi-k2.5")
    assert code == 1
    failures = {c.get("name"): c.find("failure") for c in root.iter("testcase") if c.find("failure") is not None}
    assert sorted(failures) == [
        "TA101 vocab-gap (fixtures/kimi-k2.5)"
    ]  # TA802 is a warning: the tools' JSON spelled otherwise
    message = failures["TA101 vocab-gap (fixtures/kimi-k2.5)"].get("message")
    # cut at a word, past 300 characters: never inside "(e.g. ..." as a cut at the first ". " was
    assert message.startswith(
        "233 ids in [0, 163840) have no token for a loader that reads only the data files"
    ) and message.endswith(" …")
    assert len(message) <= 302 and "(e.g. 163589" in message


def test_junit_fail_on_warning_and_a_clean_run() -> None:
    _, root = _junit(TINY, "--fail-on", "warning")
    failed = [c.get("name").removesuffix(f" ({TINY})") for c in root.iter("testcase") if c.find("failure") is not None]
    assert failed == [
        "TA101 vocab-gap",
        "TA103 id-drift",
        "TA105 placeholder-encodable",
        "TA202 eos-mismatch",
        "TA301 slow-fallback-risk",
        "TA302 remote-code-required",
        "TA810 python-repr-leak",
    ]
    code, root = _junit(CLEAN, "--select", "TA1,TA2")
    assert (
        code == 0
        and root.get("failures") == "0"
        and root.get("tests") == str(len([r for r in all_rules() if r.code[:3] in ("TA1", "TA2")]))
    )


def test_junit_for_a_command_without_a_rule_list() -> None:
    out = io.StringIO()
    render_junit(Report("replay", [_compare_result("t")], []), out)
    JUNIT_XSD.validate(out.getvalue())
    (case,) = ET.fromstring(out.getvalue()).iter("testcase")
    assert case.get("name") == "no findings (t)" and case.get("classname") == "tokaudit.replay" and list(case) == []
    out = io.StringIO()
    render_junit(_other_command_report(), out, "error")
    JUNIT_XSD.validate(out.getvalue())
    (case,) = ET.fromstring(out.getvalue()).iter("testcase")
    assert (
        case.get("name") == "TA605 backend-crash (models/x)"
        and case.find("failure").get("message") == "hf: PanicException: no entry found for key"
    )


def test_concise_is_one_clickable_line_per_finding() -> None:
    result = run_cli("scan", "fixtures/kimi-k2.5", "--format", "concise")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert [line.split(": ")[0] for line in lines] == [
        "fixtures/kimi-k2.5/chat_template.jinja:1:1",
        "fixtures/kimi-k2.5/chat_template.jinja:1:1",
        "fixtures/kimi-k2.5/chat_template.jinja:1:1",
        "fixtures/kimi-k2.5/chat_template.jinja:1:1",
        "fixtures/kimi-k2.5/chat_template.jinja:1:1",
        "fixtures/kimi-k2.5/config.json:13:5",
        "fixtures/kimi-k2.5/config.json:17:5",
        "fixtures/kimi-k2.5/tiktoken.model:1:1",
        "fixtures/kimi-k2.5/tiktoken.model:1:1",
        "fixtures/kimi-k2.5/tokenization_kimi.py:26:1",
        "fixtures/kimi-k2.5/tokenizer_config.json:43:5",
        "fixtures/kimi-k2.5/tokenizer_config.json:206:5",
    ]
    assert lines[6].startswith(
        "fixtures/kimi-k2.5/config.json:17:5: TA101 vocab-gap 233 ids in [0, 163840) have no token"
    )
    assert result.stderr == "tokaudit scan: 1 error, 8 warnings, 3 notes\n"


def test_markdown_escapes_token_text_and_ends_with_versions() -> None:
    result = run_cli("scan", RULES / "special-tokens", "--format", "markdown", "--select", "TA203,TA205")
    md = result.stdout
    assert md.startswith("## tokaudit scan: ❌ FAIL\n\n1 error, 1 warning, 1 note (1 at or above `--fail-on error`)\n")
    assert f"### `{RULES / 'special-tokens'}`" in md
    rows = [
        line for line in md.splitlines() if line.startswith("| ❌") or line.startswith("| ⚠️") or line.startswith("| ℹ️")
    ]
    assert [row.split(" | ")[1] for row in rows] == ["TA205", "TA203", "TA203"]  # errors first
    assert "`fixtures/rules/special-tokens/chat_template.jinja:2`" in rows[0]
    assert "&lt;\\|im\\_middle\\|&gt;" in md and "<|im_middle|>" not in md  # token text is data, not HTML
    assert (
        md.rstrip().splitlines()[-1]
        == f"<sub>tokaudit {__version__} · "
        + md_escape(", ".join(f"{k} {v}" for k, v in versions().items()))
        + "</sub>"
    )


def test_github_annotation_escaping() -> None:
    assert escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert escape_property("a:b,c%d\ne") == "a%3Ab%2Cc%25d%0Ae"
    f = Finding(
        "TA202",
        "eos-mismatch",
        Severity.NOTE,
        "line one\nline: two, 50%",
        location=Provenance("x,y:z.json", key="k"),
        target="dir",
    )
    # what a finding quotes from a target is shown, never a line break (issue 34): the annotation is one line
    assert (
        annotation(f) == "::notice file=dir/x%2Cy%3Az.json,line=1,title=TA202 eos-mismatch::line one\\nline: two, 50%25"
    )
    hostile = Finding(
        "TA202",
        "eos-mismatch",
        Severity.NOTE,
        "eos <|end|>\r\n::error file=pwned.py::x \x1b[2J\u202e ##[error]y",
        location=Provenance("a\nb.json", key="k"),
        target="dir",
    )
    assert annotation(hostile) == (
        "::notice file=dir/a\\nb.json,line=1,title=TA202 eos-mismatch::"
        "eos <|end|>\\r\\n::error file=pwned.py::x \\u{001B}[2J\\u{202E} ##\\u{5B}error]y"
    )


def test_github_format_groups_per_target() -> None:
    result = run_cli("scan", TINY, "--format", "github", "--select", "TA101,TA401")
    lines = result.stdout.splitlines()
    assert lines[0] == f"::group::tokaudit scan {TINY}"
    assert lines[1].startswith(
        f"::error file={TINY}/config.json,line=2,col=3,title=TA101 vocab-gap::19 ids in [0, 1024)"
    )
    assert lines[2].startswith(
        f"::notice file={TINY}/tiktoken.model,line=1,title=TA401 partial-utf8-token::245 of 1000"
    )
    assert lines[3] == "::endgroup::"
    assert lines[4].startswith(f"tokaudit {__version__} scan: FAIL: 1 error, 0 warnings, 1 note (python ")
    assert result.exit_code == 1


@pytest.mark.parametrize("fmt", ["sarif", "junit", "markdown", "github"])
def test_every_machine_format_writes_to_output_and_keeps_stdout_clean(fmt: str, tmp_path) -> None:
    out = tmp_path / f"report.{fmt}"
    result = run_cli("scan", CLEAN, "--format", fmt, "--output", out)
    assert result.exit_code == 0 and result.stdout == ""
    assert out.read_text(encoding="utf-8").strip()
    # clean-bpe's template prints content as a string: typed content parts leak for transformers, and a reasoning-only
    # turn's null for smg and TGI (TA810, warnings)
    assert result.stderr == "tokaudit scan: 0 errors, 2 warnings, 1 note\n"


def test_json_report_is_byte_identical_to_json_dumps() -> None:
    """The JSON writer streams the document piece by piece (plain number lists such as id ranges in
    slices): the bytes must still be exactly ``json.dumps(doc, ensure_ascii=False)`` + newline."""
    from tokaudit.report.rows import write_json

    result = run_cli("scan", "fixtures/kimi-k2.5", "--format", "json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert result.stdout == json.dumps(doc, ensure_ascii=False) + "\n"
    ta101 = next(f for f in doc["findings"] if f["code"] == "TA101")
    assert ta101["ids"] == [[163589, 163589], [163592, 163592], [163600, 163600], [163608, 163837]]
    # lists longer than a slice, mixed numbers, tuples, strings, nested containers, empty ones
    synthetic = {
        "ranges": [[i, i + 1] for i in range(0, 30_000, 3)],
        "ids": list(range(9000)),
        "mixed": [1.5, None, True, 2],
        "tuples": ([1, 2], (3, 4)),
        "empty": [],
        "empties": [[]],
        "strings": ["a", "é\n"],
        "pairs": [[1, "x"]],
        "nested": {"a": {"b": [[1, 2]] * 5000, "c": [{"d": [1]}]}},
    }
    out = io.StringIO()
    write_json(synthetic, out)
    assert out.getvalue() == json.dumps(synthetic, ensure_ascii=False) + "\n"


def test_also_writes_more_formats_from_one_run(tmp_path: Path) -> None:
    sarif, junit, md = tmp_path / "r.sarif", tmp_path / "r.xml", tmp_path / "r.md"
    result = run_cli(
        "scan",
        TINY,
        "--format",
        "json",
        "--also",
        f"sarif={sarif}",
        "--also",
        f"junit={junit}",
        "--also",
        f"markdown={md}",
    )
    assert result.exit_code == 1
    codes = [f["code"] for f in json.loads(result.stdout)["findings"]]
    assert [r["ruleId"] for r in valid_sarif(json.loads(sarif.read_text()))["runs"][0]["results"]] == codes
    JUNIT_XSD.validate(junit.read_text())
    assert md.read_text().startswith("## tokaudit scan: ❌ FAIL\n")
    bad = run_cli("scan", TINY, "--also", "pdf=x.pdf")
    assert (bad.exit_code, bad.stderr.splitlines()[0]) == (
        2,
        "tokaudit: error: key --also: expected FORMAT=FILE with FORMAT one of "
        "rich, json, sarif, junit, markdown, github, concise, got 'pdf=x.pdf'",
    )
    lines = run_cli("scan", TINY, "--format", "jsonl", "--also", f"sarif={sarif}")
    assert lines.exit_code == 2 and "--format jsonl writes one per target" in lines.stderr


HOSTILE = "eos\x1b]0;pwned\x07\x1b[2J\x9b31m\u202e\u2066\u200b\x7f\r\n::error file=pwned.py::x ##[error]y"


def test_safe_shows_every_control_format_and_separator_character() -> None:
    """issue 34: the one function every renderer and error line applies to untrusted text."""
    from tokaudit.report.text import safe

    assert safe(HOSTILE) == (
        "eos\\u{001B}]0;pwned\\u{0007}\\u{001B}[2J\\u{009B}31m\\u{202E}\\u{2066}\\u{200B}\\u{007F}\\r\\n"
        "::error file=pwned.py::x ##\\u{5B}error]y"
    )
    assert safe("plain text, été 東京 🚀 <|im_end|> std::vector") == "plain text, été 東京 🚀 <|im_end|> std::vector"
    assert safe("\x00\t\u2028\u2029\ud800") == "\\0\\t\\u{2028}\\u{2029}\\u{D800}"


def test_the_report_stream_guard_keeps_json_meaning_and_breaks_workflow_commands() -> None:
    from tokaudit.report.text import guard_output

    doc = json.dumps({"eos": HOSTILE}, ensure_ascii=False)
    guarded = guard_output(doc, "json", True)
    assert json.loads(guarded) == {"eos": HOSTILE}  # the same document
    assert guarded.isascii() and "##[" not in guarded
    text = "report\n  ::error file=pwned.py::x\n\x1b[1mbold\x1b[0m \x1b]0;t\x07 ##[warning]w\n"
    assert guard_output(text, "text", True) == (
        "report\n  \\u{3A}:error file=pwned.py::x\n\x1b[1mbold\x1b[0m \\u{001B}]0;t\\u{0007} ##\\u{5B}warning]w\n"
    )
    assert guard_output("::x", "text", True) == "\\u{3A}:x" and guard_output("::x", "text", False) == "::x"
    assert guard_output("::error file=a::m\n", "commands", True) == "::error file=a::m\n"  # --format github's own


@pytest.mark.parametrize("fmt", ["rich", "markdown", "github", "junit", "sarif", "json"])
def test_no_format_writes_a_raw_control_character_or_a_workflow_command(fmt: str) -> None:
    """Each renderer through the report stream (its guard), on a finding whose message and key are hostile."""
    from tokaudit.cli.report_stream import ValidText
    from tokaudit.report.render_github import render_github
    from tokaudit.report.render_markdown import render_markdown
    from tokaudit.report.render_rich import render_rich

    f = Finding(
        "TA202", "eos-mismatch", Severity.ERROR, HOSTILE, location=Provenance("x.json", key=HOSTILE), target="t"
    )
    report = Report("scan", [_scan_result("t")], [f])
    buf = io.StringIO()
    stream = ValidText(buf, {"json": "json", "sarif": "json", "github": "commands"}.get(fmt, "text"))
    if fmt == "rich":
        render_rich(report, stream, color="never", quiet=True)
    elif fmt == "markdown":
        render_markdown(report, stream)
    elif fmt == "github":
        render_github(report, stream)
    elif fmt == "junit":
        render_junit(report, stream)
    elif fmt == "sarif":
        json.dump(sarif_document(report), stream, ensure_ascii=False)
    else:
        json.dump({"message": f.message}, stream, ensure_ascii=False)
    stream.flush()
    written = buf.getvalue()
    assert not any(c in written for c in "\x07\x1b\x7f\x9b\u202e\u2066\u200b\r") and "##[" not in written
    for line in written.splitlines():
        if line.lstrip().startswith("::"):
            assert fmt == "github" and "pwned" not in line.lstrip()[2:].split("::", 1)[0], line
    if fmt == "json":
        assert json.loads(written) == {"message": HOSTILE}  # data stays data
    elif fmt == "sarif":
        from tokaudit.report.text import safe

        assert json.loads(written)["runs"][0]["results"][0]["message"]["text"] == safe(HOSTILE)  # shown to people
