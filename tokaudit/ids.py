"""Sets of token ids kept as sorted inclusive ranges.

A declared vocabulary can be as large as 10**12, so id sets are never materialised per id.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, KeysView
from dataclasses import dataclass


@dataclass(frozen=True)
class IdRanges:
    """Sorted, disjoint, non-adjacent inclusive ranges ``((first, last), ...)``."""

    ranges: tuple[tuple[int, int], ...] = ()

    @classmethod
    def from_ids(cls, ids: Iterable[int]) -> IdRanges:
        unique = ids if isinstance(ids, (set, frozenset, dict, KeysView)) else set(ids)  # each id once already
        if not unique:
            return cls()
        low, high = min(unique), max(unique)
        if high - low + 1 == len(unique):  # contiguous: the common case for a vocabulary
            return cls(((low, high),))
        out: list[tuple[int, int]] = []
        for i in sorted(unique):
            if out and out[-1][1] + 1 == i:
                out[-1] = (out[-1][0], i)
            else:
                out.append((i, i))
        return cls(tuple(out))

    @classmethod
    def span(cls, first: int, stop: int) -> IdRanges:
        """The half-open range ``[first, stop)``."""
        return cls(((first, stop - 1),)) if stop > first else cls()

    @property
    def count(self) -> int:
        return sum(last - first + 1 for first, last in self.ranges)

    def __bool__(self) -> bool:
        return bool(self.ranges)

    def __iter__(self) -> Iterator[int]:
        for first, last in self.ranges:
            yield from range(first, last + 1)

    def __contains__(self, i: object) -> bool:
        if not isinstance(i, int):
            return False
        from bisect import bisect_right

        k = bisect_right(self.ranges, (i, float("inf"))) - 1
        return k >= 0 and self.ranges[k][0] <= i <= self.ranges[k][1]

    def first(self, n: int) -> list[int]:
        """The n smallest ids (for examples in messages)."""
        out: list[int] = []
        for first, last in self.ranges:
            for i in range(first, min(last, first + n - len(out) - 1) + 1):
                out.append(i)
            if len(out) >= n:
                break
        return out

    def complement(self, stop: int) -> IdRanges:
        """Ids in ``[0, stop)`` that are not in this set."""
        out: list[tuple[int, int]] = []
        nxt = 0
        for first, last in self.ranges:
            if first >= stop:
                break
            if first > nxt:
                out.append((nxt, first - 1))
            nxt = max(nxt, last + 1)
        if nxt < stop:
            out.append((nxt, stop - 1))
        return IdRanges(tuple(out))

    def union(self, other: IdRanges) -> IdRanges:
        out: list[tuple[int, int]] = []
        for first, last in sorted(self.ranges + other.ranges):
            if out and first <= out[-1][1] + 1:
                out[-1] = (out[-1][0], max(out[-1][1], last))
            else:
                out.append((first, last))
        return IdRanges(tuple(out))

    def intersects(self, other: IdRanges) -> bool:
        """Whether the two sets share an id (one pass over both sorted range lists)."""
        i = j = 0
        while i < len(self.ranges) and j < len(other.ranges):
            (f1, l1), (f2, l2) = self.ranges[i], other.ranges[j]
            if f1 <= l2 and f2 <= l1:
                return True
            if l1 < l2:
                i += 1
            else:
                j += 1
        return False

    def at_or_above(self, bound: int) -> IdRanges:
        out = [(max(f, bound), hi) for f, hi in self.ranges if hi >= bound]
        return IdRanges(tuple(out))

    def to_json(self) -> list[list[int]]:
        return [[f, hi] for f, hi in self.ranges]

    def describe(self, limit: int = 6) -> str:
        """Human form: ``163589, 163592, 163600, 163608–163837``."""
        parts = [str(f) if f == hi else f"{f}–{hi}" for f, hi in self.ranges[:limit]]
        if len(self.ranges) > limit:
            parts.append(f"… ({len(self.ranges) - limit} more ranges)")
        return ", ".join(parts)
