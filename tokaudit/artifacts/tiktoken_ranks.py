"""tiktoken rank files (``tiktoken.model``, ``*.tiktoken``): ``base64(token) rank`` per line."""

from __future__ import annotations

import base64
import binascii
import re
import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from tokaudit.artifacts.safe_files import read_bytes
from tokaudit.artifacts.strict_json import MAX_ID
from tokaudit.records import Provenance
from tokaudit.errors import InputError

if sys.version_info >= (3, 11):
    from functools import partial

    _b64 = partial(binascii.a2b_base64, strict_mode=True)
else:  # pragma: no cover - Python 3.10

    def _b64(data: bytes) -> bytes:
        return base64.b64decode(data, validate=True)


_B64_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="
#: '=' followed by anything but the space that ends a token or one more '=': padding inside a token
#: (a leading '=' is followed by the token's data), or three '=' in a row.
_MISPLACED_PAD = re.compile(rb"=(?:[^= ]|==)")


@dataclass(frozen=True)
class TiktokenRanks:
    path: Path
    by_id: dict[int, bytes]
    _data: bytes = field(repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.path.name

    @cached_property
    def lines(self) -> dict[int, int]:
        """1-based line number of each rank (computed on first use: only provenance needs it)."""
        out = {}
        for lineno, raw in enumerate(self._data.split(b"\n"), 1):
            parts = raw.split()
            if parts:
                out[int(parts[1])] = lineno
        return out

    def source(self, rank: int) -> Provenance:
        return Provenance(self.path.name, line=self.lines.get(rank))

    @cached_property
    def digest(self) -> str:
        """A content hash of the file as read: results computed from it are kept under it in the result cache."""
        from tokaudit.result_cache import digest

        return digest(self._data)

    @cached_property
    def sha256(self) -> str:
        """Hex digest of the file as read: how tiktoken's registry identifies its published encodings."""
        import hashlib

        return hashlib.sha256(self._data).hexdigest()


def parse_tiktoken_ranks(path: Path) -> TiktokenRanks:
    data = read_bytes(path)
    by_id = _parse_columns(data)
    if by_id is None:  # not the plain layout, or a bad line: find and name it
        by_id = _parse_carefully(data, path)
    if not by_id:
        raise InputError("no ranks found: not a tiktoken rank file", file=str(path))
    return TiktokenRanks(path, by_id, data)


def _parse_columns(data: bytes) -> dict[int, bytes] | None:
    """The common layout (exactly ``token rank`` per line, one space, the last newline optional) parsed
    column-wise with C-level loops, as strictly as the line parser; ``None`` when the file is not exactly
    that, or is invalid (the line parser then finds and names the line)."""
    # Apart from the base64 alphabet (which holds the digits), only separators may occur, alternating
    # space, newline: no CR, tab, blank line or third column.
    separators = data.translate(None, _B64_ALPHABET)
    n = (len(separators) + 1) // 2  # lines
    if not separators or separators != (b" \n" * n)[: len(separators)]:
        return None
    # so the fields are exactly what lies between two separators (splitting at one byte is 2x faster than at whitespace)
    fields = data.replace(b"\n", b" ").split(b" ")
    if data.endswith(b"\n"):
        fields.pop()  # the empty field after the last newline
    # 2n fields: no third field after the last newline (an empty field is an empty token or rank: rejected below)
    if len(fields) != 2 * n:
        return None
    tokens, ranks = fields[0::2], fields[1::2]
    if b" +" in data or max(map(len, ranks)) > 19:
        return None  # a signed or over-long rank (int() takes '+1'; a letter, '=' or nothing makes it raise below)
    # Strict base64 in bulk: every token a multiple of 4 long with '=' only as its last one or two
    # characters (each token is followed by a space). binascii then decodes exactly what strict_mode
    # accepts, without a strict call per token (a keyword argument per call doubled the decode time).
    lengths = set(map(len, tokens))
    if _MISPLACED_PAD.search(data) or any(k % 4 for k in lengths - {1}) or 0 in lengths:
        return None
    if 1 in lengths and any(len(t) == 1 and t != b"=" for t in tokens):
        return None  # a lone '=' is the empty token (whisper's multilingual.tiktoken); any other is invalid
    try:
        ids = list(map(int, ranks))
        by_id = dict(zip(ids, map(binascii.a2b_base64, tokens)))
    except (ValueError, binascii.Error):
        return None
    if len(by_id) != n or max(ids) > MAX_ID:
        return None  # a duplicate rank, or one out of range
    return by_id


def _parse_carefully(data: bytes, path: Path) -> dict[int, bytes]:
    by_id: dict[int, bytes] = {}
    lines: dict[int, int] = {}
    for lineno, raw in enumerate(data.split(b"\n"), 1):
        parts = raw.split()
        if not parts:
            continue  # blank line (or a lone CR)
        if len(parts) != 2:
            raise InputError("expected '<base64 token> <rank>'", file=str(path), line=lineno)
        token_b64, rank_text = parts
        try:
            # whisper's multilingual.tiktoken writes its empty token as a lone '=' (tiktoken's own loader reads it as
            # b'')
            token = b"" if token_b64 == b"=" else _b64(token_b64)
        except (binascii.Error, ValueError):
            shown = token_b64[:40].decode("ascii", "backslashreplace")
            raise InputError(f"token is not valid base64: '{shown}'", file=str(path), line=lineno) from None
        if not rank_text.isdigit() or len(rank_text) > 19:
            shown = rank_text[:40].decode("ascii", "backslashreplace")
            raise InputError(f"rank is not a non-negative integer: '{shown}'", file=str(path), line=lineno)
        rank = int(rank_text)
        if rank > MAX_ID:
            raise InputError(f"rank {rank} out of range", file=str(path), line=lineno)
        if rank in by_id:
            raise InputError(f"duplicate rank {rank} (first on line {lines[rank]})", file=str(path), line=lineno)
        by_id[rank] = token
        lines[rank] = lineno
    return by_id
