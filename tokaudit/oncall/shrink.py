"""Shrinking a failing id sequence to a minimal reproducer (usually one id)."""

from __future__ import annotations

from collections.abc import Callable

from tokaudit.backends.base import Outcome, call


def failure_class(outcome: Outcome) -> str | None:
    """``panic`` for a Rust panic, else the exception type; None for success."""
    if outcome.ok:
        return None
    return "panic" if outcome.panic else outcome.error_type


class Shrinker:
    """Shrinks failures of one decode function; one-id outcomes are memoised across failures."""

    def __init__(self, decode: Callable[[list[int]], object]) -> None:
        self.decode = decode
        self.calls = 0
        self._single: dict[int, Outcome] = {}

    def outcome(self, ids: list[int]) -> Outcome:
        if len(ids) == 1:
            found = self._single.get(ids[0])
            if found is None:
                self.calls += 1
                found = self._single[ids[0]] = call(self.decode, ids)
            return found
        self.calls += 1
        return call(self.decode, ids)

    def shrink(self, ids: list[int], cls: str) -> tuple[list[int], Outcome]:
        """A 1-minimal subsequence of ``ids`` that still fails with class ``cls``, and its outcome."""
        for i in dict.fromkeys(ids):
            out = self.outcome([i])
            if failure_class(out) == cls:
                return [i], out
        current, current_out = list(ids), self.outcome(list(ids))
        changed = True
        while changed and len(current) > 1:
            changed = False
            for k in range(len(current)):
                candidate = current[:k] + current[k + 1 :]
                out = self.outcome(candidate)
                if failure_class(out) == cls:
                    current, current_out, changed = candidate, out, True
                    break
        return current, current_out
