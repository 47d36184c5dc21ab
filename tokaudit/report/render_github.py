"""``--format github``: GitHub Actions workflow commands, one annotation per finding, grouped per target.

Escaping follows actions/toolkit ``command.ts``: in the message ``%``, CR and LF; in property values
also ``:`` and ``,``; before that, what a finding quotes from the target is made visible (:func:`safe`), so
that it cannot end the command's line.
"""

from __future__ import annotations

from typing import TextIO

from tokaudit.report.finding import Finding
from tokaudit.report.locations import finding_line, finding_path, with_file
from tokaudit.report.report import Report, tool_version, versions
from tokaudit.report.text import safe, severity_counts

_COMMAND = {"error": "error", "warning": "warning", "note": "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(f: Finding) -> str:
    props = {"file": finding_path(f), "line": str(finding_line(f))}
    if f.location is not None and f.location.column is not None:
        props["col"] = str(f.location.column)
    props["title"] = f"{f.code} {f.name}"
    joined = ",".join(f"{k}={escape_property(safe(v))}" for k, v in props.items())
    return f"::{_COMMAND[f.severity.value]} {joined}::{escape_data(safe(f.message))}"


def render_github(report: Report, stream: TextIO, fail_on: str = "error") -> None:
    for result in report.results:
        findings = sorted(
            (with_file(f, result) for f in report.findings if f.target == result.target),
            key=lambda f: (-f.severity.rank, f.code),
        )
        commit = result.source.commit if result.source is not None and result.source.repo_id is not None else None
        title = f"tokaudit {report.command} {result.target}" + (f" @ {commit}" if commit else "")
        stream.write(f"::group::{escape_data(safe(title))}\n")
        for f in findings:
            stream.write(annotation(f) + "\n")
        stream.write("::endgroup::\n")
    for target, error in report.unreadable.items():
        stream.write(f"::error title={escape_property('tokaudit: unreadable target')}::{escape_data(error)}\n")
    s = report.summary()
    lib = ", ".join(f"{k} {v}" for k, v in versions().items())
    verdict = ("FAIL: " if report.failing(fail_on) else "PASS: ") if report.judged else ""  # explain/decode only report
    missing = f"; not checked: {', '.join(report.not_checked())}" if report.not_checked() else ""
    stream.write(f"tokaudit {tool_version()} {report.command}: {verdict}{severity_counts(s)}{missing} ({lib})\n")
