"""``--format json``: one JSON object on stdout, per the contract in DESIGN.md."""

from __future__ import annotations

import json
from typing import Any, TextIO

from tokaudit.report.report import Report, tool_version, versions


def report_document(report: Report) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "tokaudit": tool_version(),
        "command": report.command,
        "target": report.targets[0] if len(report.targets) == 1 else None,
        "versions": versions(),
        "findings": [f.to_json() for f in report.findings],
        "summary": report.summary(),
    }
    if len(report.results) == 1:
        doc.update(report.results[0].data)
    doc["targets"] = [{"target": r.target, **r.data} for r in report.results]
    return doc


def render_json(report: Report, stream: TextIO) -> None:
    # One line, written by the C encoder (``indent`` would force the pure-Python one: ~10x slower
    # on reports with many id ranges). Pipe through ``jq`` or ``python -m json.tool`` to read it.
    # Lazy rows (replay --steps) are streamed in batches of rows instead of built into the string.
    from tokaudit.report.rows import write_json

    write_json(report_document(report), stream)
