"""``--format sarif``: SARIF 2.1.0 as GitHub code scanning accepts it (one run, rules with ids and names,
results with a message, a location and partialFingerprints). Works for any command's findings."""

from __future__ import annotations

import json
from typing import Any, TextIO

from tokaudit.report.baseline import fingerprint
from tokaudit.report.locations import finding_line, finding_path, rule_summary
from tokaudit.report.report import Report, tool_version, versions

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://pypi.org/project/tokaudit/"


def _rule(code: str, name: str, level: str) -> dict[str, Any]:
    summary = rule_summary(code) or name.replace("-", " ")
    return {
        "id": code,
        "name": name,
        "shortDescription": {"text": summary},
        "fullDescription": {"text": f"{code} {name}: {summary}"},
        "help": {"text": f"{summary} See the Rules table in tokaudit's README for {code}.",
                 "markdown": f"**{code} `{name}`**: {summary}"},
        "defaultConfiguration": {"level": level},
        "properties": {"tags": ["tokenizer", code[:3]]},
    }


def sarif_document(report: Report) -> dict[str, Any]:
    rules: dict[str, dict[str, Any]] = {}
    for f in sorted(report.findings, key=lambda f: f.code):
        rules.setdefault(f.code, _rule(f.code, f.name, f.severity.value))
    index = {code: i for i, code in enumerate(rules)}
    results = []
    for f in report.findings:
        region: dict[str, Any] = {"startLine": finding_line(f)}
        result: dict[str, Any] = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": f.severity.value,
            "message": {"text": f.message},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": finding_path(f)}, "region": region}}],
            "partialFingerprints": {"tokaudit/v1": fingerprint(f)},
            "properties": {"target": f.target, "name": f.name},
        }
        if f.location is not None and f.location.key:
            result["locations"][0]["logicalLocations"] = [{"name": f.location.key, "kind": "member"}]
        if f.ids is not None:
            result["properties"]["ids"] = f.ids.to_json()[:100]
            result["properties"]["count"] = f.ids.count
        results.append(result)
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "tokaudit",
                "semanticVersion": tool_version(),
                "version": tool_version(),
                "informationUri": INFORMATION_URI,
                "rules": list(rules.values()),
                "properties": {"versions": versions()},
            }},
            "automationDetails": {"id": f"tokaudit/{report.command}/"},
            "results": results,
            "properties": {"command": report.command, "targets": report.targets, "summary": report.summary()},
        }],
    }


def render_sarif(report: Report, stream: TextIO) -> None:
    json.dump(sarif_document(report), stream, indent=2, ensure_ascii=False)
    stream.write("\n")
