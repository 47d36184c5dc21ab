"""``diff``'s section of the rich report: the verdict and the counts of a draft against its target or of a GGUF
against its HF files, the first differing ids, and with ``--corpus`` the token counts. Layout only: every value comes
from the result, given in parts (the view imports no result)."""

from __future__ import annotations

from rich.console import Console
from rich.padding import Padding
from rich.text import Text

from tokaudit.oncall.diff_result import ConversionDiff, CountsDrift, CountsOnly, DraftDiff, DraftSide
from tokaudit.oncall.view import grid, kv

CLASS_STYLE = {"identical": "bold green", "compatible": "bold yellow", "incompatible": "bold red"}


def diff_view(console: Console, d: DraftDiff | ConversionDiff | None, counts: CountsDrift | CountsOnly | None) -> None:
    if isinstance(d, ConversionDiff):
        _conversion_section(console, d)
    elif d is not None:
        _draft_section(console, d)
    if counts is not None:
        _counts_section(console, counts)


#: Texts shown in the rich counts table (largest changes first); JSON has all of them.
COUNT_ROWS = 10


def _counts_section(console: Console, c: CountsDrift | CountsOnly) -> None:
    """``diff --corpus``: the two totals, the growth, and the texts whose counts changed most."""
    a = c.a
    kv(console, "corpus", f"{c.corpus} · {len(c.texts):,} texts")
    if isinstance(c, CountsOnly):  # one tokenizer's counts (written as a baseline)
        kv(console, "tokens", f"{a.total:,} ({a.target}, {a.backend})")
        return
    b, grew = c.b, c.growth_percent
    growth = "n/a" if grew is None else f"{grew:+.2f} %"
    over = grew is None or grew > c.max_growth_percent
    line = Text(f"{a.total:,} ({a.target}, {a.backend}) → {b.total:,} ({b.target}, {b.backend}) · ")
    line.append(growth, style="bold red" if over else "green")
    line.append(f" (--max-growth {c.max_growth_percent:g} %) · {c.changed:,} texts changed")
    kv(console, "tokens", line)
    changed = sorted((r for r in c.texts if r.delta), key=lambda r: (-abs(r.delta), r.name))[:COUNT_ROWS]
    if changed:
        table = grid()
        for col, justify in (("text", "left"), ("A", "right"), ("B", "right"), ("Δ", "right")):
            table.add_column(col, justify=justify)  # type: ignore[arg-type]  # rich's JustifyMethod values
        for r in changed:
            table.add_row(
                Text(r.name),
                str(r.a),
                str(r.b),
                Text(f"{r.delta:+d}", style="red" if r.delta > 0 else "green"),
            )
        console.print(Padding(table, (0, 0, 0, 4), expand=False))


def _side_rows(side: DraftSide) -> tuple[object, ...]:
    """A draft/target side's cells, in the order of :func:`_draft_section`'s rows."""
    return (side.path, side.vocab_artifact, side.declared_size, side.mapped, side.pattern_source)


def _draft_section(console: Console, d: DraftDiff) -> None:
    cls = d.classification
    kv(console, "verdict", Text(cls.upper(), style=CLASS_STYLE[cls]))
    table = grid()
    for col in ("", "draft", "target"):
        table.add_column(col)
    labels = ("path", "vocabulary", "declared size", "mapped ids", "pattern from")
    for label, a, b in zip(labels, _side_rows(d.draft), _side_rows(d.target)):
        table.add_row(
            Text(label, style="bold"),
            Text(str(a) if a is not None else "—"),
            Text(str(b) if b is not None else "—"),
        )
    console.print(Padding(table, (0, 0, 0, 4), expand=False))
    kv(
        console,
        "ids",
        f"{d.same_bytes:,} same bytes · {d.mismatched:,} other bytes · {d.draft_only:,} draft only · "
        f"{d.target_only:,} target only · {d.special_divergent:,} special divergent · pattern "
        f"{'same' if d.same_pattern else 'differs'}",
    )
    for e in d.examples:
        _differing(console, e.id, e.draft, e.target)


def _differing(console: Console, token_id: int, a: str | None, b: str | None) -> None:
    """``    id  a  ≠  b``: one id whose two sides differ."""
    line = Text(f"    {token_id}  ", style="cyan")
    line.append(a if a is not None else "(none)", style="reverse")
    line.append("  ≠  ")
    line.append(b if b is not None else "(none)", style="reverse")
    console.print(line)


def _conversion_section(console: Console, d: ConversionDiff) -> None:
    """``diff HF_DIR model.gguf``: what the conversion changed."""
    cls = d.classification
    kv(console, "verdict", Text(cls.upper(), style="green" if cls == "faithful" else "red"))
    kv(console, "HF", f"{d.hf_path} ({d.hf_vocab_artifact}, {d.hf_mapped:,} ids)")
    kv(console, "GGUF", f"{d.gguf_path} ({d.gguf_model}, {d.gguf_mapped:,} ids)")
    kv(
        console,
        "ids",
        f"{d.same_bytes:,} same bytes · {d.mismatched:,} other bytes · {d.gguf_only:,} GGUF only · "
        f"{d.type_flag_mismatches:,} types ≠ special flag",
    )
    for e in d.examples:
        _differing(console, e.id, e.hf, e.gguf)
    m = d.merges
    if m is not None:
        same = "same" if m.first_difference is None else f"first difference at merge {m.first_difference}"
        kv(console, "merges", f"HF {m.hf:,} · GGUF {m.gguf:,} · {same}")
    p = d.pre
    if p.state != "n/a":
        match = {
            True: "matches the HF regex",
            False: "does not match the HF regex",
            None: "HF regex not in llama.cpp's table",
        }[p.matches]
        kv(console, "pre-tokenizer", f"{p.gguf or 'none'} ({p.state}) · {match}")
    kv(console, "specials", "same" if not d.specials else f"{len(d.specials)} differ")
    t = d.template
    said = (
        ("same text" if t.same else f"differs from character {t.first_difference}")
        if t.same is not None
        else f"HF {'has one' if t.hf else 'none'}, GGUF {'has one' if t.gguf else 'none'}"
    )
    kv(console, "chat template", said)
