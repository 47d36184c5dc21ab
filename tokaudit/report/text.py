"""Showing token text safely: invisible characters made visible, bytes as hex where not UTF-8."""

from __future__ import annotations

import unicodedata

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x00": "\\0"}


def visible(text: str) -> str:
    """``text`` with control, format and unusual space characters shown as escapes."""
    out = []
    for ch in text:
        if ch in _NAMED:
            out.append(_NAMED[ch])
        elif ch == " " or ch == "\ufffd":
            out.append(ch)
        elif unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp"):
            out.append(f"\\u{{{ord(ch):04X}}}")
        else:
            out.append(ch)
    return "".join(out)


def token_text(token: bytes) -> str:
    """A token's bytes as text: decoded and made visible when valid UTF-8, else hex bytes."""
    try:
        return visible(token.decode("utf-8"))
    except UnicodeDecodeError:
        return "<" + " ".join(f"{b:02X}" for b in token) + ">"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def severity_counts(summary: dict[str, int]) -> str:
    """``1 error, 5 warnings, 0 notes``."""
    return f"{plural(summary['error'], 'error')}, {plural(summary['warning'], 'warning')}, {plural(summary['note'], 'note')}"
