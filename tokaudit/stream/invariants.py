"""The invariants a replay checks, each turning what the detokenizers did into findings.

Positions are 0-based token indices in the generated stream (``details.position``).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tokaudit.report.finding import Finding, Severity
from tokaudit.stream import codes
from tokaudit.stream.detokenizers import REPLACEMENT, STALL_IDS, Run
from tokaudit.stream.steps import step_start
from tokaudit.stream.stops import StopOutcome
from tokaudit.stream.toolcalls import ToolCall
from tokaudit.stream.utf8 import describe_partial

#: What known gateways do with an id their tables do not map (research/gateways.md 1.7, 2.A.1).
GATEWAY_BEHAVIOUR = {
    "tokenizers decode (vLLM fast path, smg and Dynamo HF backends)": "silently dropped: the text has a hole",
    "vLLM slow path (remote-code tokenizers)": "decoded to '' when the id is >= len(tokenizer)",
    "Python tiktoken (transformers remote code, ids outside ranks and specials)": (
        "KeyError: Invalid token for decoding"
    ),
    "tiktoken-rs _decode_native_and_split (smg before PR #1482, Dynamo tiktoken backend)": "panic: no entry found for "
    "key — the worker dies "
    "mid-stream",
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
    return (
        " (expected: decoding each token alone is the classic bug, shown for contrast)"
        if name in EXPECTED_DEFECTS
        else ""
    )


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
    return text[max(at - width, 0) : at + width]


def mismatch_findings(
    run: Run, full: str, chars: CharMap, ids: Sequence[int], steps: Sequence[Sequence[int]], prompt_text: str
) -> list[Finding]:
    """stream-mismatch (and prompt-leak) for one detokenizer: chunks + flush must equal the full decode."""
    got = run.text + run.flush
    out = []
    if prompt_text and run.text.startswith(prompt_text) and not full.startswith(prompt_text):
        first = next((k for k, c in enumerate(run.chunks) if c), 0)
        pos = step_start(steps, first)
        out.append(
            codes.finding(
                codes.PROMPT_LEAK,
                f"{run.name}: the first chunk starts with the prompt text {prompt_text[-40:]!r}: the prompt was not "
                "adopted as context (its decode ends inside a character), so it is emitted again",
                severity=_severity(run.name),
                details={
                    "detokenizer": run.name,
                    "position": pos,
                    "id": ids[pos],
                    "step": first,
                    "prompt_text": prompt_text,
                    "first_chunk": run.chunks[first] if run.chunks else "",
                },
            )
        )
        if got == prompt_text + full:
            return out
    if got == full:
        return out
    at = _first_difference(got, full)
    pos = chars.position(at)
    out.append(
        codes.finding(
            codes.STREAM_MISMATCH,
            f"{run.name}: streamed text differs from the full decode at character {at} (token {pos}): "
            f"streamed …{_excerpt(got, at)!r}… vs full …{_excerpt(full, at)!r}…{_expected(run.name)}",
            severity=_severity(run.name),
            details={
                "detokenizer": run.name,
                "position": pos,
                "id": ids[pos] if ids else None,
                "offset": at,
                "streamed": _excerpt(got, at),
                "full": _excerpt(full, at),
            },
        )
    )
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
            return [
                codes.finding(
                    codes.REPLACEMENT_CHAR,
                    f"{run.name}: emitted U+FFFD at character {at} (step of token {position}, id {ids[0]}) where the "
                    f"full decode has {full[at : at + 1]!r}{_expected(run.name)}",
                    severity=_severity(run.name),
                    details={
                        "detokenizer": run.name,
                        "position": position,
                        "id": ids[0],
                        "offset": at,
                        "count": max(extra, 1),
                        "chunk": text[ends[s - 1] if s else 0 : ends[s]],
                    },
                )
            ]
        at = text.find(REPLACEMENT, ends[s])
    return []


def rewritten_findings(run: Run) -> list[Finding]:
    rewrites = [e for e in run.errors if e.kind == "rewritten"]
    if not rewrites:
        return []
    e = rewrites[0]
    return [
        codes.finding(
            codes.TEXT_REWRITTEN,
            f"{run.name}: at token {e.position} (id {e.id}) text already emitted would have to change: {e.message}",
            severity=_severity(run.name),
            details={
                "detokenizer": run.name,
                "position": e.position,
                "id": e.id,
                "count": len(rewrites),
                "message": e.message,
            },
        )
    ]


def stall_findings(run: Run) -> list[Finding]:
    """detokenizer-stall: the strategy held STALL_IDS ids without emitting anything; replay stopped
    stepping it there (its later chunks are empty and what it holds is released at the end)."""
    stalls = [e for e in run.errors if e.kind == "stalled"]
    if not stalls:
        return []
    e = stalls[0]
    return [
        codes.finding(
            codes.STALL,
            f"{run.name}: from token {e.position} (id {e.id}) it {e.message.split(':')[0]}: a client of such a server "
            "sees no text while every step re-decodes the growing window (quadratic); replay stops stepping "
            f"{run.name} "
            "there, so its chunks after that token are empty and the rest comes out at the end",
            severity=_severity(run.name),
            details={"detokenizer": run.name, "position": e.position, "id": e.id, "held_ids": STALL_IDS},
        )
    ]


def incomplete_finding(
    partial: bytes, position: int, ids: Sequence[int], emitted: str, held: dict[str, int]
) -> Finding:
    return codes.finding(
        codes.INCOMPLETE_UTF8,
        f"the stream ends inside a character: {describe_partial(partial)}, begun by token {position} "
        f"(id {ids[position]}); the text as emitted ends …{emitted[-30:]!r}",
        details={
            "position": position,
            "id": ids[position],
            "held_bytes": len(partial),
            "bytes_hex": partial.hex(" "),
            "emitted_tail": emitted[-60:],
            "held_by_detokenizer": held,
        },
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
        f"Python tiktoken raises KeyError, tiktoken-rs panics. Text around it: {context[0][-30:]!r} ⟨{token_id}⟩ "
        f"{context[1][:30]!r}",
        details={
            "position": first,
            "id": token_id,
            "positions": positions[:100],
            "count": len(positions),
            "in_declared_range": token_id < declared,
            "declared_size": declared,
            "profiles": profiles,
            "backends": backends,
            "gateways": GATEWAY_BEHAVIOUR,
            "context": {"before": context[0], "after": context[1]},
        },
    )


def toolcall_findings(calls: Sequence[ToolCall], position_of: Any, ids: Sequence[int]) -> list[Finding]:
    """tool-call-json for every argument segment that does not parse."""
    out = []
    for call in calls:
        if call.error is None:
            continue
        ended = "the stream ended inside the call" if not call.closed else "the call was closed"
        pos = len(ids) - 1 if not call.closed else position_of(call.error_offset or call.start)
        out.append(
            codes.finding(
                codes.TOOL_CALL_JSON,
                f"{call.format} tool-call arguments do not parse: {call.error}; {ended}. "
                f"Arguments: {call.text[-80:]!r}",
                details={
                    "position": pos,
                    "id": ids[pos],
                    "format": call.format,
                    "error": call.error,
                    "closed": call.closed,
                    "arguments": call.text,
                },
            )
        )
    return out


def stop_findings(reference: StopOutcome, outcomes: dict[str, StopOutcome], ids: Sequence[int]) -> list[Finding]:
    out = []
    for name, got in outcomes.items():
        if (got.position, got.text) == (reference.position, reference.text):
            continue
        if reference.position is not None and got.position is None:
            what = (
                f"never detects the stop {reference.matched!r} that completes at token {reference.position}: "
                "the text after it leaks"
            )
        elif got.position != reference.position:
            what = f"detects the stop at token {got.position} instead of {reference.position}"
        elif got.position is None:
            what = "no stop completes, but the text sent differs"
        else:
            what = "detects the stop where expected but the text sent differs"
        at = _first_difference(got.text, reference.text)
        # no stop on either side: the text is lost at the end of the stream
        pos = (
            got.position
            if got.position is not None
            else reference.position
            if reference.position is not None
            else max(len(ids) - 1, 0)
        )
        sent = (
            ""
            if got.text == reference.text
            else f"; sent …{_excerpt(got.text, at)!r}… instead of …{_excerpt(reference.text, at)!r}…"
        )
        out.append(
            codes.finding(
                codes.STOP_SPLIT,
                f"{name}: {what}{sent}{_expected(name)}",
                severity=_severity(name),
                details={
                    "detokenizer": name,
                    "position": pos,
                    "id": ids[pos] if ids else None,
                    "expected": reference.to_json(),
                    "got": got.to_json(),
                },
            )
        )
    return out


def variance_finding(name: str, k: int, base: str, got: str, chars: CharMap, ids: Sequence[int]) -> Finding:
    at = _first_difference(got, base)
    pos = chars.position(at)
    return codes.finding(
        codes.CHUNK_VARIANCE,
        f"{name}: re-chunked into steps of {k} the output changes at character {at} (token {pos}): "
        f"…{_excerpt(got, at)!r}… instead of …{_excerpt(base, at)!r}…",
        severity=_severity(name),
        details={
            "detokenizer": name,
            "position": pos,
            "id": ids[pos] if ids else None,
            "k": k,
            "offset": at,
            "got": _excerpt(got, at),
            "expected": _excerpt(base, at),
        },
    )
