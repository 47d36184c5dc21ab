"""``--format rich`` (default): what a person wants to see first. Token text is data: built with
``rich.text.Text`` (never markup) and shown with invisible characters made visible."""

from __future__ import annotations

import os
import re
from typing import TextIO

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from tokaudit.report.finding import Finding, Severity
from tokaudit.report.locations import finding_path
from tokaudit.report.report import CommandResult, Report
from tokaudit.report.text import safe, severity_counts

SEVERITY_STYLE = {
    Severity.ERROR: "bold white on red",
    Severity.WARNING: "bold black on yellow",
    Severity.NOTE: "bold white on blue",
}

#: Width of a report written to a file or a pipe when ``COLUMNS`` is not set.
PIPE_WIDTH = 120
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_TRAILING_SPACE = re.compile(r"(?:[ \t]|\x1b\[[0-9;]*m)+$", re.MULTILINE)


def _strip_trailing(text: str) -> str:
    """Trailing spaces cut from every line; style codes among them are kept (a reset must stay)."""
    return _TRAILING_SPACE.sub(lambda m: "".join(_ANSI.findall(m.group())), text)


class _TrimmedLines:
    """The console's file: passes whole lines on as rich writes them (a long replay timeline streams),
    each without the trailing spaces rich pads table cells with."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.pending = ""

    def write(self, text: str) -> int:
        head, newline, self.pending = (self.pending + text).rpartition("\n")
        if newline:
            self.stream.write(_strip_trailing(head + newline))
        return len(text)

    def flush(self) -> None:
        if self.pending:
            self.stream.write(_strip_trailing(self.pending))
            self.pending = ""
        self.stream.flush()


class _ReportConsole(Console):
    def on_broken_pipe(self) -> None:
        """Rich exits with status 1 on a closed pipe (``| head``); let the caller keep the report's exit code."""
        self.quiet = True
        raise BrokenPipeError


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def make_console(stream: TextIO, color: str = "auto") -> Console:
    """A console for ``stream`` as ``--color`` and the environment ask: ``auto`` colours a terminal
    (rich honours ``NO_COLOR`` and ``FORCE_COLOR``), ``always``/``never`` override both. Width:
    ``COLUMNS`` when set, else the terminal's, else :data:`PIPE_WIDTH` for files and pipes."""
    terminal = _is_terminal(stream)
    columns = os.environ.get("COLUMNS", "")
    # explicit: rich itself would use 80 columns for TERM=dumb whatever COLUMNS says
    width = int(columns) if columns.isdigit() and int(columns) > 0 else None if terminal else PIPE_WIDTH
    # a height too: rich ignores a width without one when TERM is dumb
    options: dict[str, object] = {
        "file": stream,
        "markup": False,
        "emoji": False,
        "highlight": False,
        "width": width,
        "height": 25 if width is not None else None,
    }
    if color == "never":
        return _ReportConsole(**options, color_system=None)  # type: ignore[arg-type]  # options: Console's own types
    if color == "always" or os.environ.get("FORCE_COLOR"):
        no_color = False if color == "always" else None  # --color always beats NO_COLOR; FORCE_COLOR does not
        console = _ReportConsole(**options, force_terminal=True, no_color=no_color)  # type: ignore[arg-type]  # as above
        if console.color_system is None:  # TERM=dumb or unknown: colours were asked for all the same
            console = _ReportConsole(
                **options,  # type: ignore[arg-type]  # as above
                force_terminal=True,
                no_color=no_color,
                color_system="standard",
            )
        return console
    return _ReportConsole(**options, force_terminal=True if terminal else None)  # type: ignore[arg-type]  # as above


def _finding(console: Console, f: Finding) -> None:
    head = Text()
    head.append(f" {f.severity.value.upper()} ", style=SEVERITY_STYLE[f.severity])
    head.append(f" {f.code} {f.name}", style="bold")
    location = Text(safe(_where(f)), style="dim") if f.location else None
    if location is not None and head.cell_len + 2 + location.cell_len <= console.width:
        head.append("  ")
        head.append(location)
        location = None
    console.print(head)
    if location is not None:  # too long for the heading line: its own line, indented like the message
        console.print(Padding(location, (0, 0, 0, 2), expand=False))
    console.print(Padding(Text(safe(f.message)), (0, 0, 0, 2), expand=False))
    if f.ids is not None and f.ids:
        console.print(
            Padding(
                Text(f"ids: {f.ids.describe(limit=12)}  (count {f.ids.count})", style="cyan"),
                (0, 0, 0, 2),
                expand=False,
            )
        )


def _where(f: Finding) -> str:
    """``config.json:17 (text_config.vocab_size)``: the file, its line when known, the key."""
    loc = f.location
    if loc is None:
        return ""
    where = loc.file if loc.line is None else f"{loc.file}:{loc.line}"
    return f"{where} ({loc.key})" if loc.key else where


#: Lines of the closing summary; past this, one line says how many more.
SUMMARY_LINES = 10


def closing_summary(report: Report, fail_on: str) -> list[Text]:
    """One line per finding at or above ``--fail-on`` (``TA101 vocab-gap  fixtures/kimi-k2.5/config.json:17  233
    ids``), after the findings and just above the verdict: the last screen of a failing run names what failed.
    Findings that would give the same line (TA802 for two stacks) share it, counted: ``×2``."""
    failing = sorted(report.failing(fail_on), key=lambda f: (-f.severity.rank, f.code))
    rows: dict[tuple[str, str, str], list[Finding]] = {}
    for f in failing:
        where = finding_path(f) + (
            f":{f.location.line}" if f.location is not None and f.location.line is not None else ""
        )
        ids = "" if f.ids is None or not f.ids else f"{f.ids.count} id" + ("" if f.ids.count == 1 else "s")
        rows.setdefault((f"{f.code} {f.name}", where, ids), []).append(f)
    lines = []
    for (title, where, ids), found in list(rows.items())[:SUMMARY_LINES]:
        line = Text(title, style=_SUMMARY_STYLE[found[0].severity])
        line.append(f"  {where}")
        if ids:
            line.append(f"  {ids}", style="cyan")
        if len(found) > 1:
            line.append(f"  ×{len(found)}")
        lines.append(line)
    if len(rows) > SUMMARY_LINES:
        lines.append(Text(f"… and {len(rows) - SUMMARY_LINES} more"))
    return lines


_SUMMARY_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "bold yellow", Severity.NOTE: "bold blue"}


def _at_commit(result: CommandResult) -> str:
    """`` @ 0123456789ab (main)`` for a Hub target: the commit it resolved to and the revision asked for."""
    source = result.source
    if source is None or source.repo_id is None or source.commit is None:
        return ""
    return f" @ {source.commit[:12]} ({source.revision or 'main'})"


def _heading(command: str, target: str) -> Table:
    """``tokaudit scan  TARGET``; a long target folds under itself, never back to column 0."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row(Text(f"tokaudit {command}", style="bold underline"), Text(safe(target), style="bold underline"))
    return grid


def verdict(report: Report, fail_on: str) -> Table:
    """``✓ PASS: 0 errors, 1 warning, 0 notes (--fail-on error; 7 baselined, 2 ignored)``, wrapped under
    its counts on a narrow terminal."""
    s = report.summary()
    counts = severity_counts(s)
    dropped = ", ".join(f"{n} {kind}" for kind, n in report.suppressed().items() if n)
    failing = report.failing(fail_on)
    why = f"{len(failing)} at or above --fail-on {fail_on}" if failing else f"--fail-on {fail_on}"
    if dropped:
        why += f"; {dropped}"
    missing = report.not_checked()
    if missing:
        why += f"; not checked: {', '.join(missing)}"
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column()
    style = "bold red" if failing else "bold green"
    grid.add_row(Text("✗ FAIL:" if failing else "✓ PASS:", style=style), Text(f"{counts} ({why})", style=style))
    return grid


def render_rich(
    report: Report, stream: TextIO, fail_on: str = "error", *, color: str = "auto", quiet: bool = False
) -> None:
    """The report for a person. ``quiet``: findings and the verdict only (no sections)."""
    console = make_console(stream, color)
    console.file = out = _TrimmedLines(stream)  # type: ignore[assignment]  # writes like the TextIO it wraps
    for result in report.results:
        findings = [f for f in report.findings if f.target == result.target]
        if not quiet or (len(report.results) > 1 and findings):
            console.print(_heading(report.command, result.target + _at_commit(result)))
        if not quiet:
            result.rich(console)
            console.print()
        for f in sorted(findings, key=lambda f: (-f.severity.rank, f.code)):
            _finding(console, f)
            console.print()
    if report.judged:
        for line in closing_summary(report, fail_on):
            console.print(Padding(line, (0, 0, 0, 2), expand=False))
        console.print(verdict(report, fail_on))
    out.flush()
