"""A token stream as a server emitted it: its ids in one compact array, and its steps (what each server event
carried: one id, or several under speculative decoding) as a view of them."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate
from typing import overload


class Steps(Sequence[tuple[int, ...]]):
    """A stream's steps as a view of its flat ids: step ``s`` is ``ids[starts[s]:starts[s + 1]]``, and with
    ``starts`` None every step is one id. No tuple per step is kept (1M one-id tuples cost 64 MB)."""

    __slots__ = ("ids", "starts")

    def __init__(self, ids: Sequence[int], starts: Sequence[int] | None = None) -> None:
        self.ids, self.starts = ids, starts

    @property
    def single(self) -> bool:
        """Every step carries exactly one id."""
        return self.starts is None

    def __len__(self) -> int:
        return len(self.ids) if self.starts is None else len(self.starts) - 1

    @overload
    def __getitem__(self, s: int) -> tuple[int, ...]: ...
    @overload
    def __getitem__(self, s: slice) -> Steps: ...

    def __getitem__(self, s: int | slice) -> tuple[int, ...] | Steps:
        starts = self.starts
        if isinstance(s, slice):
            first, end, stride = s.indices(len(self))
            if stride != 1:
                raise ValueError("steps are sliced with a stride of 1")
            end = max(end, first)
            if starts is None:
                return Steps(self.ids[first:end])
            a = starts[first]
            return Steps(self.ids[a : starts[end]], array("q", [x - a for x in starts[first : end + 1]]))
        if s < 0:
            s += len(self)
        if not 0 <= s < len(self):
            raise IndexError(s)
        if starts is None:
            return (self.ids[s],)
        return tuple(self.ids[starts[s] : starts[s + 1]])

    def __iter__(self) -> Iterator[tuple[int, ...]]:
        if self.starts is None:
            return ((i,) for i in self.ids)
        ids, starts = self.ids, self.starts
        return (tuple(ids[a:b]) for a, b in zip(starts, starts[1:]))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)) or len(other) != len(self):
            return False
        return all(a == tuple(b) for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]  # equal by value, so unhashable

    def __repr__(self) -> str:
        return f"Steps({list(self)[:8]!r}{'...' if len(self) > 8 else ''})"


def step_start(steps: Sequence[Sequence[int]], s: int) -> int:
    """Where step ``s`` starts among the stream's ids (its first id's position)."""
    if isinstance(steps, Steps):
        return s if steps.starts is None else steps.starts[s]
    return sum(map(len, steps[:s]))


class Stream:
    """A token stream as the server emitted it: the ids (a compact array) and where each step starts."""

    def __init__(self, format: str, ids: Sequence[int], starts: Sequence[int] | None = None) -> None:
        self.format = format
        self.ids: Sequence[int] = ids if isinstance(ids, array) else array("q", ids)
        self.steps = Steps(self.ids, starts)

    @classmethod
    def of_steps(cls, format: str, steps: Iterable[Sequence[int]]) -> Stream:
        """A stream from one sequence of ids per step (empty steps are dropped)."""
        steps = [step for step in steps if step]
        if all(len(step) == 1 for step in steps):
            return cls(format, array("q", [step[0] for step in steps]))
        ids = array("q", [i for step in steps for i in step])
        return cls(format, ids, array("q", accumulate(map(len, steps), initial=0)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and self.format == other.format and self.steps == other.steps

    __hash__ = None  # type: ignore[assignment]  # equal by value, so unhashable

    def __repr__(self) -> str:
        return f"Stream({self.format!r}, {self.steps!r})"
