"""Showing untrusted text safely: token text, and every string a target's files put into a report or an
error line (special-token text, key names, JSON paths, GGUF names, template errors, target names).

:func:`safe` is the one function that makes such a string harmless on a terminal and in a CI log: control
characters (C0 with CR and LF, DEL, C1: ESC, BEL, CSI), format characters (bidi overrides and isolates,
zero-width marks), line and paragraph separators and lone surrogates become visible escapes (``\\n``,
``\\u{1B}``), so no string can start a line, move the cursor, retitle the terminal or reorder what follows it;
and a GitHub v1 workflow command (``##[``) is broken up (``##\\u{5B}``). Every renderer applies it to the
untrusted fields it shows, and every error line on stderr goes through it. :func:`visible` (token text) shows
non-ASCII spaces and unassigned characters as escapes too. :func:`guard_output` is the last line of defence on
the report stream, for what a renderer did not escape.
"""

from __future__ import annotations

import re
import unicodedata

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x00": "\\0"}
#: Format characters (Unicode 15's Cf: soft hyphen, Arabic marks, zero-width and bidi controls, the BOM,
#: interlinear annotation, tags), line and paragraph separators, lone surrogates: a character class's body.
_FORMAT = (
    "\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064"
    "\u2066-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
)
#: What :func:`safe` escapes: C0 and C1 controls and DEL, the format characters, and the start of a GitHub v1
#: workflow command.
_UNSAFE = re.compile(f"[\x00-\x1f\x7f-\x9f{_FORMAT}]|##\\[")


def _escape(m: re.Match[str]) -> str:
    ch = m.group()
    if ch == "##[":
        return "##\\u{5B}"
    return _NAMED.get(ch) or f"\\u{{{ord(ch):04X}}}"


def safe(text: str) -> str:
    """``text`` with everything that could act on a terminal or a CI log shown as an escape (see the module)."""
    return _UNSAFE.sub(_escape, text) if _UNSAFE.search(text) else text


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
    return "".join(out).replace("##[", "##\\u{5B}")


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
    counts = (plural(summary["error"], "error"), plural(summary["warning"], "warning"), plural(summary["note"], "note"))
    return ", ".join(counts)


#: Residual unsafe characters on the report stream: as :data:`_UNSAFE` but newline and tab, and the ESC that starts
#: one of rich's colour codes (``ESC [ digits m``).
_RESIDUAL = re.compile(f"[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f-\x9f{_FORMAT}]|\x1b(?!\\[[0-9;]*m)|##\\[")
#: What JSON leaves raw of those (it escapes C0 itself).
_JSON_RESIDUAL = re.compile(f"[\x7f-\x9f{_FORMAT}]|##\\[")
_COMMAND_LINE = re.compile(r"(?m)^([ \t]*)::")


def guard_output(text: str, kind: str, line_start: bool) -> str:
    """The report stream's last line of defence (``kind``: ``json`` for JSON documents, ``commands`` for
    ``--format github``, ``text`` otherwise), for whatever a renderer did not escape itself:

    * JSON: the characters JSON leaves raw (DEL, C1, bidi, zero-width, line separators) and ``##[`` become
      ``\\uXXXX`` escapes, which decode to the same strings: the document means the same.
    * text: a raw control character but newline and tab (and the ESC of a colour code) becomes a visible escape,
      and a line that would start with ``::`` (a GitHub workflow command; ``line_start``: the previous write
      ended a line) starts with ``\\u{3A}:`` instead. ``commands`` (the github format) keeps its own ``::`` lines.
    """
    if kind == "json":
        return _JSON_RESIDUAL.sub(lambda m: "##\\u005b" if m.group() == "##[" else f"\\u{ord(m.group()):04x}", text)
    text = _RESIDUAL.sub(lambda m: "##\\u{5B}" if m.group() == "##[" else f"\\u{{{ord(m.group()[0]):04X}}}", text)
    if kind == "commands" or "::" not in text:
        return text
    return _COMMAND_LINE.sub(r"\1\\u{3A}:", ("\n" if line_start else "-") + text)[1:]
