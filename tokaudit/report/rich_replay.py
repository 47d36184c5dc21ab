"""Rich section of ``replay``: the stream, a timeline (one row per step), each detokenizer's
outcome and the final text. Token text is data: ``Text`` objects with invisible characters shown."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from tokaudit.report.report import TargetResult
from tokaudit.report.text import token_text, visible

#: Longest timeline shown in full; longer ones show the first/last rows and rows near problems.
MAX_ROWS = 60
EDGE_ROWS = 8
AROUND = 2
SHORT = {"offsets": "offsets", "decodestream": "dstream", "decodestream-prefill": "dstream+p", "bytes": "bytes", "naive": "naive"}


def _shown_rows(rows: list[dict[str, Any]]) -> list[int | None]:
    """Indices of rows to print; None marks a gap."""
    if len(rows) <= MAX_ROWS:
        return list(range(len(rows)))
    keep = set(range(EDGE_ROWS)) | set(range(len(rows) - EDGE_ROWS, len(rows)))
    for k, row in enumerate(rows):
        if row["problems"]:
            keep.update(range(max(k - AROUND, 0), min(k + AROUND + 1, len(rows))))
    out: list[int | None] = []
    for k in sorted(keep):
        if out and out[-1] is not None and k != out[-1] + 1:
            out.append(None)
        out.append(k)
    return out


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


def _timeline(console: Console, rows: list[dict[str, Any]], names: list[str]) -> None:
    table = Table(box=None, padding=(0, 1), pad_edge=False, header_style="bold")
    table.add_column("", width=1)
    table.add_column("step", justify="right")
    table.add_column("ids")
    table.add_column("token bytes")
    for name in names:
        table.add_column(SHORT.get(name, name))
    table.add_column("held")
    for k in _shown_rows(rows):
        if k is None:
            table.add_row("", Text("…", style="dim"), *[""] * (len(names) + 3))
            continue
        row = rows[k]
        problem = bool(row["problems"])
        mark = Text("✗", style="bold red") if problem else Text("")
        chunks = [Text(visible(row["chunks"][n]), style="red" if "\ufffd" in row["chunks"][n] else "") for n in names]
        held = " ".join(str(row["held"][n]) for n in names)
        table.add_row(mark, str(row["step"]), Text(" ".join(map(str, row["ids"]))), _tokens(row), *chunks,
                      Text(held, style="yellow" if any(row["held"][n] for n in names) else "dim"),
                      style="on grey15" if problem else None)
        if problem:
            table.add_row("", "", Text("  " + ", ".join(row["problems"]), style="red"), *[""] * (len(names) + 2))
    console.print(Padding(table, (0, 0, 0, 2), expand=False))


def replay_section(console: Console, result: TargetResult) -> None:
    data = result.data
    s, tok = data["stream"], data["tokenizer"]
    head = Text("  stream      ", style="bold")
    head.append(f"{s['format']} · {s['tokens']} tokens in {s['steps']} steps · prompt {s['prompt_tokens']} tokens · "
                f"{'skip' if s['skip_special_tokens'] else 'keep'} special tokens")
    console.print(head)
    line = Text("  tokenizer   ", style="bold")
    line.append(f"{tok['origin']} (built in {tok['load_seconds']:.2f}s)")
    console.print(line)
    names = [d["name"] for d in data["detokenizers"] if d["name"] != "full"]
    console.print(Text("  timeline (chunks as emitted; held = bytes each detokenizer holds after the step)", style="bold"))
    _timeline(console, data["timeline"], names)
    console.print(Text("  detokenizers", style="bold"))
    summary = Table(box=None, show_header=False, padding=(0, 1), pad_edge=False)
    for d in data["detokenizers"]:
        errors = {}
        for e in d["errors"]:
            errors[e["kind"]] = errors.get(e["kind"], 0) + 1
        status = Text(f"held {d['held_bytes']} bytes" if d["held_bytes"] else "nothing held", style="yellow" if d["held_bytes"] else "dim")
        if errors:
            status.append(" · " + ", ".join(f"{n} {k}" for k, n in errors.items()), style="red")
        summary.add_row(Text(d["name"]), status)
    console.print(Padding(summary, (0, 0, 0, 4), expand=False))
    for call in data.get("tool_calls", []):
        line = Text(f"  tool call   {call['format']}: ", style="bold")
        line.append("valid JSON" if call["valid"] else f"invalid JSON ({call['error']})", style="green" if call["valid"] else "red")
        console.print(line)
    if "stops" in data:
        exp = data["stops"]["expected"]
        line = Text("  stop        ", style="bold")
        line.append("not reached" if exp["position"] is None else f"{exp['matched']!r} at token {exp['position']}")
        console.print(line)
    console.print(Text("  text (full decode; invisible characters shown)", style="bold"))
    console.print(Padding(Text(visible(data["text"])), (0, 0, 0, 4), expand=False))
