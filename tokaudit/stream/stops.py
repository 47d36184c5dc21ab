"""Stop handling as a correct server does it, applied to any detokenizer's chunks.

* A stop id is checked before its token is decoded: the text ends where the id starts.
* A stop string is searched in the text seen so far; the text is cut where the stop begins.
* Within one multi-token step the stop that completes at the earliest token wins (ties: stop ids).
* While no stop has matched, the text held back is exactly the longest suffix that is a proper
  prefix of some stop string (the "jail"); everything before it is released.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class StopOutcome:
    """Where the stop was detected (token position), what matched, and the text a client receives."""

    position: int | None = None
    matched: str | int | None = None
    text: str = ""
    #: characters held back after each step, until the stop
    held: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {
            "position": self.position,
            "matched": self.matched,
            "text": self.text,
            "max_held": max(self.held, default=0),
        }


def held_suffix(text: str, stops: Sequence[str]) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of some stop string."""
    best = 0
    for stop in stops:
        for n in range(min(len(stop) - 1, len(text)), best, -1):
            if text.endswith(stop[:n]):
                best = n
                break
    return best


def _earliest(text: str, begin: int, stops: Sequence[str]) -> tuple[int, int, str] | None:
    """The stop occurrence ending earliest at or after ``begin``: (start, end, stop); ties by list order."""
    best: tuple[int, int, str] | None = None
    for stop in stops:
        i = text.find(stop, max(begin - len(stop) + 1, 0))
        if i >= 0 and (best is None or i + len(stop) < best[1]):
            best = (i, i + len(stop), stop)
    return best


def apply_stops(
    chunks: Sequence[str],
    steps: Sequence[Sequence[int]],
    char_ends: Sequence[int],
    stop_strings: Sequence[str],
    stop_ids: frozenset[int],
) -> StopOutcome:
    """Run the stop logic over one detokenizer's chunks.

    ``char_ends[p]`` is the reference text length after token ``p``; it attributes a match inside a
    multi-token step to the token that completed it (and a stop id to the text before it).
    """
    out = StopOutcome()
    text = ""
    position = 0
    for ids, chunk in zip(steps, chunks):
        seen = len(text)
        text += chunk
        id_k = next((k for k, i in enumerate(ids) if i in stop_ids), None)
        match = _earliest(text, seen, stop_strings) if stop_strings else None
        string_pos = None
        if match is not None:
            string_pos = min(bisect_left(char_ends, match[1]), position + len(ids) - 1)
            string_pos = max(string_pos, position)
        if id_k is not None and (string_pos is None or position + id_k <= string_pos):
            p = position + id_k
            cut = char_ends[p - 1] if p > 0 else 0
            out.position, out.matched = p, ids[id_k]
            out.text = text[: max(seen, min(cut, len(text)))]
            return out
        if match is not None:
            out.position, out.matched, out.text = string_pos, match[2], text[: match[0]]
            return out
        out.held.append(held_suffix(text, stop_strings) if stop_strings else 0)
        position += len(ids)
    out.text = text  # end of stream: the jail is released
    return out
