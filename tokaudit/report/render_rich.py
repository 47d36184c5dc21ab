"""``--format rich`` (default): what a person wants to see first. Token text is data: built with
``rich.text.Text`` (never markup) and shown with invisible characters made visible."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TextIO

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from tokaudit.report.finding import Finding, Severity
from tokaudit.report.report import Report, TargetResult
from tokaudit.report.text import plural

SEVERITY_STYLE = {Severity.ERROR: "bold white on red", Severity.WARNING: "bold black on yellow", Severity.NOTE: "bold white on blue"}

Section = Callable[[Console, TargetResult], None]


class _ReportConsole(Console):
    def on_broken_pipe(self) -> None:
        """Rich exits with status 1 on a closed pipe (``| head``); let the caller keep the report's exit code."""
        self.quiet = True
        raise BrokenPipeError


def make_console(stream: TextIO) -> Console:
    console = _ReportConsole(file=stream, markup=False, emoji=False, highlight=False)
    if not console.is_terminal:  # files and pipes: wide lines rather than wrapping at 80 columns
        console.width = 120
    return console


def _kv(console: Console, key: str, value: str | Text) -> None:
    line = Text(f"  {key:<11} ", style="bold")
    line.append(value if isinstance(value, Text) else Text(value))
    console.print(line)


def scan_section(console: Console, result: TargetResult) -> None:
    vocab: dict[str, Any] = result.data["vocab"]
    sizes = vocab["sizes"]
    declared = vocab["declared_size"]
    _kv(console, "vocabulary", f"{vocab['vocab_artifact']} · declared size "
        f"{declared if declared is not None else '—'} ({vocab['declared_by']})")
    labels = {
        "entries": "entries",
        "max_rank_plus_one": "max rank+1",
        "max_added_plus_one": "max added id+1",
        "config_vocab_size": "config vocab_size",
        "embedding_rows": "embedding rows",
    }
    _kv(console, "sizes", " · ".join(f"{label} {sizes[k] if sizes[k] is not None else '—'}" for k, label in labels.items()))
    profiles = " │ ".join(f"{name}: {p['mapped']} mapped, {p['unmapped']} unmapped" for name, p in vocab["profiles"].items())
    _kv(console, "id tables", profiles)
    files = Table(box=None, show_header=False, padding=(0, 1), pad_edge=False)
    for row in result.data["artifacts"]:
        files.add_row(Text(row["file"]), Text(row["kind"], style="dim"), Text("" if row["entries"] is None else str(row["entries"])))
    console.print(Text("  artifacts", style="bold"))
    console.print(Padding(files, (0, 0, 0, 4), expand=False))
    if result.data.get("loaders"):
        _loader_table(console, result.data["loaders"])


def _loader_table(console: Console, loaders: list[dict[str, Any]]) -> None:
    """Which files each loader reads by its precedence, and whether it sees a gap."""
    table = Table(box=None, show_header=True, header_style="dim", padding=(0, 1), pad_edge=False)
    for col in ("loader", "gap", "files (and the rule that picked them)"):
        table.add_column(col)
    for row in loaders:
        if row["sees_gap"] is None:
            gap = Text("cannot load", style="yellow")
        elif row["sees_gap"]:
            gap = Text(f"{row['unmapped']} unmapped", style="red")
        else:
            gap = Text("none", style="green")
        files = Text(", ".join(row["files"]) or "—")
        files.append("\n")
        files.append(row["rule"], style="dim")
        table.add_row(Text(row["loader"]), gap, files)
    console.print(Text("  loaders", style="bold"))
    console.print(Padding(table, (0, 0, 0, 4), expand=False))


SECTIONS: dict[str, Section] = {"scan": scan_section}

from tokaudit.report.rich_replay import replay_section  # noqa: E402

SECTIONS["replay"] = replay_section

from tokaudit.report.rich_compare import compare_section  # noqa: E402

SECTIONS["compare"] = compare_section

from tokaudit.report.rich_oncall import (  # noqa: E402
    decode_section,
    diff_section,
    encode_section,
    explain_section,
    fuzz_section,
)

SECTIONS.update(explain=explain_section, decode=decode_section, encode=encode_section, fuzz=fuzz_section, diff=diff_section)


def _finding(console: Console, f: Finding) -> None:
    head = Text()
    head.append(f" {f.severity.value.upper()} ", style=SEVERITY_STYLE[f.severity])
    head.append(f" {f.code} {f.name}", style="bold")
    if f.location:
        head.append(f"  {f.location}", style="dim")
    console.print(head)
    console.print(Padding(Text(f.message), (0, 0, 0, 2), expand=False))
    if f.ids is not None and f.ids:
        console.print(Padding(Text(f"ids: {f.ids.describe(limit=12)}  (count {f.ids.count})", style="cyan"), (0, 0, 0, 2), expand=False))


def verdict(report: Report, fail_on: str) -> Text:
    s = report.summary()
    counts = f"{plural(s['error'], 'error')}, {plural(s['warning'], 'warning')}, {plural(s['note'], 'note')}"
    failing = report.failing(fail_on)
    if failing:
        return Text(f"✗ FAIL: {counts} ({len(failing)} at or above --fail-on {fail_on})", style="bold red")
    return Text(f"✓ PASS: {counts} (--fail-on {fail_on})", style="bold green")


def render_rich(report: Report, stream: TextIO, fail_on: str = "error") -> None:
    console = make_console(stream)
    for result in report.results:
        console.print(Text(f"tokaudit {report.command}  {result.target}", style="bold underline"))
        section = SECTIONS.get(report.command)
        if section:
            section(console, result)
        console.print()
        findings = [f for f in report.findings if f.target == result.target]
        for f in sorted(findings, key=lambda f: (-f.severity.rank, f.code)):
            _finding(console, f)
            console.print()
    console.print(verdict(report, fail_on))
