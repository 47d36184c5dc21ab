"""``--format sarif``: SARIF 2.1.0 as GitHub code scanning reads it (one run; rules with ids, names, help from
their page and a ``helpUri``; results with a message, a file location with line and column, and the
fingerprint under ``partialFingerprints.primaryLocationLineHash``, the key GitHub matches alerts by).
Works for any command's findings.

Locations are always files: a finding that names none points at the target's vocabulary file. A local file is
a URI relative to the working directory (the repository root in CI) when it lies below it, else a ``file://``
URI; a Hub repo's file is its address on the Hub at the commit the repo id resolved to.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote

from tokaudit.report.baseline import fingerprint
from tokaudit.report.finding import Finding
from tokaudit.report.locations import finding_column, finding_line, finding_path, rule_summary, with_file
from tokaudit.report.report import CommandResult, Report, tool_version, versions
from tokaudit.rule_docs import rule_page, rule_url
from tokaudit.report.text import safe

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://pypi.org/project/tokaudit/"
#: GitHub shows at most 1024 characters of a rule's short description.
MAX_SHORT_DESCRIPTION = 1024


def _rule(code: str, name: str, level: str) -> dict[str, Any]:
    summary = (rule_summary(code) or name.replace("-", " "))[:MAX_SHORT_DESCRIPTION]
    page = rule_page(code)
    what = page.sections.get("What it finds") if page is not None else None
    help_text = page.body if page is not None else f"{summary}\n"
    return {
        "id": code,
        "name": name,
        "shortDescription": {"text": summary},
        "fullDescription": {"text": what or summary},
        "help": {"text": help_text, "markdown": help_text},
        "helpUri": rule_url(code),
        "defaultConfiguration": {"level": level},
        "properties": {"tags": ["tokenizer", code[:3]]},
    }


def artifact_uri(f: Finding, result: CommandResult | None) -> str:
    """Where ``f``'s file is, as a URI (see the module's docstring)."""
    source = result.source if result is not None else None
    if source is not None and f.location is not None:
        url = source.file_url(f.location.file)
        if url is not None:
            return url
    path = finding_path(f)
    local = Path(path)
    if local.is_absolute():
        try:
            path = local.resolve().relative_to(Path.cwd().resolve()).as_posix()
        except (ValueError, OSError):
            return local.as_uri()
    return quote(path.replace("\\", "/"))


def sarif_document(report: Report) -> dict[str, Any]:
    rules: dict[str, dict[str, Any]] = {}
    for f in sorted(report.findings, key=lambda f: f.code):
        rules.setdefault(f.code, _rule(f.code, f.name, f.severity.value))
    index = {code: i for i, code in enumerate(rules)}
    by_target = {r.target: r for r in report.results}
    results = []
    for f in report.findings:
        result_of = by_target.get(f.target)
        key = result_of.source.key if result_of is not None and result_of.source is not None else None
        shown = with_file(f, result_of)
        region: dict[str, Any] = {"startLine": finding_line(shown), "startColumn": finding_column(shown)}
        fp = fingerprint(f, key)
        result: dict[str, Any] = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": f.severity.value,
            "message": {"text": safe(f.message)},  # shown to people (code scanning, PR annotations)
            "locations": [
                {"physicalLocation": {"artifactLocation": {"uri": artifact_uri(shown, result_of)}, "region": region}}
            ],
            # GitHub matches alerts across runs by primaryLocationLineHash alone (upload-sarif fills it from the
            # line's text when absent, which would make every finding on one line one alert)
            "partialFingerprints": {"primaryLocationLineHash": fp, "tokaudit/v1": fp},
            "properties": {"target": f.target, "name": f.name},
        }
        if f.location is not None and f.location.key:
            result["locations"][0]["logicalLocations"] = [{"name": safe(f.location.key), "kind": "member"}]
        if f.ids is not None:
            result["properties"]["ids"] = f.ids.to_json()[:100]
            result["properties"]["count"] = f.ids.count
        results.append(result)
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "tokaudit",
                "semanticVersion": tool_version(),
                "version": tool_version(),
                "informationUri": INFORMATION_URI,
                "rules": list(rules.values()),
                "properties": {"versions": versions()},
            }
        },
        "automationDetails": {"id": f"tokaudit/{report.command}/"},
        "columnKind": "unicodeCodePoints",
        "invocations": [_invocation(report)],
        "results": results,
        "properties": {
            "command": report.command,
            "targets": report.targets,
            "summary": report.summary(),
            "sources": {r.target: r.source.to_json() for r in report.results if r.source is not None},
        },
    }
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}


def _invocation(report: Report) -> dict[str, Any]:
    """The run as SARIF's invocation: successful unless a target could not be read (each is a notification)."""
    out: dict[str, Any] = {"executionSuccessful": not report.unreadable}
    if report.unreadable:
        out["toolExecutionNotifications"] = [
            {"level": "error", "message": {"text": error}, "properties": {"target": target}}
            for target, error in report.unreadable.items()
        ]
    return out


def render_sarif(report: Report, stream: TextIO) -> None:
    json.dump(sarif_document(report), stream, indent=2, ensure_ascii=False)
    stream.write("\n")
