"""``--format json``: one JSON object on stdout, per the contract in DESIGN.md."""

from __future__ import annotations

from typing import Any, TextIO

from tokaudit.report.report import CommandResult, Report, tool_version, versions

#: Version of the document's shape, described by ``tokaudit/report/report.schema.json``: raised when a key
#: changes meaning or goes away (new keys do not raise it).
SCHEMA_VERSION = 1


def report_document(report: Report) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "tokaudit": tool_version(),
        "schema_version": SCHEMA_VERSION,
        "command": report.command,
        "target": report.targets[0] if len(report.targets) == 1 else None,
        "versions": versions(),
        "findings": [f.to_json() for f in report.findings],
        "summary": report.summary(),
    }
    keys = [r.to_json() for r in report.results]
    if len(report.results) == 1:
        doc["origin"] = _origin(report.results[0])
        doc.update(keys[0])
    doc["targets"] = [{"target": r.target, "origin": _origin(r), **k} for r, k in zip(report.results, keys)]
    if report.unreadable:
        doc["unreadable"] = [{"target": t, "error": e} for t, e in report.unreadable.items()]
    return doc


def _origin(result: CommandResult) -> dict[str, Any] | None:
    """Where the target's files came from: the key baselines know it by and, for a Hub repo id, the revision
    asked for, the commit it resolved to and its web address."""
    return result.source.to_json() if result.source is not None else None


def render_json(report: Report, stream: TextIO) -> None:
    # One line, written by the C encoder (``indent`` would force the pure-Python one: ~10x slower
    # on reports with many id ranges). Pipe through ``jq`` or ``python -m json.tool`` to read it.
    # Lazy rows (replay --steps) are streamed in batches of rows instead of built into the string.
    from tokaudit.report.rows import write_json

    write_json(report_document(report), stream)
