"""tiktoken rank files (``tiktoken.model``, ``*.tiktoken``): ``base64(token) rank`` per line."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from pathlib import Path

from tokaudit.artifacts.base import MAX_ID, Provenance, read_bytes
from tokaudit.errors import InputError


@dataclass(frozen=True)
class TiktokenRanks:
    path: Path
    by_id: dict[int, bytes]
    #: 1-based line number of each rank, for provenance.
    lines: dict[int, int]
    #: ``(rank, earlier_rank)`` for token bytes that appear more than once.
    duplicate_tokens: tuple[tuple[int, int], ...]

    @property
    def name(self) -> str:
        return self.path.name

    def source(self, rank: int) -> Provenance:
        return Provenance(self.path.name, line=self.lines.get(rank))


def parse_tiktoken_ranks(path: Path) -> TiktokenRanks:
    data = read_bytes(path)
    by_id: dict[int, bytes] = {}
    lines: dict[int, int] = {}
    b64decode = base64.b64decode
    for lineno, raw in enumerate(data.split(b"\n"), 1):
        parts = raw.split()
        if not parts:
            continue  # blank line (or a lone CR)
        if len(parts) != 2:
            raise InputError("expected '<base64 token> <rank>'", file=str(path), line=lineno)
        token_b64, rank_text = parts
        try:
            token = b64decode(token_b64, validate=True)
        except (binascii.Error, ValueError):
            shown = token_b64[:40].decode("ascii", "backslashreplace")
            raise InputError(f"token is not valid base64: {shown!r}", file=str(path), line=lineno) from None
        if not rank_text.isdigit() or len(rank_text) > 19:
            shown = rank_text[:40].decode("ascii", "backslashreplace")
            raise InputError(f"rank is not a non-negative integer: {shown!r}", file=str(path), line=lineno)
        rank = int(rank_text)
        if rank > MAX_ID:
            raise InputError(f"rank {rank} out of range", file=str(path), line=lineno)
        if rank in by_id:
            raise InputError(f"duplicate rank {rank} (first on line {lines[rank]})", file=str(path), line=lineno)
        by_id[rank] = token
        lines[rank] = lineno
    if not by_id:
        raise InputError("no ranks found: not a tiktoken rank file", file=str(path))
    return TiktokenRanks(path, by_id, lines, _duplicate_tokens(by_id))


def _duplicate_tokens(by_id: dict[int, bytes]) -> tuple[tuple[int, int], ...]:
    if len(set(by_id.values())) == len(by_id):
        return ()
    seen: dict[bytes, int] = {}
    dups: list[tuple[int, int]] = []
    for rank in sorted(by_id):
        token = by_id[rank]
        if token in seen:
            dups.append((rank, seen[token]))
        else:
            seen[token] = rank
    return tuple(dups)
