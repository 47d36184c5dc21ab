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
        #: Outcome of each one-id decode asked so far.
        self.singles: dict[int, Outcome] = {}
        #: failure_class of each memoised one-id outcome (None: the id decodes).
        self.classes: dict[int, str | None] = {}

    def outcome(self, ids: list[int]) -> Outcome:
        if len(ids) == 1:
            found = self.singles.get(ids[0])
            if found is None:
                self.calls += 1
                found = self.singles[ids[0]] = call(self.decode, ids)
            return found
        self.calls += 1
        return call(self.decode, ids)

    def one_id_class(self, token_id: int) -> str | None:
        """The failure class of ``decode([token_id])`` (None when it decodes), memoised."""
        if token_id not in self.classes:
            self.classes[token_id] = failure_class(self.outcome([token_id]))
        return self.classes[token_id]

    def single_reproducer(self, ids: list[int], cls: str) -> tuple[list[int], Outcome] | None:
        """The first id of ``ids`` that fails alone with class ``cls`` (the usual 1-minimal
        reproducer), from the memo of one-id outcomes; None when no single id does."""
        for i in ids:
            if self.one_id_class(i) == cls:
                return [i], self.singles[i]
        return None

    def shrink(self, ids: list[int], cls: str) -> tuple[list[int], Outcome]:
        """A 1-minimal subsequence of ``ids`` that still fails with class ``cls``, and its outcome."""
        found = self.single_reproducer(ids, cls)
        if found is not None:
            return found
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
