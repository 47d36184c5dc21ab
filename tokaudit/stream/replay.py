"""``replay``: feed a recorded token stream through the detokenizers and check the invariants."""

from __future__ import annotations

import codecs
import time
from array import array
from collections.abc import Collection, Sequence
from itertools import accumulate, chain
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from tokaudit.backends.inputs import NO_GGUF
from tokaudit.errors import InputError
from tokaudit.model.text import TokenText
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Finding
from tokaudit.stream import chunk_variance as chunks
from tokaudit.stream import invariants as inv
from tokaudit.stream.detokenizers import (
    DefaultDetokenizers,
    REPLACEMENT,
    BytesDetok,
    DecodeContext,
    FEED_BLOCK,
    DecodeStreamDetok,
    Offsets,
    Run,
    TokenBytes,
    build_detokenizers,
    bytes_not_applicable,
    run,
)
from tokaudit.stream.llamacpp_server import NAME as SERVER, Server, build_server, stop_outcome
from tokaudit.stream.steps import Steps, Stream
from tokaudit.stream.result import ReplayResult
from tokaudit.stream.summary import (
    ChunkInvariance,
    DetokenizerOutcome,
    Stops,
    StreamSummary,
    TimelineSteps,
    TokenizerSummary,
    ToolCallSummary,
)
from tokaudit.stream.stops import StopOutcome, apply_stops
from tokaudit.stream.timeline import Timeline, step_summary
from tokaudit.stream.toolcalls import find_tool_calls
from tokaudit.stream.unmapped import record_dropped, unmapped_findings
from tokaudit.stream.utf8 import decode_at_cuts, incomplete_tail

CHUNK_SIZES = chunks.CHUNK_SIZES


@dataclass(frozen=True)
class ReplayOptions:
    detokenizers: Sequence[str]
    prompt: Sequence[int] = ()
    stop_strings: tuple[str, ...] = ()
    stop_ids: tuple[int, ...] = ()
    skip_special_tokens: bool = True
    chunk_invariance: bool = True
    #: ``--steps``: None (steps around findings), or a ``(first, end)`` range of steps to show
    steps: tuple[int, int | None] | None = None
    #: streams this long or longer are checked for chunk invariance in windows (see invariants)
    full_rechunk_tokens: int = chunks.FULL_RECHUNK_TOKENS
    #: ``--stack`` / ``--tool-parser`` / ``--reasoning-parser``: parse the stream as that stack's parsers do
    stack: str | None = None
    tool_parser: str | None = None
    reasoning_parser: str | None = None
    #: ``--gguf FILE``: the GGUF the llama.cpp-server detokenizer streams with (else the target's own GGUF)
    gguf: Path | None = None


@dataclass
class Replay:
    """Everything a replay found, before it becomes a report."""

    full: str
    runs: list[Run]
    findings: list[Finding]
    result: ReplayResult
    seconds: dict[str, float] = field(default_factory=dict)


class LoadedTokenizer(NamedTuple):
    tokenizer: Any
    origin: str
    load_seconds: float
    #: set when rebuilt from ranks with only the entries of the ids replayed (see load_tokenizer)
    subset: str | None = None


def load_tokenizer(model: TokenizerModel, ids: Collection[int] | None = None) -> LoadedTokenizer:
    """The ``tokenizers.Tokenizer`` replay decodes with (tokenizer.json, or rebuilt from the ranks). With
    ``ids`` (every id the replay decodes), one rebuilt from ranks holds only their entries (see
    :mod:`tokaudit.backends.subset`): it decodes any sequence of them as the full build does."""
    from tokaudit.backends.registry import load_backends

    loaded = load_backends(model, ["hf"], decode_only=True, for_ids=ids)[0]  # replay only decodes: no pattern needed
    if loaded.backend is None:
        raise InputError(f"cannot build a tokenizer to replay with: {loaded.unavailable}", file=model.target)
    return LoadedTokenizer(loaded.backend.tokenizer, loaded.backend.origin, loaded.load_seconds, loaded.subset)  # type: ignore[attr-defined]  # the hf backend, the one asked for


def decode_context(model: TokenizerModel, tokenizer: Any, skip_special_tokens: bool) -> DecodeContext:
    """What replay's detokenizers decode with: the tokenizer, the skip flag, the model's token bytes."""
    return DecodeContext(tokenizer, skip_special_tokens, TokenBytes(model.files, TokenText(model)))


#: Tokens decoded per pass by :func:`_reference_chars`.
REFERENCE_BLOCK = 65_536


def _reference_chars(ctx: DecodeContext, prompt: Sequence[int], ids: Sequence[int], full: str) -> array:
    """Text length after each generated token, from the token bytes (or DecodeStream when the
    tokenizer's decoder is not byte-level and the bytes do not reproduce the full decode)."""
    skip = ctx.skip_special_tokens
    data = ctx.tokens.data
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    decoder.decode(b"".join(data(i, skip) for i in prompt))
    tail = decoder.getstate()[0]
    ends = array("q")
    for start in range(0, len(ids), REFERENCE_BLOCK):  # in blocks: the transient lists stay small
        pieces, starts = ctx.tokens.pieces(ids[start : start + REFERENCE_BLOCK], skip)
        bulk = decode_at_cuts(
            tail + b"".join(pieces), len(tail), map(len, pieces), starts, ends[-1] if ends else 0, False
        )
        if bulk is None:  # not valid UTF-8: the replace rules, piece by piece
            decoder.setstate((tail, 0))
            ends.extend(accumulate(map(len, map(decoder.decode, pieces)), initial=ends[-1] if ends else 0))
            del ends[start]
            tail = decoder.getstate()[0]
        else:
            ends += bulk[1]
            tail = bulk[3]
    if (ends[-1] if ends else 0) + len(tail.decode("utf-8", "replace")) == len(full):
        return ends
    ends = array("q")
    stream = DecodeStreamDetok(ctx, prompt, prefill=False)
    for start in range(0, len(ids), FEED_BLOCK):
        chunks, _ = stream.feed([(i,) for i in ids[start : start + FEED_BLOCK]], start, track_held=False)
        ends.extend(accumulate(map(len, chunks), initial=ends[-1] if ends else 0))
        ends.pop(start)
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
        return ctx.decode(ids)  # tokenizers reads an id array as it is (a list of 1M ids costs 36 MB)
    both = ctx.decode(array("q", prompt) + array("q", ids))
    return both[len(prompt_text) :] if both.startswith(prompt_text) else ctx.decode(ids)


def _not_applicable(
    names: Sequence[str], ctx: DecodeContext, server: Server | str | None = None
) -> list[DetokenizerOutcome]:
    """Requested strategies that do not apply to this tokenizer (not run, never a stream error)."""
    out = []
    reason = bytes_not_applicable(ctx.tokens)
    if "bytes" in names and reason is not None:
        out.append(DetokenizerOutcome.not_applicable("bytes", reason))
    if isinstance(server, str):
        out.append(DetokenizerOutcome.not_applicable(SERVER, server))
    return out


def replay(
    model: TokenizerModel, stream: Stream, options: ReplayOptions, loaded: LoadedTokenizer | None = None
) -> Replay:
    """Replay ``stream``; ``loaded`` is a :func:`load_tokenizer` result to reuse (benchmarks, tests)."""
    started = time.perf_counter()
    tokenizer, origin, load_seconds, subset = loaded or load_tokenizer(model, set(chain(stream.ids, options.prompt)))
    ctx = decode_context(model, tokenizer, options.skip_special_tokens)
    ids, steps, prompt = stream.ids, stream.steps, options.prompt
    seconds: dict[str, float] = {"tokenizer": load_seconds}

    prompt_text = _prompt_text(ctx, prompt, ids)
    t = time.perf_counter()
    full = _generated(ctx, prompt, ids, prompt_text)
    seconds["full"] = time.perf_counter() - t

    findings: list[Finding] = unmapped_findings(model, ctx, ids)

    # The stream's own bytes: does it end inside a character? (a character is at most 4 bytes: the
    # tail of the last tokens decides)
    data, skip = ctx.tokens.data, options.skip_special_tokens
    suffix = b""
    for token_id in chain(reversed(ids), reversed(prompt)):
        suffix = data(token_id, skip) + suffix
        if len(suffix) >= 8:
            break
    partial = incomplete_tail(suffix)

    detoks = build_detokenizers(options.detokenizers, ctx, prompt)
    server: Server | str | None = None
    if SERVER in options.detokenizers:
        server = build_server(model, options.gguf, ctx, ids, options.stop_ids)
        if isinstance(server, Server):
            detoks.append(server.detok)
        elif isinstance(options.detokenizers, DefaultDetokenizers) and server == NO_GGUF:
            server = None  # not asked for, and no GGUF: left out
    done: dict[int, Run] = {}
    chars: inv.CharMap | None = None
    # bytes first: when no decoder rule moved a byte, its text lengths per token are the reference's;
    # offsets before decodestream, whose run is usually offsets' own (DecodeStreamDetok.run_from)
    offsets: tuple[Offsets, Run] | None = None
    for k in sorted(
        range(len(detoks)), key=lambda k: (not isinstance(detoks[k], BytesDetok), not isinstance(detoks[k], Offsets))
    ):
        d = detoks[k]
        t = time.perf_counter()
        shared = d.run_from(*offsets, steps) if offsets and isinstance(d, DecodeStreamDetok) else None
        r = done[k] = shared or run(d, steps)
        if isinstance(d, Offsets):
            offsets = (d, r)
        if chars is None:
            plain = isinstance(d, BytesDetok) and isinstance(steps, Steps) and steps.single and d.reproduces_table()
            chars = inv.CharMap(
                r.ends
                if plain and len(r.text) + len(r.flush) == len(full)
                else _reference_chars(ctx, prompt, ids, full)
            )
        if r.text == full:  # a run that agrees with the reference or another run shares their arrays (memory)
            r.text = full
        r.ends = next((e for e in chain((chars.ends,), (o.ends for o in done.values())) if e == r.ends), r.ends)  # type: ignore[misc]  # equal to r.ends: an array
        r.held = next((h for h in (o.held for o in done.values()) if h == r.held), r.held)
        seconds[d.name] = time.perf_counter() - t
    runs = [done[k] for k in range(len(detoks))]
    if chars is None:
        chars = inv.CharMap(_reference_chars(ctx, prompt, ids, full))
    record_dropped(runs, detoks, findings)

    if partial:
        from_end, position = 0, len(ids) - 1  # the token whose bytes begin the partial character
        while position > 0:
            from_end += len(data(ids[position], skip))
            if from_end >= len(partial):
                break
            position -= 1
        emitted = full.rstrip(REPLACEMENT)
        findings.append(inv.incomplete_finding(partial, position, ids, emitted, {r.name: r.held_bytes for r in runs}))

    for r in runs:
        findings += inv.mismatch_findings(r, full, chars, ids, steps, prompt_text)
        findings += inv.replacement_findings(r, full.rstrip(REPLACEMENT) if partial else full, steps)
        findings += inv.rewritten_findings(r)
        findings += inv.stall_findings(r)

    # Tool calls are parsed from the text with special tokens kept (parsers force that); it is the
    # text already decoded unless special tokens were skipped.
    specials = {i for i, token in tokenizer.get_added_tokens_decoder().items() if token.special}
    skipped = options.skip_special_tokens and not specials.isdisjoint(chain(ids, prompt))
    keep = (
        full
        if not skipped
        else _generated(
            DecodeContext(tokenizer, False, ctx.tokens),
            prompt,
            ids,
            _prompt_text(DecodeContext(tokenizer, False, ctx.tokens), prompt, ids),
        )
    )
    keep_chars = chars if not skipped else None
    calls = find_tool_calls(keep)

    def position_of(offset: int) -> int:
        nonlocal keep_chars
        if keep_chars is None:
            keep_chars = inv.CharMap(_reference_chars(DecodeContext(tokenizer, False, ctx.tokens), prompt, ids, keep))
        return keep_chars.position(offset)

    findings += inv.toolcall_findings(calls, position_of, ids)
    parser_data = None
    if options.stack is not None and (options.tool_parser or options.reasoning_parser):
        from tokaudit.parsers.reasoning_table import find_reasoning_parser
        from tokaudit.parsers.tool_table import find_tool_parser
        from tokaudit.stream.parsing import stack_parse

        tool = find_tool_parser(options.stack, options.tool_parser) if options.tool_parser else None
        reason = find_reasoning_parser(options.stack, options.reasoning_parser) if options.reasoning_parser else None
        parser_data, more = stack_parse(tokenizer, ctx.tokens, ids, steps, prompt, options.stack, tool, reason)
        findings += more

    stops: Stops | None = None
    if options.stop_strings or options.stop_ids:
        stop_ids = frozenset(options.stop_ids)
        ends = list(chars.ends)
        per_token = [full[(ends[p - 1] if p else 0) : ends[p]] for p in range(len(ids))]
        reference = apply_stops(per_token, [(i,) for i in ids], ends, options.stop_strings, stop_ids)
        outcomes: dict[str, StopOutcome] = {
            r.name: stop_outcome(server.piece, ids, options.stop_strings, stop_ids | server.eog)  # type: ignore[union-attr]  # the server run exists only with a server
            if r.name == SERVER
            else apply_stops(r.chunks, steps, ends, options.stop_strings, stop_ids)
            for r in runs
        }
        findings += inv.stop_findings(reference, outcomes, ids)
        stops = Stops(options.stop_strings, options.stop_ids, reference, outcomes)

    variance: list[dict[str, Any]] = []
    checked: dict[str, Any] = {}
    if options.chunk_invariance:
        t = time.perf_counter()
        # llama.cpp-server takes one id at a time whatever the steps: chunking cannot change its output
        rechunked = [r for r in runs if r.name != SERVER]
        more, variance, checked = chunks.chunk_variance(
            ctx, rechunked, ids, steps, prompt, chars, options.full_rechunk_tokens
        )
        findings += more
        seconds["chunk_invariance"] = time.perf_counter() - t

    seconds["total"] = time.perf_counter() - started
    full_row = [DetokenizerOutcome("full", full, 0, (), "")] if "full" in options.detokenizers else []
    rows = Timeline(ctx, steps, runs, findings, options.steps)
    result = ReplayResult(
        model.target,
        model.source,
        stream=StreamSummary(stream.format, len(ids), len(steps), len(prompt), options.skip_special_tokens),
        tokenizer=TokenizerSummary(origin, round(load_seconds, 4), subset),
        text=full,
        detokenizers=tuple(
            full_row + [DetokenizerOutcome.of(r) for r in runs] + _not_applicable(options.detokenizers, ctx, server)
        ),
        tool_calls=tuple(ToolCallSummary(c.format, c.closed, c.error) for c in calls),
        chunk_invariance=ChunkInvariance(options.chunk_invariance, tuple(CHUNK_SIZES), tuple(variance), checked),
        stops=stops,
        parser=parser_data,
        llama_cpp_server=server.info if isinstance(server, Server) else None,
        timeline_steps=TimelineSteps(rows.shown, len(rows), len(steps), step_summary(runs)),
        timeline=rows if options.steps is not None else list(rows),
    )
    return Replay(full, runs, findings, result, seconds)


def replay_result(model: TokenizerModel, stream: Stream, options: ReplayOptions) -> tuple[ReplayResult, list[Finding]]:
    replayed = replay(model, stream, options)
    return replayed.result, [f.with_target(model.target) for f in replayed.findings]
