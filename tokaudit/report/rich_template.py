"""The ``template`` section of the rich report: the template and engines, then per conversation and
engine the rendered prompt (control tokens highlighted, invisible characters shown), its token
count, and the first divergence side by side. Layout only: every value comes from the result."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from tokaudit.report.report import TargetResult
from tokaudit.report.text import visible

#: Longest rendered prompt shown in full; longer ones show their start and end.
SHOWN = 600


def _prompt(text: str, controls: list[list[int]]) -> Text:
    """The prompt as data (never markup), control tokens in bold cyan, invisibles escaped."""
    out = Text()
    pos = 0
    for start, end in controls:
        out.append(visible(text[pos:start]))
        out.append(visible(text[start:end]), style="bold cyan")
        pos = end
    out.append(visible(text[pos:]))
    return out


def _shown(text: str, controls: list[list[int]]) -> Text:
    if len(text) <= SHOWN:
        return _prompt(text, controls)
    half = SHOWN // 2
    head = _prompt(text[:half], [c for c in controls if c[1] <= half])
    cut = len(text) - half
    tail = _prompt(text[cut:], [[s - cut, e - cut] for s, e in controls if s >= cut])
    head.append(f" … {len(text) - SHOWN:,} characters … ", style="dim")
    head.append_text(tail)
    return head


def template_section(console: Console, result: TargetResult) -> None:
    data: dict[str, Any] = result.data
    for t in data["templates"]:
        console.print(Text(f"  template    {t['name']}  ({t['source']})"))
    engines = " · ".join(f"{e['name']} {e['version'] or 'not installed'}" for e in data["engines"])
    console.print(Text(f"  engines     {engines}"))
    tok = data["tokenizer"]
    line = Text(f"  tokenizer   {tok['name'] or 'none'}")
    if tok["error"]:
        line.append(f"  ({tok['error']})", style="yellow")
    if tok["prepends"]:
        line.append(f"  · prepends {tok['prepends']['token']} ({tok['prepends']['setting']})", style="dim")
    console.print(line)
    console.print()
    for conv in data["conversations"]:
        head = Text(f"  {conv['name']}", style="bold")
        label = "" if conv["template"] == "default" else f"template {conv['template']} · "
        head.append(f"  {label}{'generation prompt' if conv['add_generation_prompt'] else 'no generation prompt'}"
                    f"{'' if conv['required'] else ' · optional feature'}", style="dim")
        console.print(head)
        for r in conv["renders"]:
            row = Text(f"    {r['engine']:<10} ", style="bold")
            if r["text"] is None:
                row.append(f"✗ {r['error']}", style="red")
                console.print(row)
                continue
            count = "—" if r["ids"] is None else f"{len(r['ids']):,}"
            row.append(f"{len(r['text']):,} chars · {count} tokens", style="dim")
            console.print(row)
            console.print(Padding(_shown(r["text"], r["controls"]), (0, 0, 0, 6), expand=False))
        div = conv.get("divergence")
        if div:
            table = Table(box=None, show_header=True, header_style="dim", padding=(0, 1), pad_edge=False)
            for side in div["sides"]:
                table.add_column(side["engine"])
            table.add_row(*(Text(visible(side["excerpt"])) for side in div["sides"]))
            where = f"first divergence at character {div['position']}"
            if div["token_position"] is not None:
                where += f", token {div['token_position']}"
            console.print(Padding(Text(where, style="yellow"), (0, 0, 0, 4), expand=False))
            console.print(Padding(table, (0, 0, 0, 6), expand=False))
        console.print()
