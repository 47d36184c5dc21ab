"""Replay's timeline: one row per shown step (ids, each token's bytes, each detokenizer's chunk and the bytes it
holds, the findings located there), computed when a renderer reads it; which steps are shown (``--steps``, or the
edges and the steps around each finding), and each detokenizer's per-step summary."""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from itertools import accumulate, chain, repeat
from typing import Any

from tokaudit.errors import InputError
from tokaudit.report.finding import Finding
from tokaudit.report.rows import LazyRows
from tokaudit.stream.summary import StepSummary
from tokaudit.stream.detokenizers import DecodeContext, Run, window
from tokaudit.stream.steps import Steps


#: Timelines up to this many steps are shown whole by default; longer ones show the first and last
#: EDGE_STEPS steps and AROUND steps on each side of every finding.
MAX_STEPS_SHOWN = 60
EDGE_STEPS = 8
AROUND = 2


def parse_steps(value: str | None) -> tuple[int, int | None] | None:
    """``--steps``: ``all``, or a range ``FIRST:END`` of step indices (end excluded; either may be
    left out). None: the default view (around findings)."""
    if value is None:
        return None
    text = value.strip().lower()
    if text == "all":
        return (0, None)
    first, colon, last = text.partition(":")
    try:
        a = int(first) if first.strip() else 0
        b = int(last) if last.strip() else None
    except ValueError:
        raise InputError(
            f"{value!r} is not 'all' or a range FIRST:END of step numbers (e.g. 100:200)", key="--steps"
        ) from None
    if not colon or a < 0 or (b is not None and b < a):
        raise InputError(f"{value!r} is not 'all' or a range FIRST:END of step numbers (e.g. 100:200)", key="--steps")
    return (a, b)


def step_summary(runs: Sequence[Run]) -> dict[str, StepSummary]:
    """Per detokenizer: characters emitted, steps that emitted nothing, steps ending with bytes held,
    the most bytes held."""
    out = {}
    counted: dict[int, tuple[int, int]] = {}  # runs that agree share their held arrays: count them once
    for r in runs:
        held = r.held
        if id(held) not in counted:
            counted[id(held)] = (len(held) - held.count(0), max(held, default=0))
        holding, most = counted[id(held)]
        out[r.name] = StepSummary(len(r.text), r.empty_steps, holding, most)
    return out


#: Token facts the timeline memoises at once (a stream of hostile ids is not a reason to hold them all).
TOKEN_MEMO = 1 << 16


class Timeline(LazyRows):
    """One row per shown step: ids, each token's bytes (hex; None when unmapped), each detokenizer's
    chunk and bytes held, and the names of findings located in this step. Rows are computed when
    iterated, so ``--steps all`` on a long stream is written without being held in memory."""

    def __init__(
        self,
        ctx: DecodeContext,
        steps: Sequence[Sequence[int]],
        runs: list[Run],
        findings: list[Finding],
        steps_option: tuple[int, int | None] | None,
    ) -> None:
        self.ctx, self.steps, self.runs = ctx, steps, runs
        self.problems: dict[int, list[str]] = {}
        for f in findings:
            pos = f.details.get("position")
            if isinstance(pos, int):
                self.problems.setdefault(pos, []).append(f.name)
        # where each step starts in the stream (steps of one id: step s starts at s)
        self.starts: Sequence[int] = (
            range(len(steps) + 1)
            if isinstance(steps, Steps) and steps.single
            else array("q", accumulate(map(len, steps), initial=0))
        )
        n = len(steps)
        if steps_option is not None:
            a, b = steps_option
            b = n if b is None else min(b, n)
            self.ranges = [(min(a, n), b)]
            self.shown = "all" if (a, b) == (0, n) else f"{a}:{b}"
        elif n <= MAX_STEPS_SHOWN:
            self.ranges, self.shown = [(0, n)], "all"
        else:
            keep = [(0, EDGE_STEPS), (n - EDGE_STEPS, n)]
            for pos in self.problems:
                s = bisect_right(self.starts, pos) - 1
                if 0 <= s < n:
                    keep.append((max(s - AROUND, 0), min(s + AROUND + 1, n)))
            merged: list[tuple[int, int]] = []
            for a, b in sorted(keep):
                if merged and a <= merged[-1][1]:
                    merged[-1] = (merged[-1][0], max(merged[-1][1], b))
                else:
                    merged.append((a, b))
            self.ranges, self.shown = merged, "around findings"

    def __len__(self) -> int:
        return sum(b - a for a, b in self.ranges)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        names = [r.name for r in self.runs]
        token = self._token_info()
        problems = self.problems
        for a, b in self.ranges:
            # each run's chunks and held bytes over the range as columns (C-level slices), zipped per step
            chunks = zip(*(r.chunks.between(a, b) for r in self.runs)) if self.runs else repeat(())
            held = zip(*(chain(window(r.held, a, b), repeat(0)) for r in self.runs)) if self.runs else repeat(())
            for s, position, ids, texts, bytes_held in zip(
                range(a, b), self.starts[a:b], self.steps[a:b], chunks, held
            ):
                tokens = [token(i) for i in ids]
                if len(ids) == 1:
                    here = problems.get(position)
                    shown = sorted(set(here)) if here else []
                else:
                    shown = sorted({name for p in range(position, position + len(ids)) for name in problems.get(p, ())})
                yield {
                    "step": s,
                    "position": position,
                    "ids": list(ids),
                    "bytes_hex": [t[0] for t in tokens],
                    "special": [t[1] for t in tokens],
                    "chunks": dict(zip(names, texts)),
                    "held": dict(zip(names, bytes_held)),
                    "problems": shown,
                }

    def _token_info(self) -> Callable[[int], tuple[str | None, bool]]:
        """id -> (its bytes in hex, None when unmapped; whether it is special), memoised (at most
        TOKEN_MEMO ids at once)."""
        get = self.ctx.tokens.get
        known: dict[int, tuple[str | None, bool]] = {}

        def token(token_id: int) -> tuple[str | None, bool]:
            found = known.get(token_id)
            if found is None:
                entry = get(token_id)
                if entry is None:
                    return None, False
                if len(known) >= TOKEN_MEMO:
                    known.clear()
                found = known[token_id] = (entry[0].hex(), bool(entry[1]))
            return found

        return token
