"""Rich sections of the on-call verbs explain, decode, encode and fuzz (diff's: ``diff_view.py``). Layout only:
every value comes from the command's result; token text is shown with :func:`visible`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from tokaudit.oncall.records import BackendRun, CodecError, ExplainedId, IdSource, Unavailable
from tokaudit.oncall.tokens import TokenRow
from tokaudit.report.rich_layout import key_value
from tokaudit.report.text import safe, visible

KIND_STYLE = {"text": "green", "dropped": "yellow", "error": "magenta", "panic": "bold red"}
#: Alternating backgrounds that make token boundaries visible on a terminal.
PIECE_STYLES = ("black on bright_cyan", "black on bright_yellow")


def kv(console: Console, key: str, value: str | Text, indent: int = 2) -> None:
    """A key and its value, as every on-call section lays them out (a 12-column key)."""
    key_value(console, key, value, indent=indent, key_width=12)


def grid() -> Table:
    """A borderless table with bold headers."""
    return Table(box=None, padding=(0, 1), pad_edge=False, header_style="bold")


def _token_text(tok: TokenRow | IdSource, *, spaces: bool = False) -> str:
    """A token's text with invisible characters shown (``spaces``: and its spaces as ␣); partial
    UTF-8 as hex bytes, which keep their own spaces (``<E4 B8>``)."""
    if tok.bytes_hex is None or tok.text is None:
        return "<unmapped>"
    if tok.partial_utf8:
        return "<" + " ".join(tok.bytes_hex[k : k + 2].upper() for k in range(0, len(tok.bytes_hex), 2)) + ">"
    return visible(tok.text).replace(" ", "␣") if spaces else visible(tok.text)


def _where(src: IdSource) -> str:
    """``file:line (rule)``; the rule is left out when the key already names it (``added_tokens_decoder.163586``
    and rule ``added_tokens_decoder (special)``: the special flag is shown beside the token)."""
    at = src.where
    where = at.file + (f":{at.line}" if at.line is not None else f" ({at.key})" if at.key else "")
    key_head = (at.key or "").split(".")[0]
    if key_head and src.rule.split(" (")[0] == key_head:
        return where
    return f"{where} ({src.rule})"


def explain_view(
    console: Console, declared: int | None, declared_by: str, size: int, ids: tuple[ExplainedId, ...]
) -> None:
    kv(console, "declared", f"{declared if declared is not None else '—'} ({declared_by})")
    for entry in ids:
        console.print()
        head = Text(f"  {entry.id}", style="bold cyan")
        if entry.query != str(entry.id):
            head.append(f"  ({visible(entry.query)})", style="dim")
        inside = entry.in_declared_range
        head.append(
            f"  {'inside' if inside else 'OUTSIDE'} the declared range [0, {size})",
            style="green" if inside else "bold red",
        )
        console.print(head)
        by_profile = {s.profile: s for s in entry.sources}
        profiles = Table(box=None, padding=(0, 1), pad_edge=False, show_header=False)
        for _ in range(3):
            profiles.add_column(overflow="fold")
        for profile, mapped in entry.mapped.items():
            src = by_profile.get(profile)
            if not mapped or src is None:
                profiles.add_row(Text(profile, style="bold"), Text("unmapped", style="bold red"), Text(""))
                continue
            where = ("special · " if src.special else "") + _where(src)
            profiles.add_row(
                Text(profile, style="bold"), Text(_token_text(src), style="reverse"), Text(where, style="dim")
            )
        console.print(Padding(profiles, (0, 0, 0, 4), expand=False))
        if entry.bytes_hex is not None:
            flags = "partial UTF-8" if entry.partial_utf8 else "valid UTF-8"
            kv(console, "bytes", f"{entry.bytes_hex or '(empty)'}  ({flags})", 4)
        table = grid()
        table.add_column("backend")
        table.add_column("decode([id])")
        for name, a in entry.backends.items():
            if not a.available:
                table.add_row(Text(name, style="dim"), Text(safe(f"unavailable: {a.reason}"), style="dim"))
            elif a.kind in ("text", "dropped"):
                shown = (
                    Text(visible(a.text), style="reverse") if a.text else Text("dropped (empty string)", style="yellow")
                )
                table.add_row(Text(name), shown)
            else:
                what = "panic" if a.panic else a.exception
                table.add_row(Text(name), Text(safe(f"{what}: {a.message}"), style=KIND_STYLE[a.kind]))
        console.print(Padding(table, (0, 0, 0, 4), expand=False))


#: Tokens shown in the pieces line and the table: a 256 KiB text is ~75k tokens, and rich lays out a
#: table of that size for minutes; --format json has them all.
MAX_SHOWN_TOKENS = 1000


def _more(console: Console, tokens: tuple[TokenRow, ...]) -> None:
    if len(tokens) > MAX_SHOWN_TOKENS:
        console.print(
            Text(f"    … {len(tokens) - MAX_SHOWN_TOKENS} more tokens (--format json lists every one)", style="dim")
        )


def _pieces(console: Console, tokens: tuple[TokenRow, ...]) -> Text:
    """Token texts end to end: alternating colours on a terminal, ``|`` between pieces elsewhere."""
    out = Text()
    shown = [t for t in tokens if not t.skipped][:MAX_SHOWN_TOKENS]
    for k, tok in enumerate(shown):
        piece = _token_text(tok)
        if console.is_terminal:
            out.append(piece, style=PIECE_STYLES[k % 2] if tok.bytes_hex is not None else "bold white on red")
        else:
            out.append(("|" if k else "") + piece)
    return out


def _token_table(console: Console, tokens: tuple[TokenRow, ...]) -> None:
    table = grid()
    for col in ("#", "id", "token", ""):
        table.add_column(col, justify="right" if col in ("#", "id") else "left")
    for k, tok in enumerate(tokens[:MAX_SHOWN_TOKENS]):
        flags = [
            f
            for f, on in (
                ("special", tok.special),
                ("partial UTF-8", tok.partial_utf8),
                ("skipped", tok.skipped),
                ("unmapped", not tok.mapped),
            )
            if on
        ]
        if tok.mapped and tok.profile != "files":
            flags.append(f"only in {tok.profile}")
        # a token shown alone: make its spaces visible (a lone " " token would otherwise be a blank cell)
        table.add_row(
            Text(str(k), style="dim"),
            Text(str(tok.id), style="cyan"),
            Text(_token_text(tok, spaces=True)),
            Text(", ".join(flags), style="dim"),
        )
    console.print(Padding(table, (0, 0, 0, 4), expand=False))
    _more(console, tokens)


def codec_view(
    console: Console,
    backend: str,
    detail: str | None,
    ids: tuple[int, ...],
    text: str | None,
    error: CodecError | None,
    tokens: tuple[TokenRow, ...],
    *,
    decoded_from: tuple[str, bool] | None = None,
    server_prompt_ids: tuple[int, ...] | None = None,
) -> None:
    """decode's section (``decoded_from``: where the ids came from and whether special tokens were skipped) or
    encode's (the ids it gave, and what llama.cpp's server prompts with)."""
    kv(console, "backend", backend + (f" ({detail})" if detail else ""))
    if decoded_from is not None:
        source, skipped = decoded_from
        kv(console, "ids", f"{len(ids)} from {source}" + ("  (specials skipped)" if skipped else "  (specials kept)"))
    if error is not None:
        e = error
        kv(console, "error", Text(safe(f"{'panic' if e.panic else e.exception}: {e.message}"), style="bold red"))
    else:
        kv(console, "text", Text(visible(text or "")))
    if tokens:
        kv(console, "tokens", _pieces(console, tokens))
        if decoded_from is None:
            kv(console, "ids", " ".join(str(i) for i in ids))
    if server_prompt_ids is not None and server_prompt_ids != ids:
        kv(
            console,
            "as prompt",
            " ".join(str(i) for i in server_prompt_ids)
            + "  (llama.cpp's server adds BOS/EOS per the GGUF's add flags)",
        )
    _token_table(console, tokens)


def fuzz_view(
    console: Console,
    run: tuple[int, int, int],
    checked_size: int,
    edges: Mapping[str, int],
    backends: tuple[BackendRun | Unavailable, ...],
) -> None:
    """``run``: (iterations, longest sequence, seed)."""
    iterations, max_length, seed = run
    kv(
        console,
        "run",
        f"{iterations:,} sequences of 1–{max_length} ids · seed {seed} · declared range [0, {checked_size})",
    )
    kv(console, "edges", " · ".join(f"{name} {count}" for name, count in edges.items()))
    for separator in (", ", ",\n"):  # a class per line when the table is too wide for one line per backend
        table = _fuzz_table(backends, separator)
        if Measurement.get(console, console.options, table).maximum + 2 <= console.width:
            console.print(Padding(table, (1, 0, 0, 2), expand=False))
            return
    for row in backends:  # narrower still: one block per backend, wrapped under each value, never cut
        console.print()
        console.print(Text(f"  {row.name}", style="bold"))
        if isinstance(row, Unavailable):
            kv(console, "unavailable", row.reason or "", 4)
            continue
        cells = _fuzz_cells(row, ", ")
        kv(
            console,
            "calls",
            f"{cells['calls']} · {cells['failures']} failures ({cells['rate']}) · {cells['calls/s']} calls/s",
            4,
        )
        kv(console, "by class", cells["by class"], 4)
        kv(console, "first", cells["first"], 4)


def _fuzz_cells(row: BackendRun, separator: str) -> dict[str, Any]:
    classes = separator.join(f"{cls} {c.count} ({c.in_declared_range})" for cls, c in row.by_class().items())
    first = row.first_in_range or row.first
    repro = Text("—", style="green")
    if first:
        what = "panic" if first.outcome.panic else first.outcome.error_type
        repro = Text(
            f"{' '.join(map(str, first.reproducer))} → {what}",
            style="bold red" if first.in_declared_range else "magenta",
        )
    cps = row.calls_per_second
    cps = None if cps is None else round(cps, 1)  # the JSON's figure
    return {
        "calls": f"{row.calls:,}",
        "failures": f"{len(row.failures):,}",
        "rate": f"{row.rate:.1%}",
        "calls/s": "—" if cps is None else f"{cps:,.0f}",
        "by class": Text(classes or "none"),
        "first": repro,
    }


def _fuzz_table(backends: tuple[BackendRun | Unavailable, ...], separator: str) -> Table:
    table = grid()
    for col in ("backend", "calls", "failures", "rate", "calls/s", "by class (in declared range)", "first reproducer"):
        table.add_column(col, justify="right" if col in ("calls", "failures", "rate", "calls/s") else "left")
    for row in backends:
        if isinstance(row, Unavailable):
            table.add_row(
                Text(row.name, style="dim"),
                *[Text("—", style="dim")] * 5,
                Text(f"unavailable: {row.reason}", style="dim"),
            )
            continue
        cells = _fuzz_cells(row, separator)
        table.add_row(
            Text(row.name, style="bold"),
            Text(cells["calls"]),
            Text(cells["failures"], style="bold red" if row.failures else "green"),
            Text(cells["rate"]),
            Text(cells["calls/s"]),
            cells["by class"],
            cells["first"],
        )
    return table
