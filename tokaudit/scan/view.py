"""``scan``'s section of the rich report: the vocabulary and its sizes, the id tables, the artifacts, the
loaders and, for a GGUF, what llama.cpp makes of it. Layout only: every value comes from the result."""

from __future__ import annotations

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from tokaudit.model.loaders import LoaderView
from tokaudit.report.rich_layout import key_value
from tokaudit.report.text import safe, visible
from tokaudit.scan.records import ArtifactRow, GgufSummary, GgufToken, VocabSummary


def scan_view(
    console: Console,
    vocab: VocabSummary,
    artifacts: tuple[ArtifactRow, ...],
    loaders: tuple[LoaderView, ...],
    gguf: GgufSummary | None,
) -> None:
    """The section of one target's scan (``ScanResult.rich``)."""
    declared = vocab.declared_size
    key_value(
        console,
        "vocabulary",
        f"{vocab.vocab_artifact} · declared size {declared if declared is not None else '—'} ({vocab.declared_by})",
    )
    s = vocab.sizes
    sizes = (
        ("entries", s.entries),
        ("max rank+1", s.max_rank_plus_one),
        ("max added id+1", s.max_added_plus_one),
        ("config vocab_size", s.config_vocab_size),
        ("embedding rows", s.embedding_rows),
    )
    key_value(console, "sizes", " · ".join(f"{label} {n if n is not None else '—'}" for label, n in sizes))
    profiles = " │ ".join(f"{p.name}: {p.mapped} mapped, {p.unmapped.count} unmapped" for p in vocab.profiles)
    key_value(console, "id tables", profiles)
    files = Table(box=None, show_header=False, padding=(0, 1), pad_edge=False)
    for row in artifacts:
        files.add_row(
            Text(safe(row.file)),
            Text(row.kind, style="dim"),
            Text("" if row.entries is None else str(row.entries)),
        )
    console.print(Text("  artifacts", style="bold"))
    console.print(Padding(files, (0, 0, 0, 4), expand=False))
    if loaders:
        _loader_table(console, loaders)
    if gguf is not None:
        _gguf_section(console, gguf)


def _tok(entry: GgufToken | None) -> Text:
    if entry is None:
        return Text("—", style="dim")
    out = Text(str(entry.id))
    if entry.token is not None:
        out.append(" ")
        out.append(visible(entry.token), style="cyan")
    return out


def _toks(entries: tuple[GgufToken, ...]) -> Text:
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


def _gguf_section(console: Console, g: GgufSummary) -> None:
    """llama.cpp's view of the GGUF: flags, and the three stop sets side by side."""
    console.print(Text("  llama.cpp (GGUF)", style="bold"))
    pre = g.pre if g.pre is not None else "none"
    head = f"{g.file} · v{g.version} {g.byte_order}-endian · {g.model} ({g.vocab_type or 'unknown'})"
    if g.vocab_type == "BPE":
        head += f" · pre {pre} ({g.pre_state}{', ' + g.pre_family if g.pre_family else ''})"
    key_value(console, "file", head, indent=4, key_width=9)
    flags = " · ".join(f"{f.name} {str(f.value).lower()}" for f in g.flags)
    key_value(console, "flags", flags, indent=4, key_width=9)
    if g.load_error:
        key_value(
            console,
            "load",
            Text(safe(f"llama.cpp refuses this file: {g.load_error}"), style="red"),
            indent=4,
            key_width=9,
        )
    table = Table(box=None, show_header=True, header_style="dim", padding=(0, 1), pad_edge=False)
    for col in ("who stops", "on"):
        table.add_column(col, overflow="fold")
    table.add_row(Text("llama.cpp (its EOG set)"), _toks(tuple(GgufToken(e.id, e.token) for e in g.eog)))
    table.add_row(Text("runtimes reading only the eos id"), _toks(g.eos_ids))
    turn = g.end_of_turn
    if turn is not None:
        row = (
            _tok(GgufToken(turn.id, turn.token))
            if turn.id is not None
            else Text(visible(turn.token) + " (not a token)")
        )
        row.append("  ")
        row.append_text(_stops("llama.cpp", turn.llamacpp_stops))
        row.append(" · ")
        row.append_text(_stops("eos-only runtimes", turn.eos_only_runtimes_stop))
        table.add_row(Text("the chat template's end of turn"), row)
    console.print(Padding(table, (0, 0, 0, 4), expand=False))


def _loader_table(console: Console, loaders: tuple[LoaderView, ...]) -> None:
    """Which files each loader reads by its precedence, and whether it sees a gap."""
    table = Table(box=None, show_header=True, header_style="dim", padding=(0, 1), pad_edge=False)
    for col in ("loader", "gap", "files (and the rule that picked them)"):
        table.add_column(col, overflow="fold")  # a narrow terminal wraps file names, never cuts them
    for row in loaders:
        if row.sees_gap is None:
            gap = Text("cannot load", style="yellow")
        elif row.sees_gap:
            assert row.unmapped is not None  # it sees a gap
            gap = Text(f"{row.unmapped.count} unmapped", style="red")
        else:
            gap = Text("none", style="green")
        files = Text(", ".join(row.files) or "—")
        files.append("\n")
        files.append(row.rule, style="dim")
        table.add_row(Text(row.loader), gap, files)
    console.print(Text("  loaders", style="bold"))
    console.print(Padding(table, (0, 0, 0, 4), expand=False))
