"""``replay``: feed a recorded token stream through the detokenizers and check the invariants."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tokaudit.backends.base import call
from tokaudit.errors import InputError
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Finding
from tokaudit.report.report import TargetResult
from tokaudit.stream import invariants as inv
from tokaudit.stream.detokenizers import (
    REPLACEMENT,
    BytesDetok,
    DecodeContext,
    DecodeStreamDetok,
    Run,
    StepError,
    TokenBytes,
    build_detokenizers,
    run,
)
from tokaudit.stream.readers import Stream
from tokaudit.stream.stops import StopOutcome, apply_stops
from tokaudit.stream.toolcalls import find_tool_calls
from tokaudit.stream.utf8 import incomplete_tail

#: Step sizes of the chunk-invariance test (speculative decoding accepts 1..8 tokens per step).
CHUNK_SIZES = range(1, 9)


@dataclass(frozen=True)
class ReplayOptions:
    detokenizers: Sequence[str]
    prompt: tuple[int, ...] = ()
    stop_strings: tuple[str, ...] = ()
    stop_ids: tuple[int, ...] = ()
    skip_special_tokens: bool = True
    chunk_invariance: bool = True


@dataclass
class Replay:
    """Everything a replay found, before it becomes a report."""

    full: str
    runs: list[Run]
    findings: list[Finding]
    data: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


def load_tokenizer(model: TokenizerModel) -> tuple[Any, str, float]:
    """The ``tokenizers.Tokenizer`` replay decodes with (tokenizer.json, or rebuilt from the ranks)."""
    from tokaudit.backends.registry import load_backends

    loaded = load_backends(model, ["hf"])[0]
    if loaded.backend is None:
        raise InputError(f"cannot build a tokenizer to replay with: {loaded.unavailable}", file=model.target)
    return loaded.backend.tokenizer, loaded.backend.origin, loaded.load_seconds  # type: ignore[attr-defined]


def _reference_chars(ctx: DecodeContext, prompt: Sequence[int], ids: Sequence[int], full: str) -> list[int]:
    """Text length after each generated token, from the token bytes (or DecodeStream when the
    tokenizer's decoder is not byte-level and the bytes do not reproduce the full decode)."""
    ends: list[int] = []
    total = 0
    bytes_run = BytesDetok(ctx, prompt)
    for p, token_id in enumerate(ids):
        total += len(bytes_run.step((token_id,), p))
        ends.append(total)
    if total + len(bytes_run.flush()) == len(full):
        return ends
    ends, total = [], 0
    stream = DecodeStreamDetok(ctx, prompt, prefill=False)
    for p, token_id in enumerate(ids):
        total += len(stream.step((token_id,), p))
        ends.append(total)
    return ends


def _prompt_text(ctx: DecodeContext, prompt: Sequence[int], ids: Sequence[int]) -> str:
    """The prompt's text. A trailing partial character that the generation completes belongs to the
    generated text (a prompt cut inside a character is the prompt-leak case)."""
    if not prompt:
        return ""
    text = ctx.decode(list(prompt))
    stripped = text.rstrip(REPLACEMENT)
    if stripped != text and not ctx.decode(list(prompt) + list(ids[:4])).startswith(text):
        return stripped
    return text


def _generated(ctx: DecodeContext, prompt: Sequence[int], ids: Sequence[int], prompt_text: str) -> str:
    """The full decode of prompt + stream, minus the prompt's text."""
    if not prompt:
        return ctx.decode(list(ids))
    both = ctx.decode(list(prompt) + list(ids))
    return both[len(prompt_text):] if both.startswith(prompt_text) else ctx.decode(list(ids))


def _unmapped(model: TokenizerModel, ctx: DecodeContext, ids: Sequence[int]) -> list[Finding]:
    tokens = ctx.tokens
    declared = model.checked_size
    where: dict[int, list[int]] = {}
    for p, token_id in enumerate(ids):
        if tokens.get(token_id) is None or token_id >= declared:
            where.setdefault(token_id, []).append(p)
    if not where:
        return []
    from tokaudit.backends.registry import load_backends

    # hf is the tokenizer replay already decodes with; the others are built only now that they are needed
    backends = [("hf", ctx.tokenizer.decode)] + [
        (b.name, b.backend.decode) for b in load_backends(model, ["tiktoken", "strict"]) if b.backend is not None
    ]
    out = []
    for token_id, positions in where.items():
        profiles = {}
        for name, table in model.profiles.items():
            found = table.lookup(token_id)
            profiles[name] = found.token.decode("utf-8", "replace") if found else None
        said = {}
        for name, decode in backends:
            outcome = call(decode, [token_id])
            said[name] = outcome.describe() + (" (dropped)" if outcome.ok and outcome.value == "" else "")
        p = positions[0]
        context = (ctx.decode(list(ids[max(p - 8, 0):p])), ctx.decode(list(ids[p + 1:p + 9])))
        out.append(inv.unmapped_finding(token_id, positions, declared, profiles, said, context))
    return out


def _dropped(runs: list[Run], detoks: list[Any], findings: list[Finding]) -> None:
    """Record, for detokenizers that decode through tokenizers, that unmapped ids were dropped."""
    spots = [(f.details["position"], f.details["id"]) for f in findings if f.code == "TA501"]
    for r, d in zip(runs, detoks):
        if d.drops_unknown:
            for p, token_id in spots:
                r.errors.append(StepError(p, token_id, "dropped", "silently dropped by tokenizers decode"))


def _rechunk(ids: Sequence[int], k: int) -> list[tuple[int, ...]]:
    return [tuple(ids[i:i + k]) for i in range(0, len(ids), k)]


def replay(
    model: TokenizerModel, stream: Stream, options: ReplayOptions, loaded: tuple[Any, str, float] | None = None
) -> Replay:
    """Replay ``stream``; ``loaded`` is a :func:`load_tokenizer` result to reuse (benchmarks, tests)."""
    started = time.perf_counter()
    tokenizer, origin, load_seconds = loaded or load_tokenizer(model)
    ctx = DecodeContext(tokenizer, options.skip_special_tokens, TokenBytes(model.files))
    ids, steps, prompt = stream.ids, stream.steps, options.prompt
    seconds: dict[str, float] = {"tokenizer": load_seconds}

    prompt_text = _prompt_text(ctx, prompt, ids)
    t = time.perf_counter()
    full = _generated(ctx, prompt, ids, prompt_text)
    seconds["full"] = time.perf_counter() - t
    chars = inv.CharMap(_reference_chars(ctx, prompt, ids, full))

    findings: list[Finding] = _unmapped(model, ctx, ids)

    # The stream's own bytes: does it end inside a character?
    all_bytes = b"".join(ctx.tokens.data(i, options.skip_special_tokens) for i in list(prompt) + list(ids))
    partial = incomplete_tail(all_bytes)

    detoks = build_detokenizers(options.detokenizers, ctx, prompt)
    runs = []
    for d in detoks:
        t = time.perf_counter()
        runs.append(run(d, steps))
        seconds[d.name] = time.perf_counter() - t
    _dropped(runs, detoks, findings)

    if partial:
        end = len(all_bytes) - len(partial)
        acc, position = len(all_bytes), len(ids) - 1
        while position > 0:
            acc -= len(ctx.tokens.data(ids[position], options.skip_special_tokens))
            if acc <= end:
                break
            position -= 1
        emitted = full.rstrip(REPLACEMENT)
        findings.append(inv.incomplete_finding(partial, position, ids, emitted, {r.name: r.held_bytes for r in runs}))

    for r in runs:
        findings += inv.mismatch_findings(r, full, chars, ids, steps, prompt_text)
        findings += inv.replacement_findings(r, full.rstrip(REPLACEMENT) if partial else full, steps)
        findings += inv.rewritten_findings(r)

    # Tool calls are parsed from the text with special tokens kept (parsers force that).
    keep = full if not options.skip_special_tokens else _generated(
        DecodeContext(tokenizer, False, ctx.tokens), prompt, ids, _prompt_text(DecodeContext(tokenizer, False, ctx.tokens), prompt, ids)
    )
    keep_chars = chars if not options.skip_special_tokens else None
    calls = find_tool_calls(keep)

    def position_of(offset: int) -> int:
        nonlocal keep_chars
        if keep_chars is None:
            keep_chars = inv.CharMap(_reference_chars(DecodeContext(tokenizer, False, ctx.tokens), prompt, ids, keep))
        return keep_chars.position(offset)

    findings += inv.toolcall_findings(calls, position_of, ids)

    stops: dict[str, Any] | None = None
    if options.stop_strings or options.stop_ids:
        stop_ids = frozenset(options.stop_ids)
        ends = list(chars.ends)
        per_token = [full[(ends[p - 1] if p else 0):ends[p]] for p in range(len(ids))]
        reference = apply_stops(per_token, [(i,) for i in ids], ends, options.stop_strings, stop_ids)
        outcomes: dict[str, StopOutcome] = {
            r.name: apply_stops(r.chunks, steps, ends, options.stop_strings, stop_ids) for r in runs
        }
        findings += inv.stop_findings(reference, outcomes, ids)
        stops = {"strings": list(options.stop_strings), "ids": list(options.stop_ids),
                 "expected": reference.to_json(), "detokenizers": {k: v.to_json() for k, v in outcomes.items()}}

    variance: list[dict[str, Any]] = []
    if options.chunk_invariance:
        t = time.perf_counter()
        for r in runs:
            base = r.text + r.flush
            for k in CHUNK_SIZES:
                again = build_detokenizers([r.name.split("-")[0]], ctx, prompt)
                again = [d for d in again if d.name == r.name]
                got = run(again[0], _rechunk(ids, k), track_held=False)
                text = got.text + got.flush
                # The final output (emitted + released) must not depend on the chunking; *when* text
                # is emitted may (a bigger step emits later), and what is held at a cut end is TA502.
                if text != base:
                    findings.append(inv.variance_finding(r.name, k, base, text, chars, ids))
                    variance.append({"detokenizer": r.name, "k": k})
                    break
        seconds["chunk_invariance"] = time.perf_counter() - t

    seconds["total"] = time.perf_counter() - started
    data = {
        "stream": {"format": stream.format, "tokens": len(ids), "steps": len(steps), "prompt_tokens": len(prompt),
                   "skip_special_tokens": options.skip_special_tokens},
        "tokenizer": {"origin": origin, "load_seconds": round(load_seconds, 4)},
        "text": full,
        "detokenizers": ([{"name": "full", "text": full, "held_bytes": 0, "errors": [], "flush": ""}]
                         if "full" in options.detokenizers else []) + [inv.detokenizer_json(r) for r in runs],
        "tool_calls": [{"format": c.format, "closed": c.closed, "valid": c.error is None, "error": c.error} for c in calls],
        "chunk_invariance": {"checked": options.chunk_invariance, "sizes": list(CHUNK_SIZES), "varied": variance},
    }
    if stops is not None:
        data["stops"] = stops
    data["timeline"] = timeline(ctx, steps, runs, findings)
    return Replay(full, runs, findings, data, seconds)


def timeline(ctx: DecodeContext, steps: Sequence[Sequence[int]], runs: list[Run], findings: list[Finding]) -> list[dict[str, Any]]:
    """One row per step: ids, each token's bytes (hex; None when unmapped), each detokenizer's chunk
    and bytes held, and the codes of findings located in this step."""
    problems: dict[int, list[str]] = {}
    for f in findings:
        pos = f.details.get("position")
        if isinstance(pos, int):
            problems.setdefault(pos, []).append(f.name)
    rows = []
    position = 0
    for s, ids in enumerate(steps):
        token_bytes = [ctx.tokens.get(i) for i in ids]
        here = [name for p in range(position, position + len(ids)) for name in problems.get(p, [])]
        rows.append({
            "step": s,
            "position": position,
            "ids": list(ids),
            "bytes_hex": [t[0].hex() if t is not None else None for t in token_bytes],
            "special": [bool(t and t[1]) for t in token_bytes],
            "chunks": {r.name: r.chunks[s] for r in runs},
            "held": {r.name: r.held[s] for r in runs},
            "problems": sorted(set(here)),
        })
        position += len(ids)
    return rows


def replay_result(model: TokenizerModel, stream: Stream, options: ReplayOptions) -> tuple[TargetResult, list[Finding]]:
    result = replay(model, stream, options)
    findings = [f.with_target(model.target) for f in result.findings]
    return TargetResult(model.target, result.data), findings
