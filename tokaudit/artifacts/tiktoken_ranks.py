"""tiktoken rank files (``tiktoken.model``, ``*.tiktoken``): ``base64(token) rank`` per line."""

from __future__ import annotations

import base64
import binascii
import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from tokaudit.artifacts.base import MAX_ID, Provenance, read_bytes
from tokaudit.errors import InputError

if sys.version_info >= (3, 11):
    from functools import partial

    _b64 = partial(binascii.a2b_base64, strict_mode=True)
else:  # pragma: no cover - Python 3.10

    def _b64(data: bytes) -> bytes:
        return base64.b64decode(data, validate=True)


_B64_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="


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
    """The common layout (``token rank`` with one space, one line each, no blank lines) parsed
    column-wise with C-level loops; ``None`` when the file is not exactly that, or is invalid."""
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    if data.count(b" ") != lines or b"\n\n" in data or b"\r" in data or b"\t" in data or not data.strip():
        return None
    fields = data.split()
    if len(fields) != 2 * lines:
        return None
    if data.translate(None, _B64_ALPHABET + b" \n"):
        return None  # a character outside the base64 alphabet (ranks are digits, also in it)
    try:
        ranks = list(map(int, fields[1::2]))
        tokens = list(map(binascii.a2b_base64, fields[0::2]))
    except (ValueError, binascii.Error):
        return None
    by_id = dict(zip(ranks, tokens))
    if len(by_id) != len(ranks) or min(ranks) < 0 or max(ranks) > MAX_ID:
        return None
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
            token = _b64(token_b64)
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
