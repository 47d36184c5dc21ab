"""``--format concise``: one line per finding, ``path:line:col: CODE name message``, as ruff and compilers print
them, so that an editor or a terminal opens the file at the line. Findings sorted by path and position; the
counts go to stderr as for every machine format."""

from __future__ import annotations

from typing import TextIO

from tokaudit.report.finding import Finding
from tokaudit.report.locations import finding_column, finding_line, finding_path, with_file
from tokaudit.report.report import Report


def concise_line(f: Finding) -> str:
    """``fixtures/kimi-k2.5/config.json:17:5: TA101 vocab-gap 233 ids in [0, 163840) ...`` (one line)."""
    message = f.message.replace("\r", " ").replace("\n", " ")
    return f"{finding_path(f)}:{finding_line(f)}:{finding_column(f)}: {f.code} {f.name} {message}"


def render_concise(report: Report, stream: TextIO) -> None:
    """A finding that names no file (replay, compare) points at its target's vocabulary file."""
    results = {r.target: r for r in report.results}
    order = {r.target: i for i, r in enumerate(report.results)}
    shown = [with_file(f, results.get(f.target)) for f in report.findings]
    for f in sorted(
        shown,
        key=lambda f: (order.get(f.target, len(order)), finding_path(f), finding_line(f), finding_column(f), f.code),
    ):
        stream.write(concise_line(f) + "\n")
