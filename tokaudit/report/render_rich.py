"""``--format rich`` (default): what a person wants to see first. Token text is data: built with
``rich.text.Text`` (never markup) and shown with invisible characters made visible."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any, TextIO

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from tokaudit.report.finding import Finding, Severity
from tokaudit.report.locations import finding_path
from tokaudit.report.report import Report, TargetResult
from tokaudit.report.rich_layout import key_value
from tokaudit.report.text import safe, severity_counts, visible

SEVERITY_STYLE = {
    Severity.ERROR: "bold white on red",
    Severity.WARNING: "bold black on yellow",
    Severity.NOTE: "bold white on blue",
}

Section = Callable[[Console, TargetResult], None]


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
        return _ReportConsole(**options, color_system=None)  # type: ignore[arg-type]
    if color == "always" or os.environ.get("FORCE_COLOR"):
        no_color = False if color == "always" else None  # --color always beats NO_COLOR; FORCE_COLOR does not
        console = _ReportConsole(**options, force_terminal=True, no_color=no_color)  # type: ignore[arg-type]
        if console.color_system is None:  # TERM=dumb or unknown: colours were asked for all the same
            console = _ReportConsole(**options, force_terminal=True, no_color=no_color, color_system="standard")  # type: ignore[arg-type]
        return console
    return _ReportConsole(**options, force_terminal=True if terminal else None)  # type: ignore[arg-type]


def _kv(console: Console, key: str, value: str | Text) -> None:
    key_value(console, key, value)


def scan_section(console: Console, result: TargetResult) -> None:
    vocab: dict[str, Any] = result.data["vocab"]
    sizes = vocab["sizes"]
    declared = vocab["declared_size"]
    _kv(
        console,
        "vocabulary",
        f"{vocab['vocab_artifact']} · declared size "
        f"{declared if declared is not None else '—'} ({vocab['declared_by']})",
    )
    labels = {
        "entries": "entries",
        "max_rank_plus_one": "max rank+1",
        "max_added_plus_one": "max added id+1",
        "config_vocab_size": "config vocab_size",
        "embedding_rows": "embedding rows",
    }
    _kv(
        console,
        "sizes",
        " · ".join(f"{label} {sizes[k] if sizes[k] is not None else '—'}" for k, label in labels.items()),
    )
    profiles = " │ ".join(
        f"{name}: {p['mapped']} mapped, {p['unmapped']} unmapped" for name, p in vocab["profiles"].items()
    )
    _kv(console, "id tables", profiles)
    files = Table(box=None, show_header=False, padding=(0, 1), pad_edge=False)
    for row in result.data["artifacts"]:
        files.add_row(
            Text(safe(row["file"])),
            Text(row["kind"], style="dim"),
            Text("" if row["entries"] is None else str(row["entries"])),
        )
    console.print(Text("  artifacts", style="bold"))
    console.print(Padding(files, (0, 0, 0, 4), expand=False))
    if result.data.get("loaders"):
        _loader_table(console, result.data["loaders"])
    if result.data.get("gguf"):
        _gguf_section(console, result.data["gguf"])


def _tok(entry: dict[str, Any] | None) -> Text:
    if entry is None or entry.get("id") is None:
        return Text("—", style="dim")
    out = Text(str(entry["id"]))
    if entry.get("token") is not None:
        out.append(" ")
        out.append(visible(entry["token"]), style="cyan")
    return out


def _toks(entries: list[dict[str, Any]]) -> Text:
    """``id token, id token``, or a dim dash for none."""
    out = Text()
    for k, e in enumerate(entries):
        if k:
            out.append(", ")
        out.append_text(_tok(e))
    return out or Text("—", style="dim")


def _stops(who: str, value: bool) -> Text:
    out = Text(f"{who}: ")
    out.append(
        "stops" if value else "never stop" + ("s" if who == "llama.cpp" else ""), style="green" if value else "red"
    )
    return out


def _gguf_section(console: Console, g: dict[str, Any]) -> None:
    """llama.cpp's view of the GGUF: flags, and the three stop sets side by side."""
    console.print(Text("  llama.cpp (GGUF)", style="bold"))
    pre = g["pre"] if g["pre"] is not None else "none"
    head = f"{g['file']} · v{g['version']} {g['byte_order']}-endian · {g['model']} ({g['vocab_type'] or 'unknown'})"
    if g["vocab_type"] == "BPE":
        head += f" · pre {pre} ({g['pre_state']}{', ' + g['pre_family'] if g['pre_family'] else ''})"
    key_value(console, "file", head, indent=4, key_width=9)
    flags = " · ".join(f"{k} {str(v['value']).lower()}" for k, v in g["flags"].items())
    key_value(console, "flags", flags, indent=4, key_width=9)
    if g["load_error"]:
        key_value(
            console,
            "load",
            Text(safe(f"llama.cpp refuses this file: {g['load_error']}"), style="red"),
            indent=4,
            key_width=9,
        )
    table = Table(box=None, show_header=True, header_style="dim", padding=(0, 1), pad_edge=False)
    for col in ("who stops", "on"):
        table.add_column(col, overflow="fold")
    table.add_row(Text("llama.cpp (its EOG set)"), _toks(g["eog"]))
    table.add_row(Text("runtimes reading only the eos id"), _toks(g["eos_ids"]))
    turn = g["end_of_turn"]
    if turn is not None:
        row = _tok(turn) if turn["id"] is not None else Text(visible(turn["token"]) + " (not a token)")
        row.append("  ")
        row.append_text(_stops("llama.cpp", turn["llamacpp_stops"]))
        row.append(" · ")
        row.append_text(_stops("eos-only runtimes", turn["eos_only_runtimes_stop"]))
        table.add_row(Text("the chat template's end of turn"), row)
    console.print(Padding(table, (0, 0, 0, 4), expand=False))


def _loader_table(console: Console, loaders: list[dict[str, Any]]) -> None:
    """Which files each loader reads by its precedence, and whether it sees a gap."""
    table = Table(box=None, show_header=True, header_style="dim", padding=(0, 1), pad_edge=False)
    for col in ("loader", "gap", "files (and the rule that picked them)"):
        table.add_column(col, overflow="fold")  # a narrow terminal wraps file names, never cuts them
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

from tokaudit.report.rich_replay import replay_section  # noqa: E402 - after SECTIONS: the section modules import this module's helpers

SECTIONS["replay"] = replay_section

from tokaudit.report.rich_compare import compare_section  # noqa: E402 - after SECTIONS: the section modules import this module's helpers

SECTIONS["compare"] = compare_section

from tokaudit.report.rich_oncall import (  # noqa: E402 - after SECTIONS: the section modules import this module's helpers
    decode_section,
    diff_section,
    encode_section,
    explain_section,
    fuzz_section,
)

SECTIONS.update(
    explain=explain_section, decode=decode_section, encode=encode_section, fuzz=fuzz_section, diff=diff_section
)

from tokaudit.report.rich_template import template_section  # noqa: E402 - after SECTIONS: the section modules import this module's helpers

SECTIONS["template"] = template_section


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


def _at_commit(result: TargetResult) -> str:
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
    console.file = out = _TrimmedLines(stream)  # type: ignore[assignment]
    for result in report.results:
        findings = [f for f in report.findings if f.target == result.target]
        if not quiet or (len(report.results) > 1 and findings):
            console.print(_heading(report.command, result.target + _at_commit(result)))
        section = SECTIONS.get(report.command)
        if section and not quiet:
            section(console, result)
            console.print()
        for f in sorted(findings, key=lambda f: (-f.severity.rank, f.code)):
            _finding(console, f)
            console.print()
    if report.judged:
        for line in closing_summary(report, fail_on):
            console.print(Padding(line, (0, 0, 0, 2), expand=False))
        console.print(verdict(report, fail_on))
    out.flush()
