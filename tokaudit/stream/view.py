"""Rich section of ``replay``: the stream, a timeline (the rows replay selected: every step of a short
stream, else the steps around findings, or ``--steps``), each detokenizer's outcome and the final text.
Layout only: every value comes from the result, given in parts (the view imports no result; the timeline's rows are
the JSON objects :class:`~tokaudit.stream.timeline.Timeline` computes). Token text is data: ``Text`` objects with
invisible characters shown."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from tokaudit.report.rich_layout import key_value
from tokaudit.report.rows import LazyRows
from tokaudit.report.text import plural, token_text, visible
from tokaudit.stream.summary import (
    DetokenizerOutcome,
    Stops,
    StreamSummary,
    TimelineSteps,
    TokenizerSummary,
    ToolCallSummary,
)

#: Rows per table when a long timeline (``--steps``) is printed block by block.
BLOCK_ROWS = 500
#: Longest text printed whole; a longer one shows its start and end.
MAX_TEXT = 20_000
SHORT = {
    "offsets": "offsets",
    "decodestream": "dstream",
    "decodestream-prefill": "dstream+p",
    "bytes": "bytes",
    "naive": "naive",
}


def _tokens(row: dict[str, Any]) -> Text:
    out = Text()
    for n, (hexed, special) in enumerate(zip(row["bytes_hex"], row["special"])):
        if n:
            out.append(" ")
        if hexed is None:
            out.append("⟨unmapped⟩", style="bold red")
        else:
            out.append(token_text(bytes.fromhex(hexed)), style="magenta" if special else "")
    return out


def _table(names: list[str]) -> Table:
    table = Table(box=None, padding=(0, 1), pad_edge=False, header_style="bold")
    table.add_column("", width=1)
    table.add_column("step", justify="right")
    table.add_column("ids")
    table.add_column("token bytes")
    for name in names:
        table.add_column(SHORT.get(name, name))
    table.add_column("held")
    return table


def _lines(console: Console, rows: Iterable[dict[str, Any]], names: list[str]) -> None:
    """A long timeline as plain lines, one per step (a rich table measures every cell: ~1 ms a row),
    columns separated by │, printed in blocks of BLOCK_ROWS lines."""
    head = Text(
        "  " + " │ ".join(["step", "ids", "token bytes", *(SHORT.get(n, n) for n in names), "held"]), style="bold"
    )
    console.print(head, overflow="ignore", crop=False, soft_wrap=True)
    block, count = Text(), 0
    for row in rows:
        problem = bool(row["problems"])
        block.append("✗ " if problem else "  ", style="bold red")
        block.append(f"{row['step']} │ {' '.join(map(str, row['ids']))} │ ")
        block.append_text(_tokens(row))
        for n in names:
            chunk = row["chunks"][n]
            block.append(" │ ")
            block.append(visible(chunk), style="red" if "\ufffd" in chunk else "")
        block.append(" │ " + " ".join(str(row["held"][n]) for n in names))
        if problem:
            block.append("  " + ", ".join(row["problems"]), style="red")
        block.append("\n")
        count += 1
        if count % BLOCK_ROWS == 0:
            console.print(block, end="", overflow="ignore", crop=False, soft_wrap=True)
            block = Text()
    if block:
        console.print(block, end="", overflow="ignore", crop=False, soft_wrap=True)


#: Timelines with more rows than this are printed as plain lines (:func:`_lines`), not a table.
MAX_TABLE_ROWS = 2000


def _timeline(console: Console, rows: list[dict[str, Any]] | LazyRows, names: list[str]) -> None:
    """The rows as computed (already selected), a gap mark between non-consecutive steps, printed
    in blocks so that a streamed full timeline is never held whole."""
    if len(rows) > MAX_TABLE_ROWS:
        _lines(console, rows, names)
        return
    table, count, last = _table(names), 0, None
    for row in rows:
        if last is not None and row["step"] != last + 1:
            table.add_row("", Text("…", style="dim"), *[""] * (len(names) + 3))
        last = row["step"]
        problem = bool(row["problems"])
        mark = Text("✗", style="bold red") if problem else Text("")
        chunks = [Text(visible(row["chunks"][n]), style="red" if "\ufffd" in row["chunks"][n] else "") for n in names]
        held = " ".join(str(row["held"][n]) for n in names)
        table.add_row(
            mark,
            str(row["step"]),
            Text(" ".join(map(str, row["ids"]))),
            _tokens(row),
            *chunks,
            Text(held, style="yellow" if any(row["held"][n] for n in names) else "dim"),
            style="on grey15" if problem else None,
        )
        if problem:
            table.add_row("", "", Text("  " + ", ".join(row["problems"]), style="red"), *[""] * (len(names) + 2))
        count += 1
        if count % BLOCK_ROWS == 0:
            console.print(Padding(table, (0, 0, 0, 2), expand=False))
            table = _table(names)
            table.show_header = False
    if table.row_count:
        console.print(Padding(table, (0, 0, 0, 2), expand=False))


def replay_view(
    console: Console,
    s: StreamSummary,
    tok: TokenizerSummary,
    detokenizers: tuple[DetokenizerOutcome, ...],
    shown: TimelineSteps,
    timeline: list[dict[str, Any]] | LazyRows,
    tool_calls: tuple[ToolCallSummary, ...],
    stops: Stops | None,
    text: str,
) -> None:
    key_value(
        console,
        "stream",
        f"{s.format} · {plural(s.tokens, 'token')} in {plural(s.steps, 'step')} · "
        f"prompt {plural(s.prompt_tokens, 'token')} · {'skip' if s.skip_special_tokens else 'keep'} special "
        "tokens",
    )
    key_value(console, "tokenizer", f"{tok.origin} (built in {tok.load_seconds:.2f}s)")
    names = [d.name for d in detokenizers if d.name != "full" and d.applicable]
    which = {
        "all": "",
        "around findings": f", {shown.rows} of {s.steps} steps: the first, the last and those around findings",
    }.get(shown.shown, f", steps {shown.shown}")
    heading = Text(
        f"timeline (chunks as emitted; held = bytes each detokenizer holds after the step{which})", style="bold"
    )
    console.print(Padding(heading, (0, 0, 0, 2)))  # wraps under itself on a narrow terminal
    _timeline(console, timeline, names)
    console.print(Text("  detokenizers", style="bold"))
    summary = Table(box=None, show_header=False, padding=(0, 1), pad_edge=False)
    for d in detokenizers:
        if not d.applicable:
            summary.add_row(Text(d.name), Text(f"not applicable: {d.reason}", style="dim"))
            continue
        errors: dict[str, int] = {}
        for e in d.errors:
            errors[e.kind] = errors.get(e.kind, 0) + 1
        status = Text(
            f"held {d.held_bytes} bytes" if d.held_bytes else "nothing held",
            style="yellow" if d.held_bytes else "dim",
        )
        steps = shown.summary.get(d.name)
        if steps:
            status.append(
                f" · {steps.characters} characters, {steps.holding_steps} steps ended holding bytes "
                f"(at most {steps.max_held})",
                style="dim",
            )
        if errors:
            status.append(" · " + ", ".join(f"{n} {k}" for k, n in errors.items()), style="red")
        summary.add_row(Text(d.name), status)
    console.print(Padding(summary, (0, 0, 0, 4), expand=False))
    for call in tool_calls:
        line = Text(f"{call.format}: ")
        line.append(
            "valid JSON" if call.valid else f"invalid JSON ({call.error})",
            style="green" if call.valid else "red",
        )
        key_value(console, "tool call", line)
    if stops is not None:
        exp = stops.expected
        key_value(
            console,
            "stop",
            "not reached" if exp.position is None else f"{exp.matched!r} at token {exp.position}",
        )
    console.print(Text("  text (full decode; invisible characters shown)", style="bold"))
    if len(text) > MAX_TEXT:
        half = MAX_TEXT // 2
        shown_text = Text(visible(text[:half]))
        shown_text.append(
            f" … {len(text) - 2 * half} characters not shown (--format json has the whole text) … ", style="dim"
        )
        shown_text.append(visible(text[-half:]))
    else:
        shown_text = Text(visible(text))
    console.print(Padding(shown_text, (0, 0, 0, 4), expand=False))
