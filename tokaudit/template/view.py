"""``template``'s section of the rich report: the template and the stacks, then per request the prompts
the stacks render (stacks with the same prompt together; control tokens highlighted, invisible characters
shown), their token counts, and where the prompts diverge, side by side. Layout only: every value comes from
the result."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from tokaudit.report.text import safe, visible
from tokaudit.template.records import Conversation, StackInfo, StackRender, TemplateRef, TokenizerInfo

#: Longest rendered prompt shown in full; longer ones show their start and end.
SHOWN = 600


def _prompt(text: str, controls: Sequence[Sequence[int]]) -> Text:
    """The prompt as data (never markup), control tokens in bold cyan, invisibles escaped."""
    out = Text()
    pos = 0
    for start, end in controls:
        out.append(visible(text[pos:start]))
        out.append(visible(text[start:end]), style="bold cyan")
        pos = end
    out.append(visible(text[pos:]))
    return out


def _shown(text: str, controls: Sequence[Sequence[int]]) -> Text:
    if len(text) <= SHOWN:
        return _prompt(text, controls)
    half = SHOWN // 2
    head = _prompt(text[:half], [c for c in controls if c[1] <= half])
    cut = len(text) - half
    tail = _prompt(text[cut:], [[s - cut, e - cut] for s, e in controls if s >= cut])
    head.append(f" … {len(text) - SHOWN:,} characters … ", style="dim")
    head.append_text(tail)
    return head


def template_view(
    console: Console,
    templates: Sequence[TemplateRef],
    stacks: Sequence[StackInfo],
    tok: TokenizerInfo,
    conversations: Sequence[Conversation],
    round_trip: Mapping[str, Any],
) -> None:
    """The section of one target's ``template`` run (``TemplateResult.rich``)."""
    for t in templates:
        console.print(Text(safe(f"  template    {t.name}  ({t.source})")))
    for st in stacks:
        line = Text(f"  stack       {st.id:<12} ", style="")
        line.append(f"{st.version} · {st.engine.name}", style="dim")
        if st.skipped:
            line.append(f"  (not rendered: {safe(st.skipped)})", style="yellow")
        console.print(line)
    line = Text(f"  tokenizer   {tok.name or 'none'}")
    if tok.error:
        line.append(f"  ({tok.error})", style="yellow")
    if tok.prepends:
        line.append(f"  · prepends {tok.prepends.token} ({tok.prepends.setting})", style="dim")
    console.print(line)
    console.print()
    for conv in conversations:
        head = Text(f"  {conv.name}", style="bold")
        label = "" if conv.template == "default" else f"template {conv.template} · "
        head.append(
            f"  {label}{'generation prompt' if conv.add_generation_prompt else 'no generation prompt'}"
            f"{'' if conv.required else ' · optional feature'}",
            style="dim",
        )
        console.print(head)
        shown: dict[str, list[StackRender]] = {}
        for r in conv.renders:
            shown.setdefault(r.text if r.text is not None else f"\0{r.error}", []).append(r)
        for rows in shown.values():
            r = rows[0]
            who = ", ".join(x.stack for x in rows)
            row = Text(f"    {who}  ", style="bold")
            if r.text is None:
                row.append(f"✗ {safe(r.error or '')}", style="red")
                console.print(row)
                continue
            count = "—" if r.ids is None else f"{len(r.ids):,}"
            row.append(f"{len(r.text):,} chars · {count} tokens", style="dim")
            console.print(row)
            console.print(Padding(_shown(r.text, r.controls), (0, 0, 0, 6), expand=False))
        div = conv.divergence
        if div is not None:
            for side in div.sides:
                table = Table(box=None, show_header=True, header_style="dim", padding=(0, 1), pad_edge=False)
                table.add_column(", ".join(div.base))
                table.add_column(", ".join(side.stacks))
                table.add_row(Text(visible(side.base_excerpt)), Text(visible(side.excerpt)))
                where = f"first divergence at character {side.position}"
                if side.token_position is not None:
                    where += f", token {side.token_position}"
                console.print(Padding(Text(where, style="yellow"), (0, 0, 0, 4), expand=False))
                console.print(Padding(table, (0, 0, 0, 6), expand=False))
        console.print()
    _parsers(console, round_trip)


_VERDICT_STYLE = {
    "ok": "green",
    "lost": "red",
    "refused": "red",
    "leaked": "red",
    "overran": "red",
    "not-rendered": "dim",
}


def _parsers(console: Console, data: Mapping[str, Any]) -> None:
    """The parser round trip: per template, what the turn looks like, then the table of parsers (named ones, or those
    that recover something and a count of the rest)."""
    runs = data.get("parser_runs") or []
    rows = data.get("parsers") or []
    if not runs:
        return
    console.print(Text("  parser round trip", style="bold"))
    grammar = data.get("parser_choice", {}).get("grammar") or {}
    if grammar:
        console.print(
            Text("    grammar: " + " · ".join(f"{stack} {label}" for stack, label in grammar.items()), style="dim")
        )
    for run in runs:
        head = Text(f"    {run['template']['name']}  ", style="bold")
        if run["error"]:
            head.append(f"✗ {run['error']}", style="red")
            console.print(head)
            continue
        gen = run["generation_prompt"]
        opens = "opens" if gen["reasoning"] == "open" else "closes"
        head.append(
            f"calls {'rendered' if run['calls_rendered'] else 'not rendered'} · reasoning "
            f"{'rendered' if run['reasoning_rendered'] else 'not rendered'}"
            f"{' · the generation prompt ' + opens + ' reasoning' if gen['reasoning'] else ''}"
            f"{' · ' + run['tokenizer'] if run['tokenizer'] else ''}",
            style="dim",
        )
        console.print(head)
        mine = [r for r in rows if r["template"] == run["template"]["name"]]
        named = data.get("parser_choice", {}).get("named")
        # unnamed: the tool parsers that recover the calls on their own, and the pairs that also recover the reasoning
        shown = (
            mine
            if named
            else [
                r
                for r in mine
                if r["tool_calls"] in ("ok", None)
                and (r["reasoning_parser"] is None and r["tool_calls"] == "ok" or r["reasoning"] == "ok")
            ]
        )
        if shown:
            table = Table(box=None, show_header=True, header_style="dim", padding=(0, 1), pad_edge=False)
            for col in (
                "stack",
                "tool parser",
                "reasoning parser",
                "tool calls",
                "reasoning",
                "stage",
                "streamed",
                "skip_special_tokens",
            ):
                table.add_column(col)
            for r in shown:
                table.add_row(
                    Text(r["stack"]),
                    Text(r["tool_parser"] or "—"),
                    Text(r["reasoning_parser"] or "—"),
                    Text(r["tool_calls"] or "—", style=_VERDICT_STYLE.get(r["tool_calls"] or "", "")),
                    Text(r["reasoning"] or "—", style=_VERDICT_STYLE.get(r["reasoning"] or "", "")),
                    Text(r["stage"] or ""),
                    Text(
                        "same"
                        if not r["stream_differs"]
                        else "differs at steps " + ",".join(map(str, r["stream_differs"])),
                        style="" if not r["stream_differs"] else "yellow",
                    ),
                    Text(str(r["skip_special_tokens"]).lower()),
                )
            console.print(Padding(table, (0, 0, 0, 6), expand=False))
        rest = len(mine) - len(shown)
        if rest:
            console.print(
                Padding(
                    Text(
                        f"{rest} other pairs recover neither the calls nor the reasoning (JSON: parsers[])", style="dim"
                    ),
                    (0, 0, 0, 6),
                    expand=False,
                )
            )
    console.print()
