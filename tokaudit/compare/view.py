"""The ``compare`` section of the rich report: backends with throughput, pair counts, the first
diverging examples side by side, the unknown-id table and the concurrency race. Layout only:
every value comes from the compare result, given in parts (the view imports no result)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from tokaudit.compare.parity import PairResult
from tokaudit.compare.race import RaceResult
from tokaudit.compare.rows import BackendRow, CorpusSummary
from tokaudit.compare.unknown_ids import UnknownIdTable
from tokaudit.report.text import safe

KIND_STYLE = {"text": "green", "dropped": "yellow", "error": "magenta", "panic": "bold red"}


def _num(value: Any, suffix: str = "") -> Text:
    return Text("—" if value is None else f"{value:,}{suffix}" if isinstance(value, int) else f"{value}{suffix}")


def _backends(console: Console, rows: tuple[BackendRow, ...]) -> None:
    table = Table(box=None, padding=(0, 1), pad_edge=False, header_style="bold")
    for col in ("backend", "what", "load s", "encode MB/s", "tokens/s", "decode MB/s"):
        table.add_column(col, justify="right" if col not in ("backend", "what") else "left")
    for row in rows:
        lb = row.loaded
        if not lb.available:
            table.add_row(
                Text(lb.name, style="dim"),
                Text(safe(f"unavailable: {lb.unavailable}"), style="dim"),
                _num(None),
                _num(None),
                _num(None),
                _num(None),
            )
            continue
        tp = row.throughput
        tokens_per_s = None if tp is None else tp.encode_tokens_per_s
        table.add_row(
            Text(lb.name, style="bold"),
            Text(safe(lb.detail or "")),
            _num(round(round(lb.load_seconds, 4), 3)),  # the JSON's figure (4 places), shown to 3
            _num(None if tp is None else tp.encode_mb_per_s),
            _num(None if tokens_per_s is None else int(tokens_per_s)),
            _num(None if tp is None else tp.decode_mb_per_s),
        )
    console.print(Text("  backends", style="bold"))
    console.print(Padding(table, (0, 0, 0, 4), expand=False))


def _count(n: int | None, bad_style: str = "bold red") -> Text:
    if n is None:
        return Text("—", style="dim")
    return Text(f"{n:,}", style=bad_style if n else "green")


def _pairs(console: Console, pairs: tuple[PairResult, ...]) -> None:
    table = Table(box=None, padding=(0, 1), pad_edge=False, header_style="bold")
    for col in ("pair", "cases", "encode ≠", "benign", "real", "decode ≠", "round trip ✗"):
        table.add_column(col, justify="left" if col == "pair" else "right")
    for p in pairs:
        encodes = p.kind == "encode"  # a decode-only pair has no encode or round-trip counts
        table.add_row(
            Text(f"{p.a} × {p.b}"),
            Text(f"{p.cases:,}"),
            _count(p.encode_mismatch if encodes else None),
            _count(p.benign if encodes else None, "yellow"),
            _count(p.real if encodes else None),
            _count(p.decode_mismatch),
            _count(p.roundtrip_failure if encodes else None),
        )
    console.print(Text("  pairs", style="bold"))
    console.print(Padding(table, (0, 0, 0, 4), expand=False))


def _token_rows(side: dict[str, Any]) -> tuple[Text, Text]:
    """Token texts over their ids, each column as wide as the wider of the two."""
    tokens, ids = Text(), Text()
    for token, i in zip(side["tokens"], side["ids"]):
        width = max(len(token), len(str(i)))
        tokens.append(token.ljust(width), style="reverse")
        tokens.append("  ")
        ids.append(str(i).ljust(width) + "  ", style="dim")
    if side["truncated"]:
        tokens.append("…")
    return tokens, ids


def _examples(console: Console, pairs: tuple[PairResult, ...]) -> None:
    for p in pairs:
        a, b = p.a, p.b
        for ex in p.examples["encode"][:1]:
            console.print(Text(f"  first encode difference, {a} × {b} ({ex['class']}): {ex['case']}", style="bold"))
            grid = Table.grid(padding=(0, 2))
            grid.add_column(style="bold")
            grid.add_column()
            grid.add_row(Text("text"), Text(ex["text"]))
            for name, side in ((a, ex["a"]), (b, ex["b"])):
                tokens, ids = _token_rows(side)
                grid.add_row(Text(name), tokens)
                grid.add_row(Text(""), ids)
            if "decoded" in ex:
                grid.add_row(Text(f"{a} decodes"), Text(ex["decoded"]["a"]))
                grid.add_row(Text(f"{b} decodes"), Text(ex["decoded"]["b"]))
            console.print(Padding(grid, (0, 0, 0, 4), expand=False))
        for ex in p.examples["decode"][:1]:
            console.print(Text(f"  first decode difference, {a} × {b}: {ex['case']}", style="bold"))
            grid = Table.grid(padding=(0, 2))
            grid.add_column(style="bold")
            grid.add_column()
            grid.add_row(Text("ids"), Text(", ".join(map(str, ex["ids"])) + (" …" if ex["ids_truncated"] else "")))
            grid.add_row(Text(a), Text(ex[a]))
            grid.add_row(Text(b), Text(ex[b]))
            console.print(Padding(grid, (0, 0, 0, 4), expand=False))


def _unknown(console: Console, unknown: UnknownIdTable) -> None:
    differing = [p.label for p in unknown.differing()]
    table = Table(box=None, padding=(0, 1), pad_edge=False, header_style="bold")
    table.add_column("decode([id])")
    for p in unknown.probes:
        table.add_column(f"{p.label} {p.id}", style="bold" if p.label in differing else "")
    for name, answers in unknown.answers.items():
        cells = [Text(name, style="bold")]
        for a in answers:
            shown = a.value.split(":", 1)[0] if a.kind == "error" else (f"'{a.value}'" if a.kind == "text" else a.kind)
            cells.append(Text(shown, style=KIND_STYLE.get(a.kind, "")))
        table.add_row(*cells)
    console.print(Text("  unknown ids", style="bold"))
    console.print(Padding(table, (0, 0, 0, 4), expand=False))


def _race(console: Console, note: str | None, races: tuple[RaceResult, ...]) -> None:
    if note:
        console.print(Text(f"  concurrency  {note}", style="dim"))
    for r in races:
        verdict = "consistent" if r.consistent else "INCONSISTENT"
        line = Text(f"  concurrency  {r.backend}: {r.concurrency} threads + {r.concurrency} processes → ", style="bold")
        line.append(f"{verdict} ({', '.join(r.classes)})", style="green" if r.consistent else "bold red")
        console.print(line)


def compare_view(
    console: Console,
    corpus: CorpusSummary,
    backends: tuple[BackendRow, ...],
    pairs: tuple[PairResult, ...],
    unknown: UnknownIdTable,
    race_note: str | None,
    races: tuple[RaceResult, ...],
) -> None:
    console.print(
        Text(
            f"  corpus      {corpus.cases:,} cases, {corpus.bytes:,} bytes "
            f"({corpus.builtin_cases:,} built-in, {corpus.user_cases:,} from --corpus)"
        )
    )
    _backends(console, backends)
    if pairs:
        _pairs(console, pairs)
        _examples(console, pairs)
    _unknown(console, unknown)
    _race(console, race_note, races)
