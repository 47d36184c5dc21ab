"""A detokenizer's replay over a whole stream: fed in blocks, kept as compact arrays (:class:`Run`)."""

from __future__ import annotations

import operator
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, chain, islice, repeat

from tokaudit.stream.detokenizers.core import Detokenizer, StepError
from tokaudit.stream.steps import Steps


#: Steps fed to a detokenizer per call: bounds the transient list of chunk strings on long streams.
FEED_BLOCK = 8192


class Chunks(Sequence[str]):
    """The chunk of every step as a view of the run's text (no string per step is kept)."""

    def __init__(self, text: str, ends: Sequence[int]) -> None:
        self.text, self.ends = text, ends

    def __len__(self) -> int:
        return len(self.ends)

    def __getitem__(self, s: int) -> str:  # type: ignore[override]  # indexed by step only, never sliced
        if s < 0:
            s += len(self.ends)
        if not 0 <= s < len(self.ends):
            raise IndexError(s)
        return self.text[self.ends[s - 1] if s else 0 : self.ends[s]]

    def __iter__(self) -> Iterator[str]:
        return self.between(0, len(self.ends))

    def between(self, a: int, b: int) -> Iterator[str]:
        """The chunks of steps ``a`` to ``b - 1``."""
        ends = window(self.ends, a, b)
        return map(self.text.__getitem__, map(slice, chain((self.ends[a - 1] if a else 0,), ends), ends))


def window(values: Sequence[int], a: int, b: int) -> Sequence[int]:
    """``values[a:b]``, without a copy when ``values`` is an array (a 1M-step run's arrays are 8 MB each)."""
    return memoryview(values)[a:b] if isinstance(values, array) else values[a:b]


@dataclass
class Run:
    """One detokenizer's replay: its text, the text length and the bytes held after every step
    (compact arrays, not a string and an int per step; ``held`` leaves out the trailing steps that
    hold nothing), errors, the flush, and what is held at the end."""

    name: str
    text: str = ""
    ends: array = field(default_factory=lambda: array("q"))
    held: array = field(default_factory=lambda: array("q"))
    errors: list[StepError] = field(default_factory=list)
    flush: str = ""
    held_bytes: int = 0
    #: steps that emitted nothing
    empty_steps: int = 0

    @property
    def chunks(self) -> Chunks:
        return Chunks(self.text, self.ends)

    def held_at(self, step: int) -> int:
        """Bytes held after ``step``."""
        return self.held[step] if step < len(self.held) else 0


def spliced(name: str, head: list[str], head_held: list[int], done: Run, k: int) -> Run:
    """A run whose first ``k`` steps are ``head`` (chunks) and ``head_held``, and whose later steps are ``done``'s
    (the same window from step ``k`` on: the same chunks and held bytes)."""
    if not k:
        return Run(name, done.text, done.ends, done.held, [], empty_steps=done.empty_steps)
    text = "".join(head)
    cut = done.ends[k - 1]
    ends = array("q", accumulate(map(len, head)))
    ends.extend(map(operator.add, window(done.ends, k, len(done.ends)), repeat(len(text) - cut)))
    held = array(done.held.typecode, head_held)
    held.extend(window(done.held, k, len(done.held)))
    empty = head.count("") + done.empty_steps - list(islice(done.chunks, k)).count("")
    return Run(name, text + done.text[cut:], ends, trimmed(held), [], empty_steps=empty)


def trimmed(held: array) -> array:
    """``held`` without its trailing zeros (steps that hold nothing at the end are left out)."""
    del held[(len(held.tobytes().rstrip(b"\0")) + held.itemsize - 1) // held.itemsize :]
    return held


def run(detok: Detokenizer, steps: Sequence[Sequence[int]], track_held: bool = True) -> Run:
    """Feed every step to ``detok``. ``track_held=False`` skips the per-step held count (re-runs)."""
    parts: list[str] = []
    ends, held = array("q"), array("I")  # held counts fit 32 bits unless a stream holds 4 GB
    total = position = empty = 0
    for start in range(0, len(steps), FEED_BLOCK):
        block = steps[start : start + FEED_BLOCK]
        text, block_ends, block_held, block_empty = detok.feed_text(block, position, track_held, total)
        ends.extend(block_ends)
        empty += block_empty
        total += len(text)
        parts.append(text)
        try:
            held.extend(block_held)
        except OverflowError:
            held = array("q", held)
            held.extend(block_held)
        position += len(block.ids) if isinstance(block, Steps) else sum(map(len, block))
    return Run(detok.name, "".join(parts), ends, trimmed(held), detok.errors, detok.flush(), detok.held_bytes(), empty)
