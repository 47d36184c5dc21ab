"""What reaches the report stream and stderr as text: lone surrogates made printable (an undecodable byte of a path,
``\\ud800`` from a JSON file) or replaced, and the report stream guarded against what a renderer left unescaped."""

from __future__ import annotations

import re
from typing import Any, TextIO

from tokaudit.report.text import guard_output


def printable(text: str) -> str:
    """Lone surrogates (undecodable bytes of a path, ``\\ud800`` from a JSON file) cannot be encoded:
    show an undecodable byte once as ``\\xff``, any other surrogate as ``\\ud800``."""
    if not SURROGATES.search(text):
        return text
    return SURROGATES.sub(
        lambda m: (
            f"\\x{ord(m.group()) - 0xDC00:02x}" if 0xDC80 <= ord(m.group()) <= 0xDCFF else f"\\u{ord(m.group()):04x}"
        ),
        text,
    )


SURROGATES = re.compile("[\ud800-\udfff]")


class ValidText:
    """The report stream with lone surrogates replaced by U+FFFD: every format stays valid UTF-8
    (and valid JSON/XML) whatever bytes a path or a token holds; and guarded (:func:`guard_output`, ``kind``
    as it says) against what a renderer left unescaped. Writes are gathered up to 64 KiB until :meth:`flush`:
    renderers write in small pieces, and with PYTHONUNBUFFERED=1 (usual in containers) each would be a system
    call (~600 for one scan's JSON)."""

    _LIMIT = 1 << 16

    def __init__(self, stream: TextIO, kind: str = "text") -> None:
        self._stream = stream
        self._kind = kind
        self._line_start = True
        self._pending: list[str] = []
        self._size = 0

    def write(self, text: str) -> int:
        self._pending.append(SURROGATES.sub("\ufffd", text))
        self._size += len(text)
        if self._size >= self._LIMIT:
            self._write_pending()
        return len(text)

    def flush(self) -> None:
        self._write_pending()
        self._stream.flush()

    def _write_pending(self) -> None:
        if self._pending:
            text = guard_output("".join(self._pending), self._kind, self._line_start)
            self._pending, self._size = [], 0
            if text:
                tail = text[text.rfind("\n") + 1 :]
                self._line_start = ("\n" in text or self._line_start) and not tail.strip(" \t")
            self._stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
