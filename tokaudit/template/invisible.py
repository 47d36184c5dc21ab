"""Invisible characters in a template or a token (TA852): bidirectional controls and marks, zero-width characters,
and the other format characters that print as nothing, found raw or JSON-escaped; a zero-width joiner inside an emoji
sequence and a mark between letters of a script that needs it are legitimate."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from tokaudit.template.security import MAX_HITS


@dataclass(frozen=True)
class Invisible:
    """One invisible character: 1-based line and column, the code point, its name and class."""

    line: int
    column: int
    codepoint: int
    name: str
    kind: str

    @property
    def label(self) -> str:
        return f"U+{self.codepoint:04X} {self.name}"

    def to_json(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "column": self.column,
            "codepoint": f"U+{self.codepoint:04X}",
            "name": self.name,
            "class": self.kind,
        }


_BIDI_CONTROLS = frozenset(range(0x202A, 0x202F)) | frozenset(range(0x2066, 0x206A))


_BIDI_MARKS = frozenset({0x200E, 0x200F, 0x061C})


_ZERO_WIDTH = frozenset({0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF, 0x180E, 0x2061, 0x2062, 0x2063, 0x2064})


_INVISIBLE = re.compile(
    "[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\u200b-\u200d\u2060-\u2064\ufeff\u180e\U000e0000-\U000e007f]"
)


#: The same characters as they appear escaped in a JSON file (``\\u200b``; tag characters as surrogate pairs).
JSON_ESCAPED = re.compile(
    rb"\\u(?:202[a-eA-E]|206[6-9]|200[b-fB-F]|061[cC]|206[0-4]|[fF][eE][fF][fF]|180[eE]|[dD][bB]40\\u[dD][cC][0-7])"
)


_CHARS = (
    "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
    "\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u180e"
)

UTF8_INVISIBLE = re.compile(
    b"|".join(re.escape(c.encode("utf-8")) for c in _CHARS) + rb"|\xf3\xa0[\x80\x81][\x80-\xbf]"
)


def has_invisible_bytes(data: bytes) -> bool:
    """A quick test on a file's bytes (UTF-8 or JSON-escaped) before it is decoded and walked."""
    return bool(UTF8_INVISIBLE.search(data) or JSON_ESCAPED.search(data))


def _kind(cp: int) -> str:
    if cp in _BIDI_CONTROLS:
        return "bidi-control"
    if cp in _BIDI_MARKS:
        return "bidi-mark"
    if 0xE0000 <= cp <= 0xE007F:
        return "tag"
    if cp == 0xFEFF:
        return "byte-order-mark"
    return "zero-width"


def _pictographic(c: str) -> bool:
    cp = ord(c)
    return (
        unicodedata.category(c) == "So"
        or 0x1F000 <= cp <= 0x1FAFF
        or 0x1F3FB <= cp <= 0x1F3FF
        or cp in (0xFE0F, 0x20E3)
    )


def _script_letter(c: str) -> bool:
    """A letter or mark outside Latin, Greek and Cyrillic: scripts whose words use joiners (Persian, Indic...)."""
    return unicodedata.category(c)[0] in "LM" and ord(c) > 0x052F


def _legitimate(text: str, i: int, cp: int) -> bool:
    before = text[i - 1] if i > 0 else ""
    after = text[i + 1] if i + 1 < len(text) else ""
    if cp == 0x200D and before and after and (_pictographic(before) or _pictographic(after)):
        return True  # an emoji ZWJ sequence (👨‍👩‍👧)
    if cp in (0x200C, 0x200D) and before and after and _script_letter(before) and _script_letter(after):
        return True  # a joiner inside a word (Persian, Devanagari...)
    if cp in _BIDI_MARKS and any(c and unicodedata.bidirectional(c) in ("R", "AL") for c in (before, after)):
        return True  # a mark inside right-to-left text
    if 0xE0000 <= cp <= 0xE007F:
        j = i
        while j > 0 and 0xE0000 <= ord(text[j - 1]) <= 0xE007F:
            j -= 1
        return j > 0 and text[j - 1] == "\U0001f3f4"  # a flag tag sequence (England, Scotland, Wales)
    return False


def invisible_characters(text: str) -> list[Invisible]:
    """Every invisible character of ``text`` that is not one of its legitimate uses, at most MAX_HITS."""
    out: list[Invisible] = []
    for m in _INVISIBLE.finditer(text):
        i, cp = m.start(), ord(m.group())
        if _legitimate(text, i, cp):
            continue
        line = text.count("\n", 0, i) + 1
        column = i - (text.rfind("\n", 0, i) + 1) + 1
        out.append(Invisible(line, column, cp, unicodedata.name(m.group(), f"U+{cp:04X}"), _kind(cp)))
        if len(out) >= MAX_HITS:
            break
    return out
