"""The invariants a replay checks, each turning what the detokenizers did into findings.

Positions are 0-based token indices in the generated stream (``details.position``).
"""

from __future__ import annotations

import operator
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate, compress
from typing import Any

from tokaudit.report.finding import Finding, Severity
from tokaudit.stream import codes
from tokaudit.stream.detokenizers import REPLACEMENT, STALL_IDS, DecodeContext, Run, build_detokenizers, run as run_steps
from tokaudit.stream.readers import Steps, step_start
from tokaudit.stream.stops import StopOutcome
from tokaudit.stream.toolcalls import ToolCall
from tokaudit.stream.utf8 import describe_partial

#: What known gateways do with an id their tables do not map (research/gateways.md 1.7, 2.A.1).
GATEWAY_BEHAVIOUR = {
    "tokenizers decode (vLLM fast path, smg and Dynamo HF backends)": "silently dropped: the text has a hole",
    "vLLM slow path (remote-code tokenizers)": "decoded to '' when the id is >= len(tokenizer)",
    "Python tiktoken (transformers remote code, ids outside ranks and specials)": "KeyError: Invalid token for decoding",
    "tiktoken-rs _decode_native_and_split (smg before PR #1482, Dynamo tiktoken backend)": "panic: no entry found for key — the worker dies mid-stream",
    "smg after PR #1482": "DecodeKeyError returned to the client",
}

#: Naive per-token decoding is wrong by design; its defects are notes that never fail a run.
EXPECTED_DEFECTS = frozenset({"naive"})


@dataclass(frozen=True)
class CharMap:
    """Reference text length after each token, to map a text offset back to a token position."""

    ends: Sequence[int]

    def position(self, offset: int) -> int:
        """The token whose text covers character ``offset`` (the last token past the end)."""
        if not self.ends:
            return 0
        return min(bisect_right(self.ends, offset), len(self.ends) - 1)


def _severity(name: str, default: Severity | None = None) -> Severity | None:
    return Severity.NOTE if name.split("-")[0] in EXPECTED_DEFECTS else default


def _expected(name: str) -> str:
    return " (expected: decoding each token alone is the classic bug, shown for contrast)" if name in EXPECTED_DEFECTS else ""


def _first_difference(a: str, b: str) -> int:
    """Length of the common prefix (binary search over slice comparisons, which run in C)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _excerpt(text: str, at: int, width: int = 24) -> str:
    return text[max(at - width, 0):at + width]


def mismatch_findings(
    run: Run, full: str, chars: CharMap, ids: Sequence[int], steps: Sequence[Sequence[int]], prompt_text: str
) -> list[Finding]:
    """stream-mismatch (and prompt-leak) for one detokenizer: chunks + flush must equal the full decode."""
    got = run.text + run.flush
    out = []
    if prompt_text and run.text.startswith(prompt_text) and not full.startswith(prompt_text):
        first = next((k for k, c in enumerate(run.chunks) if c), 0)
        pos = step_start(steps, first)
        out.append(codes.finding(
            codes.PROMPT_LEAK,
            f"{run.name}: the first chunk starts with the prompt text {prompt_text[-40:]!r}: the prompt was not "
            "adopted as context (its decode ends inside a character), so it is emitted again",
            severity=_severity(run.name),
            details={"detokenizer": run.name, "position": pos, "id": ids[pos], "step": first,
                     "prompt_text": prompt_text, "first_chunk": run.chunks[first] if run.chunks else ""},
        ))
        if got == prompt_text + full:
            return out
    if got == full:
        return out
    at = _first_difference(got, full)
    pos = chars.position(at)
    out.append(codes.finding(
        codes.STREAM_MISMATCH,
        f"{run.name}: streamed text differs from the full decode at character {at} (token {pos}): "
        f"streamed …{_excerpt(got, at)!r}… vs full …{_excerpt(full, at)!r}…{_expected(run.name)}",
        severity=_severity(run.name),
        details={"detokenizer": run.name, "position": pos, "id": ids[pos] if ids else None, "offset": at,
                 "streamed": _excerpt(got, at), "full": _excerpt(full, at)},
    ))
    return out


def replacement_findings(run: Run, full: str, steps: Sequence[Sequence[int]]) -> list[Finding]:
    """replacement-char: U+FFFD in a chunk where the full decode has none at that place (the first
    U+FFFD of each chunk is the one compared)."""
    text, ends = run.text, run.ends
    at = text.find(REPLACEMENT)
    while at >= 0:
        s = bisect_right(ends, at)  # the step whose chunk holds character ``at``
        if at >= len(full) or full[at] != REPLACEMENT:
            position = step_start(steps, s)
            ids = steps[s]
            extra = text.count(REPLACEMENT) - full.count(REPLACEMENT)
            return [codes.finding(
                codes.REPLACEMENT_CHAR,
                f"{run.name}: emitted U+FFFD at character {at} (step of token {position}, id {ids[0]}) where the "
                f"full decode has {full[at:at + 1]!r}{_expected(run.name)}",
                severity=_severity(run.name),
                details={"detokenizer": run.name, "position": position, "id": ids[0], "offset": at,
                         "count": max(extra, 1), "chunk": text[ends[s - 1] if s else 0:ends[s]]},
            )]
        at = text.find(REPLACEMENT, ends[s])
    return []


def rewritten_findings(run: Run) -> list[Finding]:
    rewrites = [e for e in run.errors if e.kind == "rewritten"]
    if not rewrites:
        return []
    e = rewrites[0]
    return [codes.finding(
        codes.TEXT_REWRITTEN,
        f"{run.name}: at token {e.position} (id {e.id}) text already emitted would have to change: {e.message}",
        severity=_severity(run.name),
        details={"detokenizer": run.name, "position": e.position, "id": e.id, "count": len(rewrites), "message": e.message},
    )]


def stall_findings(run: Run) -> list[Finding]:
    """detokenizer-stall: the strategy held STALL_IDS ids without emitting anything; replay stopped
    stepping it there (its later chunks are empty and what it holds is released at the end)."""
    stalls = [e for e in run.errors if e.kind == "stalled"]
    if not stalls:
        return []
    e = stalls[0]
    return [codes.finding(
        codes.STALL,
        f"{run.name}: from token {e.position} (id {e.id}) it {e.message.split(':')[0]}: a client of such a server "
        f"sees no text while every step re-decodes the growing window (quadratic); replay stops stepping {run.name} "
        "there, so its chunks after that token are empty and the rest comes out at the end",
        severity=_severity(run.name),
        details={"detokenizer": run.name, "position": e.position, "id": e.id, "held_ids": STALL_IDS},
    )]


def incomplete_finding(partial: bytes, position: int, ids: Sequence[int], emitted: str, held: dict[str, int]) -> Finding:
    return codes.finding(
        codes.INCOMPLETE_UTF8,
        f"the stream ends inside a character: {describe_partial(partial)}, begun by token {position} "
        f"(id {ids[position]}); the text as emitted ends …{emitted[-30:]!r}",
        details={"position": position, "id": ids[position], "held_bytes": len(partial), "bytes_hex": partial.hex(" "),
                 "emitted_tail": emitted[-60:], "held_by_detokenizer": held},
    )


def unmapped_finding(
    token_id: int,
    positions: list[int],
    declared: int,
    profiles: dict[str, str | None],
    backends: dict[str, str],
    context: tuple[str, str],
) -> Finding:
    where = "inside" if token_id < declared else "outside"
    named = [f"{p} names it {t!r}" for p, t in profiles.items() if t is not None]
    first = positions[0]
    times = f" ({len(positions)} times)" if len(positions) > 1 else ""
    return codes.finding(
        codes.UNMAPPED_ID,
        f"id {token_id} at token {first}{times} ({where} the declared vocabulary of {declared}) is mapped by no "
        f"token in the data files{'; ' + '; '.join(named) if named else ''}: tokenizers drops it silently, "
        f"Python tiktoken raises KeyError, tiktoken-rs panics. Text around it: {context[0][-30:]!r} ⟨{token_id}⟩ {context[1][:30]!r}",
        details={"position": first, "id": token_id, "positions": positions[:100], "count": len(positions),
                 "in_declared_range": token_id < declared, "declared_size": declared, "profiles": profiles,
                 "backends": backends, "gateways": GATEWAY_BEHAVIOUR,
                 "context": {"before": context[0], "after": context[1]}},
    )


def toolcall_findings(calls: Sequence[ToolCall], position_of: Any, ids: Sequence[int]) -> list[Finding]:
    """tool-call-json for every argument segment that does not parse."""
    out = []
    for call in calls:
        if call.error is None:
            continue
        ended = "the stream ended inside the call" if not call.closed else "the call was closed"
        pos = len(ids) - 1 if not call.closed else position_of(call.error_offset or call.start)
        out.append(codes.finding(
            codes.TOOL_CALL_JSON,
            f"{call.format} tool-call arguments do not parse: {call.error}; {ended}. Arguments: {call.text[-80:]!r}",
            details={"position": pos, "id": ids[pos], "format": call.format, "error": call.error,
                     "closed": call.closed, "arguments": call.text},
        ))
    return out


def stop_findings(reference: StopOutcome, outcomes: dict[str, StopOutcome], ids: Sequence[int]) -> list[Finding]:
    out = []
    for name, got in outcomes.items():
        if (got.position, got.text) == (reference.position, reference.text):
            continue
        if reference.position is not None and got.position is None:
            what = f"never detects the stop {reference.matched!r} that completes at token {reference.position}: the text after it leaks"
        elif got.position != reference.position:
            what = f"detects the stop at token {got.position} instead of {reference.position}"
        elif got.position is None:
            what = "no stop completes, but the text sent differs"
        else:
            what = "detects the stop where expected but the text sent differs"
        at = _first_difference(got.text, reference.text)
        # no stop on either side: the text is lost at the end of the stream
        pos = got.position if got.position is not None else reference.position if reference.position is not None else max(len(ids) - 1, 0)
        sent = "" if got.text == reference.text else \
            f"; sent …{_excerpt(got.text, at)!r}… instead of …{_excerpt(reference.text, at)!r}…"
        out.append(codes.finding(
            codes.STOP_SPLIT,
            f"{name}: {what}{sent}{_expected(name)}",
            severity=_severity(name),
            details={"detokenizer": name, "position": pos, "id": ids[pos] if ids else None,
                     "expected": reference.to_json(), "got": got.to_json()},
        ))
    return out


def variance_finding(name: str, k: int, base: str, got: str, chars: CharMap, ids: Sequence[int]) -> Finding:
    at = _first_difference(got, base)
    pos = chars.position(at)
    return codes.finding(
        codes.CHUNK_VARIANCE,
        f"{name}: re-chunked into steps of {k} the output changes at character {at} (token {pos}): "
        f"…{_excerpt(got, at)!r}… instead of …{_excerpt(base, at)!r}…",
        severity=_severity(name),
        details={"detokenizer": name, "position": pos, "id": ids[pos] if ids else None, "k": k,
                 "offset": at, "got": _excerpt(got, at), "expected": _excerpt(base, at)},
    )


def detokenizer_json(run: Run) -> dict[str, Any]:
    return {"name": run.name, "text": run.text, "held_bytes": run.held_bytes,
            "errors": [e.to_json() for e in run.errors], "flush": run.flush}


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
    out += [tuple(ids[i:i + k]) for i in range(first, len(ids), k)]
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
    marked[max(n - WINDOW, 0):] = b"\1" * min(WINDOW, n)
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
    windows = [(max(risky[a] - WINDOW, 0), min(risky[b - 1] + WINDOW + 1, n)) for a, b in zip([0, *cuts], [*cuts, len(risky)])]
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
        starts = None if single else steps.starts if isinstance(steps, Steps) else array("q", accumulate(map(len, steps), initial=0))
        windows = _windows(risky_positions(ctx, ids, runs), starts, len(ids))
        for a, b in windows:
            first = bisect_left(starts, a) if starts is not None else a
            end = bisect_left(starts, b) if starts is not None else b
            c = max(a - WINDOW, 0)
            key = (a == 0, a - c, tuple(ids[c:b]), None if starts is None else tuple(map(operator.sub, starts[first + 1:end + 1], starts[first:end])))
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
