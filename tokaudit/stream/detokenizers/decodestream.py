"""``decodestream`` and ``decodestream-prefill``: the ``tokenizers`` library's own ``DecodeStream``, and
when it may take ``offsets``' run instead of being stepped."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from copy import copy
from functools import partial
from itertools import islice
from typing import Any

from tokaudit.stream.detokenizers.core import (
    INITIAL_OFFSET,
    REPLACEMENT,
    STALL_IDS,
    DecodeContext,
    Detokenizer,
    StepError,
)
from tokaudit.stream.detokenizers.offsets import Offsets
from tokaudit.stream.detokenizers.runs import Run, spliced
from tokaudit.stream.steps import Steps


#: DecodeStream is stepped in slices of this many ids, the stall checked after each.
STALL_SLICE = 2048
#: When DecodeStream's run is taken from offsets' (``DecodeStreamDetok.run_from``), the library's own
#: stream is stepped over this many ids first, and must agree.
SELF_CHECK = 4096


class DecodeStreamDetok(Detokenizer):
    """``tokenizers.decoders.DecodeStream``, stepped with each step's ids (an int, or a list for a
    multi-token step). ``prefill``: built with the prompt ids (vLLM since #34217); otherwise the
    prompt ids are stepped through first and their output discarded. An ``Invalid prefix`` error is
    handled as vLLM does: a fresh stream without context, the ids stepped again."""

    def __init__(self, ctx: DecodeContext, prompt: Sequence[int], prefill: bool) -> None:
        super().__init__(ctx)
        self.name = "decodestream-prefill" if prefill else "decodestream"
        self.stream = self._new(list(prompt)) if prefill else self._new()
        self.pending: list[int] = []  # ids stepped since the last emission
        self.last: tuple[Sequence[int], Sequence[int]] = (list(prompt[-INITIAL_OFFSET:]), ())  # context for flush
        self.fed = False  # until it is stepped: run_from may stand in for stepping it then
        self.prompt = tuple(prompt)
        #: the window (ids since the previous read offset) and its read offset before the first generated id,
        #: followed from what the library's stream emits; None when not known (then run_from steps the library)
        self.start: tuple[tuple[int, ...], int] | None = ((), 0)
        if prefill and prompt:  # the prompt's text is the prefix, unless it ends inside a character
            self.start = None if ctx.decode(list(prompt)).endswith(REPLACEMENT) else (tuple(prompt), len(prompt))
        elif prompt:
            window: list[int] = []
            read = 0
            for token_id in prompt:
                window.append(token_id)
                if self.stream.step(ctx.tokenizer, token_id) is not None:
                    window, read = window[read:], len(window) - read
            self.start = (tuple(window), read)

    def run_from(self, offsets: Offsets, done: Run, steps: Sequence[Sequence[int]]) -> Run | None:
        """This strategy's run over ``steps``, taken from ``done``, the run ``offsets`` made of them, where the
        two must agree; None when they may not (then DecodeStream is stepped).

        DecodeStream is the TGI/vLLM window algorithm: it decodes the window before and after each id and
        emits the difference unless the text ends in U+FFFD; it compares byte lengths where offsets compares
        characters, and raises where the window's text does not extend what it emitted. So from the same
        window, over one id per step, the two emit the same chunks and hold the same ids whenever every
        window's text extends its prefix's or ends in U+FFFD (``offsets.like_decodestream``). Without a
        prompt both start empty; with one they start from different windows, so the library's stream is
        stepped until the two windows meet (both having emitted), and offsets' run is taken from there. The
        library's own stream checks the result on the first SELF_CHECK steps; what is held at the end (the
        flush context) is DecodeStream's own."""
        if (
            self.fed
            or self.start is None
            or not offsets.like_decodestream
            or not (isinstance(steps, Steps) and steps.single)
        ):
            return None
        # the head is the library's own steps, taken on this stream: put back as it was if the run is not shared
        before = (copy(self.stream), list(self.pending), self.held_now, self.last, len(self.errors))
        run = self._shared(offsets, done, steps)
        if run is None:
            self.stream, self.pending, self.held_now, self.last = before[:4]
            del self.errors[before[4] :]
            return None
        self.fed = True
        window, read = offsets.ids[offsets.prefix :], offsets.read - offsets.prefix
        self.pending, self.last, self.held_now = list(window[read:]), (window[:read], ()), offsets.held_now
        run.flush, run.held_bytes = self.flush(), self.held_bytes()
        return run

    def _shared(self, offsets: Offsets, done: Run, steps: Steps) -> Run | None:
        """The library's steps until the windows meet, then ``done``'s, if the library's own stream agrees
        on the first SELF_CHECK steps; None otherwise (this stream may have been stepped)."""
        check = copy(self.stream)  # taken before any stepping: the library's own answer for the self-check
        k = 0 if self.start == offsets.start else self._meeting(steps.ids)
        if k is None:
            return None
        head, head_held = self._slice(steps.ids[:k], 0, True) if k else ([], [])
        if self.errors:
            return None
        run = spliced(self.name, head, head_held, done, k)
        try:
            outs = list(map(partial(check.step, self.ctx.tokenizer), steps.ids[:SELF_CHECK]))
        except Exception:  # noqa: BLE001 - an Invalid prefix: the two disagree
            return None
        return run if [o or "" for o in outs] == list(islice(run.chunks, SELF_CHECK)) else None

    def _meeting(self, ids: Sequence[int]) -> int | None:
        """How many of ``ids`` bring this stream's window and offsets' (from the same prompt) to the same
        ids and read offset, both having emitted on the way; None when they do not meet in SELF_CHECK ids."""
        assert self.start is not None
        probe, theirs = copy(self.stream), Offsets(self.ctx, self.prompt)
        window, read = list(self.start[0]), self.start[1]
        mine_emitted = theirs_emitted = False
        for k, token_id in enumerate(ids[:SELF_CHECK]):
            try:
                out = probe.step(self.ctx.tokenizer, token_id)
            except Exception:  # noqa: BLE001 - an Invalid prefix
                return None
            window.append(token_id)
            if out is not None:
                window, read, mine_emitted = window[read:], len(window) - read, True
            elif len(window) - read >= STALL_IDS:
                return None  # a stall: stepped as a stall is (see _tokens)
            theirs_emitted = theirs._tokens([token_id], k, False)[0][0] != "" or theirs_emitted
            if (
                mine_emitted
                and theirs_emitted
                and (tuple(window), read) == (tuple(theirs.ids[theirs.prefix :]), theirs.read - theirs.prefix)
            ):
                return k + 1
        return None

    def _new(self, ids: list[int] | None = None) -> Any:
        from tokenizers.decoders import DecodeStream

        if ids:
            return DecodeStream(ids=ids, skip_special_tokens=self.ctx.skip_special_tokens)
        return DecodeStream(skip_special_tokens=self.ctx.skip_special_tokens)

    def _step_error(self, exc: Exception, ids: Sequence[int], position: int) -> Any:
        """Record a failed step (an ``Invalid prefix`` is a rewrite), and step the ids again on a fresh
        stream without context, as vLLM does; the new stream's ``step``."""
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        kind = "rewritten" if "Invalid prefix" in message else "error"
        self.errors.append(StepError(position + len(ids) - 1, ids[-1], kind, message[:300]))
        self.stream = self._new()
        return self.stream.step

    def _tokens(self, tokens: Sequence[int], position: int, track_held: bool) -> tuple[list[str], list[int]]:
        """:meth:`feed` for one id per step, in slices of STALL_SLICE ids: a stall is caught at the end of
        the slice it begins in (a stall's cost stays bounded; smaller slices cost a fifth more time)."""
        chunks: list[str] = []
        held: list[int] = []
        for start in range(0, len(tokens), STALL_SLICE):
            if self.stalled:
                rest, rest_held = self._held_steps(tokens[start:], self.pending, self.held_now, track_held)
                return chunks + rest, held + rest_held
            part, part_held = self._slice(tokens[start : start + STALL_SLICE], position + start, track_held)
            chunks += part
            held += part_held
            if len(self.pending) >= STALL_IDS:  # the stall began at the STALL_IDS-th id held
                end = position + min(start + STALL_SLICE, len(tokens)) - 1
                self._stall(end - len(self.pending) + STALL_IDS, self.pending[STALL_IDS - 1], STALL_IDS)
        return chunks, held

    def _slice(self, tokens: Sequence[int], position: int, track_held: bool) -> tuple[list[str], list[int]]:
        """Every id stepped by a C-level ``map`` (the outputs that came before a failing step are kept by
        ``list.extend``), then the held bytes and the flush context worked out from where the outputs are None."""
        tokenizer, skip, table = self.ctx.tokenizer, self.ctx.skip_special_tokens, self.ctx.tokens
        outs: list[str | None] = []
        while len(outs) < len(tokens):
            done = len(outs)
            try:
                outs.extend(map(partial(self.stream.step, tokenizer), tokens[done:]))
            except Exception as exc:  # noqa: BLE001 - tokenizers raises a plain Exception for Invalid prefix
                failed = len(outs)
                step = self._step_error(exc, (tokens[failed],), position + failed)
                outs.append(step(tokenizer, tokens[failed]))
        held = [0] * len(outs) if track_held else []
        lengths, length = table.lengths(skip), table.length
        pending = self.pending
        held_now = self.held_now

        def emitted(first: int, end: int) -> None:
            """Steps first..end-1 all emitted: the first released what was pending."""
            nonlocal pending, held_now
            self.last = (pending, (tokens[first],)) if pending else ((), (tokens[first],))
            if end - 1 > first:
                self.last = ((), (tokens[end - 1],))
            pending, held_now = [], 0

        before = -1  # the last step that emitted None
        for k in [k for k, out in enumerate(outs) if out is None]:
            if k > before + 1:
                emitted(before + 1, k)
            token_id = tokens[k]
            pending.append(token_id)
            n = lengths.get(token_id)
            held_now += n if n is not None else length(token_id, skip)
            if track_held:
                held[k] = held_now
            before = k
        if len(outs) > before + 1:
            emitted(before + 1, len(outs))
        self.pending, self.held_now = pending, held_now
        return [o or "" for o in outs], held

    def feed(
        self, steps: Iterable[Sequence[int]], position: int = 0, track_held: bool = True
    ) -> tuple[list[str], list[int]]:
        self.fed = True
        if isinstance(steps, Steps) and steps.single:
            return self._tokens(steps.ids, position, track_held)
        tokenizer, skip, table = self.ctx.tokenizer, self.ctx.skip_special_tokens, self.ctx.tokens
        lengths, length = table.lengths(skip), table.length
        step = self.stream.step
        pending = self.pending
        chunks: list[str] = []
        append_chunk = chunks.append
        held: list[int] = []
        held_now = self.held_now
        for ids in steps:
            if self.stalled:  # not stepped any more: the ids join what is held
                pending.extend(ids)
                append_chunk("")
                held_now += table.count(ids, skip)
                if track_held:
                    held.append(held_now)
                continue
            single = len(ids) == 1
            try:
                out = step(tokenizer, ids[0] if single else list(ids))
            except Exception as exc:  # noqa: BLE001 - tokenizers raises a plain Exception for Invalid prefix
                step = self._step_error(exc, ids, position)
                out = step(tokenizer, ids[0] if single else list(ids))
            position += len(ids)
            if out is None:
                pending.extend(ids)
                append_chunk("")
                for token_id in ids:
                    n = lengths.get(token_id)
                    held_now += n if n is not None else length(token_id, skip)
                if track_held:
                    held.append(held_now)
                if len(pending) >= STALL_IDS:
                    self._stall(position - 1, ids[-1], len(pending))
            else:
                if pending:
                    self.last = (pending, ids)
                    pending = []
                else:
                    self.last = ((), ids)
                append_chunk(out)
                held_now = 0
                if track_held:
                    held.append(0)
        self.pending, self.held_now = pending, held_now
        return chunks, held

    def held_bytes(self) -> int:
        return self.held_now

    def flush(self) -> str:
        if not self.pending:
            return ""
        context = (list(self.last[0]) + list(self.last[1]))[-INITIAL_OFFSET:]
        before = self.ctx.decode(context)
        return self.ctx.decode(context + self.pending)[len(before) :]
