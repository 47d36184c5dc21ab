"""Rich sections of the on-call verbs (explain, decode, encode, fuzz, diff). Layout only: every
value comes from the command's result; token text is shown with :func:`visible`."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from tokaudit.report.report import TargetResult
from tokaudit.report.rich_layout import key_value
from tokaudit.report.text import safe, visible

KIND_STYLE = {"text": "green", "dropped": "yellow", "error": "magenta", "panic": "bold red"}
#: Alternating backgrounds that make token boundaries visible on a terminal.
PIECE_STYLES = ("black on bright_cyan", "black on bright_yellow")
CLASS_STYLE = {"identical": "bold green", "compatible": "bold yellow", "incompatible": "bold red"}


def _kv(console: Console, key: str, value: str | Text, indent: int = 2) -> None:
    key_value(console, key, value, indent=indent, key_width=12)


def _grid() -> Table:
    return Table(box=None, padding=(0, 1), pad_edge=False, header_style="bold")


def _token_text(tok: dict[str, Any], *, spaces: bool = False) -> str:
    """A token's text with invisible characters shown (``spaces``: and its spaces as ␣); partial
    UTF-8 as hex bytes, which keep their own spaces (``<E4 B8>``)."""
    if tok["bytes_hex"] is None:
        return "<unmapped>"
    if tok["partial_utf8"]:
        return "<" + " ".join(tok["bytes_hex"][k : k + 2].upper() for k in range(0, len(tok["bytes_hex"]), 2)) + ">"
    return visible(tok["text"]).replace(" ", "␣") if spaces else visible(tok["text"])


def _where(src: dict[str, Any]) -> str:
    """``file:line (rule)``; the rule is left out when the key already names it (``added_tokens_decoder.163586``
    and rule ``added_tokens_decoder (special)``: the special flag is shown beside the token)."""
    where = src["file"] + (
        f":{src['line']}" if src.get("line") is not None else f" ({src['key']})" if src.get("key") else ""
    )
    key_head = (src.get("key") or "").split(".")[0]
    if key_head and src["rule"].split(" (")[0] == key_head:
        return where
    return f"{where} ({src['rule']})"


def explain_section(console: Console, result: TargetResult) -> None:
    d = result.data
    size = d["checked_size"]
    declared = d["declared_size"]
    _kv(console, "declared", f"{declared if declared is not None else '—'} ({d['declared_by']})")
    for entry in d["ids"]:
        console.print()
        head = Text(f"  {entry['id']}", style="bold cyan")
        if entry["query"] != str(entry["id"]):
            head.append(f"  ({visible(entry['query'])})", style="dim")
        inside = entry["in_declared_range"]
        head.append(
            f"  {'inside' if inside else 'OUTSIDE'} the declared range [0, {size})",
            style="green" if inside else "bold red",
        )
        console.print(head)
        by_profile = {s["profile"]: s for s in entry["sources"]}
        profiles = Table(box=None, padding=(0, 1), pad_edge=False, show_header=False)
        for _ in range(3):
            profiles.add_column(overflow="fold")
        for profile, mapped in entry["mapped"].items():
            src = by_profile.get(profile)
            if not mapped or src is None:
                profiles.add_row(Text(profile, style="bold"), Text("unmapped", style="bold red"), Text(""))
                continue
            where = ("special · " if src["special"] else "") + _where(src)
            profiles.add_row(
                Text(profile, style="bold"), Text(_token_text(src), style="reverse"), Text(where, style="dim")
            )
        console.print(Padding(profiles, (0, 0, 0, 4), expand=False))
        if entry["bytes_hex"] is not None:
            flags = "partial UTF-8" if entry["partial_utf8"] else "valid UTF-8"
            _kv(console, "bytes", f"{entry['bytes_hex'] or '(empty)'}  ({flags})", 4)
        table = _grid()
        table.add_column("backend")
        table.add_column("decode([id])")
        for name, a in entry["backends"].items():
            if not a["available"]:
                table.add_row(Text(name, style="dim"), Text(safe(f"unavailable: {a['reason']}"), style="dim"))
            elif a["kind"] in ("text", "dropped"):
                shown = (
                    Text(visible(a["text"]), style="reverse")
                    if a["text"]
                    else Text("dropped (empty string)", style="yellow")
                )
                table.add_row(Text(name), shown)
            else:
                what = "panic" if a["panic"] else a["exception"]
                table.add_row(Text(name), Text(safe(f"{what}: {a['message']}"), style=KIND_STYLE[a["kind"]]))
        console.print(Padding(table, (0, 0, 0, 4), expand=False))


#: Tokens shown in the pieces line and the table: a 256 KiB text is ~75k tokens, and rich lays out a
#: table of that size for minutes; --format json has them all.
MAX_SHOWN_TOKENS = 1000


def _more(console: Console, tokens: list[dict[str, Any]]) -> None:
    if len(tokens) > MAX_SHOWN_TOKENS:
        console.print(
            Text(f"    … {len(tokens) - MAX_SHOWN_TOKENS} more tokens (--format json lists every one)", style="dim")
        )


def _pieces(console: Console, tokens: list[dict[str, Any]]) -> Text:
    """Token texts end to end: alternating colours on a terminal, ``|`` between pieces elsewhere."""
    out = Text()
    shown = [t for t in tokens if not t.get("skipped")][:MAX_SHOWN_TOKENS]
    for k, tok in enumerate(shown):
        piece = _token_text(tok)
        if console.is_terminal:
            out.append(piece, style=PIECE_STYLES[k % 2] if tok["bytes_hex"] is not None else "bold white on red")
        else:
            out.append(("|" if k else "") + piece)
    return out


def _token_table(console: Console, tokens: list[dict[str, Any]]) -> None:
    table = _grid()
    for col in ("#", "id", "token", ""):
        table.add_column(col, justify="right" if col in ("#", "id") else "left")
    for k, tok in enumerate(tokens[:MAX_SHOWN_TOKENS]):
        flags = [
            f
            for f, on in (
                ("special", tok["special"]),
                ("partial UTF-8", tok["partial_utf8"]),
                ("skipped", tok.get("skipped")),
                ("unmapped", not tok["mapped"]),
            )
            if on
        ]
        if tok["mapped"] and tok["profile"] != "files":
            flags.append(f"only in {tok['profile']}")
        # a token shown alone: make its spaces visible (a lone " " token would otherwise be a blank cell)
        table.add_row(
            Text(str(k), style="dim"),
            Text(str(tok["id"]), style="cyan"),
            Text(_token_text(tok, spaces=True)),
            Text(", ".join(flags), style="dim"),
        )
    console.print(Padding(table, (0, 0, 0, 4), expand=False))
    _more(console, tokens)


def _codec(console: Console, d: dict[str, Any], decoding: bool) -> None:
    _kv(console, "backend", d["backend"] + (f" ({d['backend_detail']})" if d.get("backend_detail") else ""))
    if decoding:
        _kv(
            console,
            "ids",
            f"{len(d['ids'])} from {d['source']}"
            + ("  (specials skipped)" if d["skip_special_tokens"] else "  (specials kept)"),
        )
    if d.get("error"):
        e = d["error"]
        _kv(
            console,
            "error",
            Text(safe(f"{'panic' if e['panic'] else e['exception']}: {e['message']}"), style="bold red"),
        )
    else:
        _kv(console, "text", Text(visible(d["text"])))
    if d["tokens"]:
        _kv(console, "tokens", _pieces(console, d["tokens"]))
        if not decoding:
            _kv(console, "ids", " ".join(str(i) for i in d["ids"]))
    if d.get("server_prompt_ids") is not None and d["server_prompt_ids"] != d["ids"]:
        _kv(
            console,
            "as prompt",
            " ".join(str(i) for i in d["server_prompt_ids"])
            + "  (llama.cpp's server adds BOS/EOS per the GGUF's add flags)",
        )
    _token_table(console, d["tokens"])


def decode_section(console: Console, result: TargetResult) -> None:
    _codec(console, result.data, True)


def encode_section(console: Console, result: TargetResult) -> None:
    _codec(console, result.data, False)


def fuzz_section(console: Console, result: TargetResult) -> None:
    f = result.data["fuzz"]
    _kv(
        console,
        "run",
        f"{f['iterations']:,} sequences of 1–{f['max_length']} ids · seed {f['seed']} · "
        f"declared range [0, {f['checked_size']})",
    )
    _kv(console, "edges", " · ".join(f"{name} {e['count']}" for name, e in f["edges"].items()))
    backends = result.data["backends"]
    for separator in (", ", ",\n"):  # a class per line when the table is too wide for one line per backend
        table = _fuzz_table(backends, separator)
        if Measurement.get(console, console.options, table).maximum + 2 <= console.width:
            console.print(Padding(table, (1, 0, 0, 2), expand=False))
            return
    for row in backends:  # narrower still: one block per backend, wrapped under each value, never cut
        console.print()
        console.print(Text(f"  {row['name']}", style="bold"))
        if not row["available"]:
            _kv(console, "unavailable", row["reason"], 4)
            continue
        cells = _fuzz_cells(row, ", ")
        _kv(
            console,
            "calls",
            f"{cells['calls']} · {cells['failures']} failures ({cells['rate']}) · {cells['calls/s']} calls/s",
            4,
        )
        _kv(console, "by class", cells["by class"], 4)
        _kv(console, "first", cells["first"], 4)


def _fuzz_cells(row: dict[str, Any], separator: str) -> dict[str, Any]:
    classes = separator.join(f"{cls} {c['count']} ({c['in_declared_range']})" for cls, c in row["by_class"].items())
    first = row["first_in_range_reproducer"] or row["first_reproducer"]
    repro = Text("—", style="green")
    if first:
        what = "panic" if first["panic"] else first["exception"]
        repro = Text(
            f"{' '.join(map(str, first['ids']))} → {what}",
            style="bold red" if first["in_declared_range"] else "magenta",
        )
    cps = row["calls_per_second"]
    return {
        "calls": f"{row['calls']:,}",
        "failures": f"{row['failures']:,}",
        "rate": f"{row['rate']:.1%}",
        "calls/s": "—" if cps is None else f"{cps:,.0f}",
        "by class": Text(classes or "none"),
        "first": repro,
    }


def _fuzz_table(backends: list[dict[str, Any]], separator: str) -> Table:
    table = _grid()
    for col in ("backend", "calls", "failures", "rate", "calls/s", "by class (in declared range)", "first reproducer"):
        table.add_column(col, justify="right" if col in ("calls", "failures", "rate", "calls/s") else "left")
    for row in backends:
        if not row["available"]:
            table.add_row(
                Text(row["name"], style="dim"),
                *[Text("—", style="dim")] * 5,
                Text(f"unavailable: {row['reason']}", style="dim"),
            )
            continue
        cells = _fuzz_cells(row, separator)
        table.add_row(
            Text(row["name"], style="bold"),
            Text(cells["calls"]),
            Text(cells["failures"], style="bold red" if row["failures"] else "green"),
            Text(cells["rate"]),
            Text(cells["calls/s"]),
            cells["by class"],
            cells["first"],
        )
    return table


def diff_section(console: Console, result: TargetResult) -> None:
    d = result.data.get("diff")
    if d is not None and d.get("mode") == "conversion":
        _conversion_section(console, d)
    elif d is not None:
        _draft_section(console, d)
    if result.data.get("counts") is not None:
        _counts_section(console, result.data["counts"])


#: Texts shown in the rich counts table (largest changes first); JSON has all of them.
COUNT_ROWS = 10


def _counts_section(console: Console, c: dict[str, Any]) -> None:
    """``diff --corpus``: the two totals, the growth, and the texts whose counts changed most."""
    a, b = c["a"], c["b"]
    _kv(console, "corpus", f"{c['corpus']} · {len(c['texts']):,} texts")
    if b is None:  # one tokenizer's counts (written as a baseline)
        _kv(console, "tokens", f"{a['total']:,} ({a['target']}, {a['backend']})")
        return
    growth = "n/a" if c["growth_percent"] is None else f"{c['growth_percent']:+.2f} %"
    over = c["growth_percent"] is None or c["growth_percent"] > c["max_growth_percent"]
    line = Text(f"{a['total']:,} ({a['target']}, {a['backend']}) → {b['total']:,} ({b['target']}, {b['backend']}) · ")
    line.append(growth, style="bold red" if over else "green")
    line.append(f" (--max-growth {c['max_growth_percent']:g} %) · {c['changed']:,} texts changed")
    _kv(console, "tokens", line)
    changed = sorted((r for r in c["texts"] if r["delta"]), key=lambda r: (-abs(r["delta"]), r["name"]))[:COUNT_ROWS]
    if changed:
        table = _grid()
        for col, justify in (("text", "left"), ("A", "right"), ("B", "right"), ("Δ", "right")):
            table.add_column(col, justify=justify)  # type: ignore[arg-type]
        for r in changed:
            table.add_row(
                Text(r["name"]),
                str(r["a"]),
                str(r["b"]),
                Text(f"{r['delta']:+d}", style="red" if r["delta"] > 0 else "green"),
            )
        console.print(Padding(table, (0, 0, 0, 4), expand=False))


def _draft_section(console: Console, d: dict[str, Any]) -> None:
    cls = d["classification"]
    _kv(console, "verdict", Text(cls.upper(), style=CLASS_STYLE[cls]))
    table = _grid()
    for col in ("", "draft", "target"):
        table.add_column(col)
    a, b = d["draft"], d["target"]
    for label, key in (
        ("path", "path"),
        ("vocabulary", "vocab_artifact"),
        ("declared size", "declared_size"),
        ("mapped ids", "mapped"),
        ("pattern from", "pattern_source"),
    ):
        table.add_row(
            Text(label, style="bold"),
            Text(str(a[key]) if a[key] is not None else "—"),
            Text(str(b[key]) if b[key] is not None else "—"),
        )
    console.print(Padding(table, (0, 0, 0, 4), expand=False))
    _kv(
        console,
        "ids",
        f"{d['same_bytes']:,} same bytes · {d['mismatched']:,} other bytes · {d['draft_only']:,} draft only · "
        f"{d['target_only']:,} target only · {d['special_divergent']:,} special divergent · pattern "
        f"{'same' if d['same_pattern'] else 'differs'}",
    )
    for e in d["examples"]:
        _differing(console, e["id"], e["draft"], e["target"])


def _differing(console: Console, token_id: int, a: str | None, b: str | None) -> None:
    """``    id  a  ≠  b``: one id whose two sides differ."""
    line = Text(f"    {token_id}  ", style="cyan")
    line.append(a if a is not None else "(none)", style="reverse")
    line.append("  ≠  ")
    line.append(b if b is not None else "(none)", style="reverse")
    console.print(line)


def _conversion_section(console: Console, d: dict[str, Any]) -> None:
    """``diff HF_DIR model.gguf``: what the conversion changed."""
    cls = d["classification"]
    _kv(console, "verdict", Text(cls.upper(), style="green" if cls == "faithful" else "red"))
    _kv(console, "HF", f"{d['hf']['path']} ({d['hf']['vocab_artifact']}, {d['hf']['mapped']:,} ids)")
    _kv(console, "GGUF", f"{d['gguf']['path']} ({d['gguf']['model']}, {d['gguf']['mapped']:,} ids)")
    _kv(
        console,
        "ids",
        f"{d['same_bytes']:,} same bytes · {d['mismatched']:,} other bytes · {d['gguf_only']:,} GGUF only · "
        f"{d['type_flag_mismatches']:,} types ≠ special flag",
    )
    for e in d["examples"]:
        _differing(console, e["id"], e["hf"], e["gguf"])
    m = d["merges"]
    if m is not None:
        same = "same" if m["first_difference"] is None else f"first difference at merge {m['first_difference']}"
        _kv(console, "merges", f"HF {m['hf']:,} · GGUF {m['gguf']:,} · {same}")
    p = d["pre"]
    if p["state"] != "n/a":
        match = {
            True: "matches the HF regex",
            False: "does not match the HF regex",
            None: "HF regex not in llama.cpp's table",
        }[p["matches"]]
        _kv(console, "pre-tokenizer", f"{p['gguf'] or 'none'} ({p['state']}) · {match}")
    _kv(console, "specials", "same" if not d["specials"] else f"{len(d['specials'])} differ")
    t = d["template"]
    said = (
        ("same text" if t["same"] else f"differs from character {t['first_difference']}")
        if t["same"] is not None
        else f"HF {'has one' if t['hf'] else 'none'}, GGUF {'has one' if t['gguf'] else 'none'}"
    )
    _kv(console, "chat template", said)
