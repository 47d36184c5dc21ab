"""Chunk invariance: the stream re-chunked into steps of 1..8 tokens (as speculative decoding accepts them) must give
each detokenizer the same text. Short streams are re-chunked whole; long ones only in windows around the tokens where
chunking can matter, a full re-run confirming a hit (:func:`chunk_variance`, findings from
:func:`tokaudit.stream.invariants.variance_finding`)."""

from __future__ import annotations

import operator
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import accumulate, compress
from typing import Any

from tokaudit.report.finding import Finding
from tokaudit.stream.detokenizers import DecodeContext, Run, build_detokenizers, run as run_steps
from tokaudit.stream.invariants import CharMap, variance_finding
from tokaudit.stream.steps import Steps

#: Step sizes of the chunk-invariance test (speculative decoding accepts 1..8 tokens per step).
CHUNK_SIZES = range(1, 9)
#: Streams up to this many tokens are re-chunked whole; longer ones only in windows around the
#: tokens where chunking can matter (:func:`risky_positions`), a full re-run confirming a hit.
FULL_RECHUNK_TOKENS = 4_096
#: Tokens of context on each side of a risky token (one step of the largest chunk size).
WINDOW = max(CHUNK_SIZES)


def _rechunk(ids: Sequence[int], k: int, start: int = 0) -> list[tuple[int, ...]]:
    """``ids`` (which begin at stream position ``start``) cut where the whole stream cut into steps
    of ``k`` would be cut."""
    first = -start % k
    out = [tuple(ids[:first])] if first else []
    out += [tuple(ids[i : i + k]) for i in range(first, len(ids), k)]
    return [step for step in out if step]


def _fresh(name: str, ctx: DecodeContext, prompt: Sequence[int]) -> Any:
    return next(d for d in build_detokenizers([name.split("-")[0]], ctx, prompt) if d.name == name)


def _output(name: str, ctx: DecodeContext, prompt: Sequence[int], steps: Sequence[Sequence[int]]) -> str:
    got = run_steps(_fresh(name, ctx, prompt), steps, track_held=False)
    return got.text + got.flush


def risky_positions(ctx: DecodeContext, ids: Sequence[int], runs: Sequence[Run]) -> Sequence[int]:
    """Positions where re-chunking can change a detokenizer's output: tokens that are unmapped,
    special, not whole UTF-8 characters, or whose text depends on their neighbours (a decoder that
    strips, joins or replaces: the id decoded twice is not its text twice), plus every position a
    detokenizer reported an error at and both ends of the stream."""
    decode_one, decode = ctx.decode_one, ctx.decode

    def is_risky(token_id: int) -> bool:
        entry = ctx.tokens.get(token_id)
        if entry is None or entry[1]:
            return True
        try:
            text = entry[0].decode("utf-8")
        except UnicodeDecodeError:
            return True
        return decode_one(token_id) != text or decode([token_id, token_id]) != text + text

    risky_ids = {token_id for token_id in set(ids) if is_risky(token_id)}
    n = len(ids)
    marked = bytearray(map(risky_ids.__contains__, ids))  # a byte per position: a set of 1M ints costs 60 MB
    marked[:WINDOW] = b"\1" * min(WINDOW, n)
    marked[max(n - WINDOW, 0) :] = b"\1" * min(WINDOW, n)
    for r in runs:
        for e in r.errors:
            if 0 <= e.position < n:
                marked[e.position] = 1
    return array("q", compress(range(n), marked))


def _windows(risky: Sequence[int], step_starts: Sequence[int] | None, n: int) -> list[tuple[int, int]]:
    """Merged ``[a, b)`` token windows around the risky positions (sorted), widened to whole stream
    steps (``step_starts`` None: every step is one token)."""
    if not risky:
        return []
    # windows [p - WINDOW, p + WINDOW] merge when risky positions are at most 2 * WINDOW + 1 apart
    gap = 2 * WINDOW + 1
    cuts = list(compress(range(1, len(risky)), map(gap.__lt__, map(operator.sub, risky[1:], risky))))
    windows = [
        (max(risky[a] - WINDOW, 0), min(risky[b - 1] + WINDOW + 1, n)) for a, b in zip([0, *cuts], [*cuts, len(risky)])
    ]
    if step_starts is None:
        return windows
    # each merged window widened to whole steps (widening is monotone, so widening the merged windows
    # is widening every position's); widened neighbours can meet, and merge again
    out: list[tuple[int, int]] = []
    for a, b in windows:
        a = step_starts[bisect_right(step_starts, a) - 1]
        k = bisect_right(step_starts, b - 1)
        b = step_starts[k] if k < len(step_starts) else n
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def chunk_variance(
    ctx: DecodeContext,
    runs: Sequence[Run],
    ids: Sequence[int],
    steps: Sequence[Sequence[int]],
    prompt: Sequence[int],
    chars: CharMap,
    full_below: int = FULL_RECHUNK_TOKENS,
) -> tuple[list[Finding], list[dict[str, Any]], dict[str, Any]]:
    """chunk-variance: the final output (emitted + released) must not depend on the chunking; *when*
    text is emitted may (a bigger step emits later), and what is held at a cut end is TA502.

    A stream shorter than ``full_below`` tokens is re-chunked whole into steps of 1..8 for every
    detokenizer. A longer one is re-chunked only in windows around :func:`risky_positions` (each
    window replayed with the stream's own steps and with steps of k, fed the 8 ids before it as
    context; identical windows are replayed once); a window that differs is confirmed by re-chunking
    the whole stream, so a finding is always the same as a full check would report."""
    findings: list[Finding] = []
    variance: list[dict[str, Any]] = []
    sampled = len(ids) >= full_below
    info: dict[str, Any] = {"mode": "windows" if sampled else "whole stream"}
    # distinct window contents (context, ids, step shape: repeated text is replayed once), each with
    # its ids, its own steps, its context and the starts of the windows that have it
    plan: dict[tuple[Any, ...], tuple[Sequence[int], Sequence[Sequence[int]], tuple[int, ...], list[int]]] = {}
    if sampled:
        single = len(steps) == len(ids)
        starts = (
            None
            if single
            else steps.starts
            if isinstance(steps, Steps)
            else array("q", accumulate(map(len, steps), initial=0))
        )
        windows = _windows(risky_positions(ctx, ids, runs), starts, len(ids))
        for a, b in windows:
            first = bisect_left(starts, a) if starts is not None else a
            end = bisect_left(starts, b) if starts is not None else b
            c = max(a - WINDOW, 0)
            key = (
                a == 0,
                a - c,
                tuple(ids[c:b]),
                None if starts is None else tuple(map(operator.sub, starts[first + 1 : end + 1], starts[first:end])),
            )
            found = plan.get(key)
            if found is None:
                context = tuple(prompt) if a == 0 else tuple(ids[c:a])
                plan[key] = (ids[a:b], steps[first:end], context, [a])
            else:
                found[3].append(a)
        info["windows"] = len(windows)
        info["tokens_checked"] = sum(b - a for a, b in windows)
        info["distinct_windows"] = len(plan)
    for r in runs:
        base = r.text + r.flush
        candidates: list[int] = list(CHUNK_SIZES)
        if sampled:
            # The output is a function of (context, ids, chunking): each distinct window is replayed
            # once with its own steps and once per alignment of its k-steps (a window at a cuts
            # where the whole stream cut into steps of k would: at a % k).
            hits: set[int] = set()
            for window, own, context, window_starts in plan.values():
                expected = _output(r.name, ctx, context, own)
                for k in CHUNK_SIZES:
                    if k in hits:
                        continue
                    for a in {a % k: a for a in window_starts}.values():
                        if _output(r.name, ctx, context, _rechunk(window, k, a)) != expected:
                            hits.add(k)
                            break
            candidates = sorted(hits)
        for k in candidates:
            got = run_steps(_fresh(r.name, ctx, prompt), _rechunk(ids, k), track_held=False)
            text = got.text + got.flush
            if text != base:
                findings.append(variance_finding(r.name, k, base, text, chars, ids))
                variance.append({"detokenizer": r.name, "k": k})
                break
    return findings, variance, info
