"""Incremental detokenizers: the strategies serving stacks use to turn streamed ids into text.

Each one is fed the stream step by step (a step may carry several ids, as speculative decoding
emits them) and returns the text chunk it would send for that step. ``flush`` is what it would
add if the stream ended now and everything held were released, so that "chunks + flush" can be
compared with the full decode whatever the detokenizer was still holding.
"""

from __future__ import annotations

import codecs
import operator
from array import array
from collections.abc import Iterable, Iterator, Sequence
from copy import copy
from dataclasses import dataclass, field
from functools import partial
from itertools import accumulate, chain, compress, count, islice, repeat
from typing import Any

from tokaudit.errors import InputError
from tokaudit.model.id_table import IdTable
from tokaudit.model.text import TokenText
from tokaudit.stream.readers import Steps
from tokaudit.stream.utf8 import character_starts, decode_at_cuts

#: The TGI/vLLM/SGLang/smg/Dynamo left-context window (``INITIAL_INCREMENTAL_DETOKENIZATION_OFFSET``).
INITIAL_OFFSET = 5
#: offsets memoises its steps from windows shorter than this many ids, at most WINDOW_MEMO_SIZE of them.
WINDOW_MEMO = 8
WINDOW_MEMO_SIZE = 1 << 18
REPLACEMENT = "\ufffd"
#: what a memo lookup returns for a step never taken (None is a memoised step that holds)
_UNSEEN = object()
#: A window strategy holding this many ids without emitting is stalled: tokaudit stops stepping it (each
#: step re-decodes the whole held window, so a stream that never completes a character costs quadratic
#: time) and releases what it holds at the end. A character is at most 4 byte tokens; a stall is
#: invalid bytes, or text that decodes to nothing, going on and on.
STALL_IDS = 256
#: DecodeStream is stepped in slices of this many ids, the stall checked after each.
STALL_SLICE = 2048
#: When DecodeStream's run is taken from offsets' (``DecodeStreamDetok.run_from``), the library's own
#: stream is stepped over this many ids first, and must agree.
SELF_CHECK = 4096

#: ``--detokenizers`` names, in display order. ``decodestream`` also runs ``decodestream-prefill``
#: when a prompt is given. ``llama.cpp-server`` (:mod:`tokaudit.stream.llamacpp_server`) runs when there
#: is a GGUF (a GGUF target, or ``replay --gguf``).
DETOKENIZER_NAMES = ("full", "offsets", "decodestream", "bytes", "naive", "llama.cpp-server")


class DefaultDetokenizers(list):  # type: ignore[type-arg]
    """The selection when ``--detokenizers`` is not given: llama.cpp-server is left out, not listed as not
    applicable, when there is no GGUF."""


def parse_detokenizer_list(value: str | None) -> list[str]:
    if not value:
        return DefaultDetokenizers(DETOKENIZER_NAMES)
    names = [n.strip() for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in DETOKENIZER_NAMES]
    if unknown:
        raise InputError(
            f"unknown detokenizer {unknown[0]!r} (choose from {', '.join(DETOKENIZER_NAMES)})", key="--detokenizers"
        )
    if not names:
        raise InputError("no detokenizer given", key="--detokenizers")
    return [n for n in DETOKENIZER_NAMES if n in names]


class TokenBytes:
    """Token bytes per id from the files profile (what a gateway reading the data files sees), cached.
    With ``text`` (the model's :class:`~tokaudit.model.text.TokenText`), which ids are special and what
    the ``bytes`` detokenizer emits follow the tokenizer's own decoder."""

    def __init__(self, table: IdTable, text: TokenText | None = None) -> None:
        self.table = table
        self.text = text
        self._cache: dict[int, tuple[bytes, bool] | None] = {}
        self._lengths: dict[bool, dict[int, int]] = {}
        self._pieces: dict[bool, tuple[dict[int, bytes], dict[int, int]]] = {}

    def get(self, token_id: int) -> tuple[bytes, bool] | None:
        """``(bytes, special)``, or None when the files profile maps nothing to the id."""
        try:
            return self._cache[token_id]
        except KeyError:
            found = self.table.lookup(token_id)
            special = found is not None and (found.layer.special or (self.text is not None and self.text.is_special(token_id)))
            entry = (found.token, special) if found is not None else None
            self._cache[token_id] = entry
            return entry

    def data(self, token_id: int, skip_special: bool) -> bytes:
        """The bytes the id contributes to text (nothing for unmapped ids and skipped specials)."""
        entry = self.get(token_id)
        if entry is None or (skip_special and entry[1]):
            return b""
        return entry[0]

    def pieces(self, ids: Sequence[int], skip_special: bool) -> tuple[list[bytes], list[int]]:
        """Each id's :meth:`data` and the characters it begins (for bulk UTF-8 decoding), looked up
        once per distinct id."""
        pieces, starts = self._pieces.setdefault(skip_special, ({}, {}))
        for token_id in set(ids).difference(pieces):
            pieces[token_id] = data = self.data(token_id, skip_special)
            starts[token_id] = character_starts(data)
        return list(map(pieces.__getitem__, ids)), list(map(starts.__getitem__, ids))

    def count(self, ids: Sequence[int], skip_special: bool) -> int:
        return sum(len(self.data(i, skip_special)) for i in ids)

    def lengths(self, skip_special: bool) -> dict[int, int]:
        """A cache id -> byte length (fill with :meth:`length`), for per-token loops."""
        return self._lengths.setdefault(skip_special, {})

    def length(self, token_id: int, skip_special: bool) -> int:
        cache = self.lengths(skip_special)
        n = cache.get(token_id)
        if n is None:
            n = cache[token_id] = len(self.data(token_id, skip_special))
        return n


class DecodeContext:
    """What every detokenizer decodes with: the ``tokenizers.Tokenizer``, the skip flag, token bytes.

    Single-id decodes are memoised: decode is a pure function of the ids, and the window after an
    emission is usually one token, so this saves one of the two decodes per token of ``offsets``.
    """

    def __init__(self, tokenizer: Any, skip_special_tokens: bool, tokens: TokenBytes) -> None:
        self.tokenizer = tokenizer
        self.skip_special_tokens = skip_special_tokens
        self.tokens = tokens
        self.memo: dict[int, str] = {}
        #: offsets' memoised steps (see ``Offsets._tokens``): per (window, read offset), the steps by new id;
        #: and the text of the steps that emit from a one-token window, per window id << 32 | new id
        self.moves: dict[tuple[tuple[int, ...], int], dict[int, tuple[Any, ...]]] = {}
        self.pair_steps: dict[int, str | None] = {}
        self.remembered = 0

    def moves_from(self, window: tuple[int, ...], read: int) -> dict[int, tuple[Any, ...]] | None:
        """The memoised steps from a state (None: the window is too long to memoise)."""
        if len(window) >= WINDOW_MEMO:
            return None
        return self.moves.setdefault((window, read), {})

    def remember(self, moves: dict[int, tuple[Any, ...]], token_id: int, step: tuple[Any, ...]) -> None:
        """Memoise a step, at most WINDOW_MEMO_SIZE of them (then the memo starts again)."""
        if self.remembered >= WINDOW_MEMO_SIZE:
            self.moves.clear()
            self.pair_steps.clear()
            self.remembered = 0
        moves[token_id] = step
        self.remembered += 1

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(ids, self.skip_special_tokens)

    def decode_one(self, token_id: int) -> str:
        text = self.memo.get(token_id)
        if text is None:
            text = self.memo[token_id] = self.tokenizer.decode([token_id], self.skip_special_tokens)
        return text


@dataclass
class StepError:
    """Something a detokenizer did wrong or refused at one position (kind: dropped, error, rewritten)."""

    position: int
    id: int
    kind: str
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"position": self.position, "id": self.id, "kind": self.kind, "message": self.message}


class Detokenizer:
    name = ""
    #: True when it decodes through ``tokenizers``, which silently drops ids it cannot map.
    drops_unknown = True

    def __init__(self, ctx: DecodeContext) -> None:
        self.ctx = ctx
        self.errors: list[StepError] = []
        self.stalled = False
        #: bytes held now, kept up to date by the window strategies (recounting a long held window per
        #: feed would be quadratic on a stalled stream)
        self.held_now = 0

    def feed(self, steps: Iterable[Sequence[int]], position: int = 0, track_held: bool = True) -> tuple[list[str], list[int]]:
        """Feed the steps; return the chunk emitted for each and, with ``track_held``, the bytes held
        after each. Subclasses run this as one tight loop: per-step calls would dominate the cost."""
        raise NotImplementedError

    def _stall(self, position: int, token_id: int, held: int) -> None:
        self.stalled = True
        self.errors.append(StepError(
            position, token_id, "stalled",
            f"held {held} ids without emitting anything: every further step would re-decode the whole held window; "
            "not stepped past here (the rest is released at the end)",
        ))

    def _held_steps(self, tokens: Sequence[int], pending: list[int], held_now: int, track_held: bool) -> tuple[list[str], list[int]]:
        """A stalled strategy's steps: the ids join what it holds, nothing is emitted."""
        skip = self.ctx.skip_special_tokens
        pending.extend(tokens)
        length = self.ctx.tokens.length
        held = list(accumulate((length(t, skip) for t in tokens), initial=held_now))[1:]
        self.held_now = held[-1] if held else held_now
        return [""] * len(tokens), held if track_held else []

    def feed_text(
        self, steps: Sequence[Sequence[int]], position: int, track_held: bool, emitted: int = 0
    ) -> tuple[str, Iterable[int], Sequence[int], int]:
        """:meth:`feed`, returned as the text of all the steps, the characters emitted after each step
        (counted from ``emitted``), the held bytes, and how many steps emitted nothing (strategies that
        compute these in bulk override it)."""
        chunks, held = self.feed(steps, position, track_held)
        ends = accumulate(map(len, chunks), initial=emitted)
        next(ends)
        return "".join(chunks), ends, held, chunks.count("")

    def step(self, ids: Sequence[int], position: int) -> str:
        return self.feed([ids], position, track_held=False)[0][0]

    def held_bytes(self) -> int:
        return 0

    def flush(self) -> str:
        return ""


class Offsets(Detokenizer):
    """TGI / vLLM slow path: per token, decode ``ids[prefix:read]`` and ``ids[prefix:]``, emit the
    difference unless the window ends in U+FFFD (then hold), slide the window on emission."""

    name = "offsets"

    def __init__(self, ctx: DecodeContext, prompt: Sequence[int]) -> None:
        super().__init__(ctx)
        self.ids = list(prompt[-(INITIAL_OFFSET + 2):])  # vLLM keeps only the last 7 prompt ids
        self.read = len(self.ids)
        self.prefix = max(self.read - INITIAL_OFFSET, 0)
        #: True while every step so far is one DecodeStream takes the same way from the same window (see
        #: ``DecodeStreamDetok.run_from``): one id per step, no stall, and no window decode that fails to extend
        #: the prefix text without ending in U+FFFD (DecodeStream errors or compares byte lengths there)
        self.like_decodestream = True
        #: the window and its read offset before the first generated id
        self.start = (tuple(self.ids[self.prefix:]), self.read - self.prefix)

    def feed(self, steps: Iterable[Sequence[int]], position: int = 0, track_held: bool = True) -> tuple[list[str], list[int]]:
        if isinstance(steps, Steps) and steps.single:
            return self._tokens(steps.ids, position, track_held)
        if isinstance(steps, Steps) and steps:  # several ids per step: id by id, then each step's share
            self.like_decodestream = False  # DecodeStream decodes a multi-id step once, not id by id
            outs, helds = self._tokens(steps.ids, position, True)
            ends = islice(steps.starts, 1, None)  # type: ignore[arg-type]
            return _joined_per_step(outs, steps.starts), list(map(helds.__getitem__, map(operator.sub, ends, repeat(1)))) if track_held else []  # type: ignore[arg-type]
        steps = steps if isinstance(steps, Sequence) else list(steps)
        if all(len(step) == 1 for step in steps):
            return self._tokens([step[0] for step in steps], position, track_held)
        self.like_decodestream = False  # DecodeStream decodes a multi-id step once, not id by id
        outs, helds = self._tokens([i for step in steps for i in step], position, True)
        chunks, held, k = [], [], 0
        for step in steps:
            chunks.append("".join(outs[k:k + len(step)]))
            k += len(step)
            held.append(helds[k - 1] if step else (held[-1] if held else 0))
        return chunks, held if track_held else []

    def _transition(self, window: tuple[int, ...], read: int, token_id: int) -> tuple[str | None, tuple[int, ...], int, str | None, bool]:
        """One step from the window ``ids[prefix:]`` (``read``: where its unread part starts) on
        ``token_id``, a pure function of them: the text emitted (None: held), the next window and its
        read offset, the message when the window's decode rewrote what was emitted, and whether
        DecodeStream may take this step differently (the window's text does not extend the prefix's
        and does not end in U+FFFD: it raises, or compares byte lengths, where this compares characters)."""
        ctx = self.ctx
        ids = window + (token_id,)
        prefix_text = ctx.decode_one(ids[0]) if read == 1 else ctx.decode(list(ids[:read]))
        new_text = ctx.decode(list(ids))
        unlike = not new_text.startswith(prefix_text) and new_text[-1:] != REPLACEMENT
        if len(new_text) > len(prefix_text) and new_text[-1] != REPLACEMENT:
            rewritten = None if not unlike else (
                f"window decode {new_text!r} no longer starts with {prefix_text!r}: the emitted "
                "text would have to change (the window emits a slice by length regardless)")
            return new_text[len(prefix_text):], ids[read:], len(ids) - read, rewritten, unlike
        return None, ids, read, None, unlike

    def _fill_pairs(self, keys: set[int]) -> None:
        """Memoise the steps from a one-token window for the pairs ``keys`` (window id << 32 | new
        id), their window decodes done in one ``decode_batch`` call: the text a step emits, or None
        when it holds or rewrites (the loop then takes it step by step). Written as C-level maps:
        on distinct text most pairs are new."""
        order = [key for key in keys if key >= 0]  # negative: no one-token window before the first id
        if not order:
            return
        ctx = self.ctx
        if len(ctx.pair_steps) + len(order) > WINDOW_MEMO_SIZE:
            ctx.pair_steps.clear()
        windows = list(map(operator.rshift, order, repeat(32)))
        texts = ctx.tokenizer.decode_batch(list(map(list, zip(windows, map(operator.and_, order, repeat(0xFFFFFFFF))))),
                                           ctx.skip_special_tokens)
        prefixes = list(map(ctx.decode_one, windows))
        cuts = list(map(len, prefixes))
        # emits: longer than the prefix's text, not ending in U+FFFD, and extending the prefix's text
        emits = map(operator.and_, map(operator.and_, map(operator.gt, map(len, texts), cuts),
                                       map(operator.not_, map(str.endswith, texts, repeat(REPLACEMENT)))),
                    map(str.startswith, texts, prefixes))
        steps = ctx.pair_steps
        steps.update(zip(order, map(operator.getitem, texts, map(slice, cuts, repeat(None)))))
        steps.update(zip(compress(order, map(operator.not_, emits)), repeat(None)))

    def _tokens(self, tokens: Sequence[int], position: int, track_held: bool) -> tuple[list[str], list[int]]:
        """The algorithm, one token at a time: the text emitted for each and the bytes held after it.

        A step is a pure function of the window and the new id, so steps are memoised: per state
        (window, read offset; windows shorter than WINDOW_MEMO ids) a dict from the new id to the step,
        which links to the next state's dict. The usual step, from a one-token window with nothing
        held, is looked up for every id at once with a C-level ``map`` over (previous id, id) pairs;
        the loop takes the steps in between."""
        skip, ctx = self.ctx.skip_special_tokens, self.ctx
        transition = self._transition
        table = self.ctx.tokens
        lengths, length = table.lengths(skip), table.length
        if self.stalled:
            return self._held_steps(tokens, self.ids, self.held_now, track_held)
        window, read = tuple(self.ids[self.prefix:]), self.read - self.prefix
        held_now = self.held_now  # bytes of the unread ids, kept up to date per token
        outs: list[str] = []
        emit = outs.append
        held: list[int] = [0] * len(tokens) if track_held else []
        # each step's memoised output were it taken from the one-token window [previous id]
        previous = window[0] if len(window) == 1 and read == 1 else -1
        pair_steps = ctx.pair_steps
        # (window id, new id) as one int: cheaper to make and hash than a tuple
        keys = list(map(operator.or_, map(operator.lshift, chain((previous,), tokens), repeat(32)), tokens))
        found = list(map(pair_steps.get, keys, repeat(_UNSEEN)))
        unseen = list(compress(count(), map(operator.is_, found, repeat(_UNSEEN))))
        if unseen:
            self._fill_pairs(set(map(keys.__getitem__, unseen)))
            for j in unseen:
                found[j] = pair_steps.get(keys[j])
        breaks = list(compress(count(), map(operator.is_, found, repeat(None))))
        b = 0
        here = ctx.moves_from(window, read)
        n, k = len(tokens), 0
        while k < n:
            if read == 1 and len(window) == 1:
                while b < len(breaks) and breaks[b] < k:
                    b += 1
                end = breaks[b] if b < len(breaks) else n
                if end > k:  # a run of steps that emit from one-token windows
                    outs += found[k:end]
                    window, held_now, k = (tokens[end - 1],), 0, end
                    here = ctx.moves_from(window, 1)
                    continue
            token_id = tokens[k]
            step = here.get(token_id) if here is not None else None
            if step is None:
                out, next_window, next_read, rewritten, unlike = transition(window, read, token_id)
                step = (out, next_window, next_read, ctx.moves_from(next_window, next_read), rewritten, unlike)
                if here is not None:
                    ctx.remember(here, token_id, step)
            out, window, read, here, rewritten, unlike = step
            if unlike:
                self.like_decodestream = False
            if rewritten is not None:
                self.errors.append(StepError(position + k, token_id, "rewritten", rewritten))
            if out is None:
                emit("")
                n_bytes = lengths.get(token_id)
                held_now += n_bytes if n_bytes is not None else length(token_id, skip)
                if track_held:
                    held[k] = held_now
                if len(window) - read >= STALL_IDS:
                    self._stall(position + k, token_id, len(window) - read)
                    self.like_decodestream = False  # DecodeStream's stall is checked per slice, not per step
                    self.ids, self.prefix, self.read = list(window), 0, read
                    rest, rest_held = self._held_steps(tokens[k + 1:], self.ids, held_now, track_held)
                    return outs + rest, held[:k + 1] + rest_held if track_held else []
            else:
                emit(out)
                held_now = 0
            k += 1
        self.ids, self.prefix, self.read, self.held_now = list(window), 0, read, held_now
        return outs, held

    def held_bytes(self) -> int:
        return self.held_now

    def flush(self) -> str:
        if self.read == len(self.ids):
            return ""
        prefix_text = self.ctx.decode(self.ids[self.prefix:self.read])
        return self.ctx.decode(self.ids[self.prefix:])[len(prefix_text):]


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
        if self.fed or self.start is None or not offsets.like_decodestream or not (isinstance(steps, Steps) and steps.single):
            return None
        # the head is the library's own steps, taken on this stream: put back as it was if the run is not shared
        before = (copy(self.stream), list(self.pending), self.held_now, self.last, len(self.errors))
        run = self._shared(offsets, done, steps)
        if run is None:
            self.stream, self.pending, self.held_now, self.last = before[:4]
            del self.errors[before[4]:]
            return None
        self.fed = True
        window, read = offsets.ids[offsets.prefix:], offsets.read - offsets.prefix
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
        run = _spliced(self.name, head, head_held, done, k)
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
            if mine_emitted and theirs_emitted and (tuple(window), read) == (tuple(theirs.ids[theirs.prefix:]), theirs.read - theirs.prefix):
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
            part, part_held = self._slice(tokens[start:start + STALL_SLICE], position + start, track_held)
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

    def feed(self, steps: Iterable[Sequence[int]], position: int = 0, track_held: bool = True) -> tuple[list[str], list[int]]:
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
        return self.ctx.decode(context + self.pending)[len(before):]


def bytes_not_applicable(tokens: TokenBytes) -> str | None:
    """Why the ``bytes`` strategy does not apply to this tokenizer (its decoder does not turn token
    bytes into text by concatenation, e.g. WordPiece), or None when it does."""
    return None if tokens.text is None else tokens.text.not_concatenative


class BytesDetok(Detokenizer):
    """Accumulate token bytes (files profile) and emit the longest valid UTF-8 prefix; invalid bytes
    become U+FFFD at once, so holdback is bounded. Unmapped ids are errors, as in a strict gateway.
    Each token's bytes are what the tokenizer's decoder makes of it at its place in the text
    (Metaspace and Strip remove the leading space of the first token)."""

    name = "bytes"
    drops_unknown = False

    def __init__(self, ctx: DecodeContext, prompt: Sequence[int]) -> None:
        super().__init__(ctx)
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        text = ctx.tokens.text
        self.pieces = text.piece_stream() if text is not None and text.chain is not None else None
        # once the first token and the start strips are past, every token's bytes are a cached function of its id
        self.steady = self.pieces is None
        self.memo: dict[int, bytes] = {}
        self.starts: dict[int, int] = {}  # id -> characters its memoised bytes begin (bulk decoding)
        self.moved = False  # a decoder rule made some token's bytes differ from the files profile's
        # The prompt's trailing partial character (if any) is held for the first generated bytes.
        prompt_bytes = b"".join(self._data(i, e) for i in prompt if (e := ctx.tokens.get(i)) is not None)
        self.decoder.decode(prompt_bytes)
        self.moved = prompt_bytes != b"".join(ctx.tokens.data(i, ctx.skip_special_tokens) for i in prompt)

    def reproduces_table(self) -> bool:
        """Every id so far added the files profile's own bytes (no decoder rule moved one): the text
        lengths after each token are then those of plainly decoding the table's bytes."""
        data, skip = self.ctx.tokens.data, self.ctx.skip_special_tokens
        return not self.moved and all(piece == data(i, skip) for i, piece in self.memo.items())

    def _data(self, token_id: int, entry: tuple[bytes, bool]) -> bytes:
        """The bytes a mapped id adds to the text (nothing for a skipped special token)."""
        if self.ctx.skip_special_tokens and entry[1]:
            return b""
        if self.pieces is None:
            return entry[0]
        text = self.ctx.tokens.text
        assert text is not None
        if self.steady:
            return text.cached_piece(token_id)
        data = self.pieces.piece(text.spelling(token_id))  # type: ignore[arg-type]
        self.steady = not any(lead[1] for lead in self.pieces.lead)
        self.moved = self.moved or data != entry[0]
        return data

    def feed(self, steps: Iterable[Sequence[int]], position: int = 0, track_held: bool = True) -> tuple[list[str], list[int]]:
        get, skip = self.ctx.tokens.get, self.ctx.skip_special_tokens
        text = self.ctx.tokens.text
        memo = self.memo  # id -> the bytes it adds once steady (b"" for a skipped special token)
        decode, state = self.decoder.decode, self.decoder.getstate
        chunks: list[str] = []
        held: list[int] = []
        for ids in steps:
            data = b""
            for token_id in ids:
                known = memo.get(token_id)
                if known is not None:
                    data += known
                    position += 1
                    continue
                entry = get(token_id)
                if entry is None:
                    self.errors.append(StepError(
                        position, token_id, "error", f"no entry found for key {token_id} (the data files map no token to it)"
                    ))
                else:
                    steady = self.steady
                    added = b"" if skip and entry[1] else (
                        entry[0] if self.pieces is None else
                        text.cached_piece(token_id) if steady else self._data(token_id, entry))  # type: ignore[union-attr]
                    if steady:
                        memo[token_id] = added
                    data += added
                position += 1
            chunks.append(decode(data))
            if track_held:
                held.append(len(state()[0]))
        return chunks, held

    def feed_text(
        self, steps: Sequence[Sequence[int]], position: int, track_held: bool, emitted: int = 0
    ) -> tuple[str, Iterable[int], Sequence[int], int]:
        """Once steady, every id's bytes joined and decoded in bulk, cut where the steps end (see
        :func:`~tokaudit.stream.utf8.decode_at_cuts`); the step-by-step loop where the bytes are not
        valid UTF-8."""
        if not isinstance(steps, Steps) or not steps:
            return super().feed_text(steps, position, track_held, emitted)
        if not self.steady:  # the first token: the decoder's start rules apply
            head, head_ends, head_held, head_empty = super().feed_text(steps[:1], position, track_held, emitted)
            rest, rest_ends, rest_held, rest_empty = self.feed_text(steps[1:], position + len(steps[0]), track_held, emitted + len(head))
            return head + rest, [*head_ends, *rest_ends], [*head_held, *rest_held], head_empty + rest_empty
        bulk = self._bulk(steps, position, emitted, track_held)
        return super().feed_text(steps, position, track_held, emitted) if bulk is None else bulk

    def _bulk(self, steps: Steps, position: int, emitted: int, track_held: bool) -> tuple[str, Sequence[int], Sequence[int], int] | None:
        """The steady state in C-level passes, or None (not valid UTF-8)."""
        ids, memo, starts = steps.ids, self.memo, self.starts
        skip, get, text = self.ctx.skip_special_tokens, self.ctx.tokens.get, self.ctx.tokens.text
        unmapped = set()
        for token_id in set(ids).difference(memo):
            entry = get(token_id)
            if entry is None:
                unmapped.add(token_id)
                continue
            added = b"" if skip and entry[1] else entry[0] if self.pieces is None else text.cached_piece(token_id)  # type: ignore[union-attr]
            memo[token_id] = added
            starts[token_id] = character_starts(added)
        piece_of, starts_of = memo.__getitem__, starts.__getitem__
        if unmapped:
            piece_of = {**memo, **dict.fromkeys(unmapped, b"")}.__getitem__
            starts_of = {**starts, **dict.fromkeys(unmapped, 0)}.__getitem__
        pieces = list(map(piece_of, ids))
        held = self.decoder.getstate()[0]
        lengths, begins = list(map(len, pieces)), list(map(starts_of, ids))
        if steps.starts is not None:  # several ids per step: cut where steps end
            lengths, begins = _summed_per_step(lengths, steps.starts), _summed_per_step(begins, steps.starts)
        decoded = decode_at_cuts(held + b"".join(pieces), len(held), lengths, begins, emitted, track_held)
        if decoded is None:
            return None
        chars, ends, held_after, tail = decoded
        if unmapped:
            self.errors += [
                StepError(position + offset, token_id, "error", f"no entry found for key {token_id} (the data files map no token to it)")
                for offset, token_id in enumerate(ids) if token_id in unmapped
            ]
        self.decoder.setstate((tail, 0))
        return chars, ends, held_after, sum(map(operator.eq, ends, chain((emitted,), ends)))

    def held_bytes(self) -> int:
        return len(self.decoder.getstate()[0])

    def flush(self) -> str:
        return self.decoder.getstate()[0].decode("utf-8", "replace")


class Naive(Detokenizer):
    """Decode each token alone and concatenate: the classic bug, for contrast."""

    name = "naive"

    def feed(self, steps: Iterable[Sequence[int]], position: int = 0, track_held: bool = True) -> tuple[list[str], list[int]]:
        decode_one = self.ctx.decode_one
        if isinstance(steps, Steps):
            for token_id in set(steps.ids).difference(self.ctx.memo):
                decode_one(token_id)
            texts = list(map(self.ctx.memo.__getitem__, steps.ids))
            chunks = texts if steps.starts is None else _joined_per_step(texts, steps.starts)
        else:
            chunks = ["".join(decode_one(i) for i in ids) if len(ids) != 1 else decode_one(ids[0]) for ids in steps]
        return chunks, [0] * len(chunks) if track_held else []


def _joined_per_step(parts: list[str], starts: Sequence[int]) -> list[str]:
    """Each step's parts joined (``starts``: where each step's ids start among the parts, then their end)."""
    return list(map("".join, map(parts.__getitem__, map(slice, starts, islice(starts, 1, None)))))


def _summed_per_step(values: list[int], starts: Sequence[int]) -> list[int]:
    """Each step's values summed (``starts`` as for :func:`_joined_per_step`)."""
    total = list(accumulate(values, initial=0))
    return list(map(operator.sub, map(total.__getitem__, islice(starts, 1, None)), map(total.__getitem__, starts)))


def build_detokenizers(names: Sequence[str], ctx: DecodeContext, prompt: Sequence[int]) -> list[Detokenizer]:
    """The incremental detokenizers for ``names`` (``full`` is not incremental and is left out)."""
    out: list[Detokenizer] = []
    for name in names:
        if name == "offsets":
            out.append(Offsets(ctx, prompt))
        elif name == "decodestream":
            out.append(DecodeStreamDetok(ctx, prompt, prefill=False))
            if prompt:
                out.append(DecodeStreamDetok(ctx, prompt, prefill=True))
        elif name == "bytes":
            if bytes_not_applicable(ctx.tokens) is None:
                out.append(BytesDetok(ctx, prompt))
        elif name == "naive":
            out.append(Naive(ctx))
    return out


#: Steps fed to a detokenizer per call: bounds the transient list of chunk strings on long streams.
FEED_BLOCK = 8192


class Chunks(Sequence[str]):
    """The chunk of every step as a view of the run's text (no string per step is kept)."""

    def __init__(self, text: str, ends: Sequence[int]) -> None:
        self.text, self.ends = text, ends

    def __len__(self) -> int:
        return len(self.ends)

    def __getitem__(self, s: int) -> str:  # type: ignore[override]
        if s < 0:
            s += len(self.ends)
        if not 0 <= s < len(self.ends):
            raise IndexError(s)
        return self.text[self.ends[s - 1] if s else 0:self.ends[s]]

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


def _spliced(name: str, head: list[str], head_held: list[int], done: Run, k: int) -> Run:
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
    return Run(name, text + done.text[cut:], ends, _trimmed(held), [], empty_steps=empty)


def _trimmed(held: array) -> array:
    """``held`` without its trailing zeros (steps that hold nothing at the end are left out)."""
    del held[(len(held.tobytes().rstrip(b"\0")) + held.itemsize - 1) // held.itemsize:]
    return held


def run(detok: Detokenizer, steps: Sequence[Sequence[int]], track_held: bool = True) -> Run:
    """Feed every step to ``detok``. ``track_held=False`` skips the per-step held count (re-runs)."""
    parts: list[str] = []
    ends, held = array("q"), array("I")  # held counts fit 32 bits unless a stream holds 4 GB
    total = position = empty = 0
    for start in range(0, len(steps), FEED_BLOCK):
        block = steps[start:start + FEED_BLOCK]
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
    return Run(detok.name, "".join(parts), ends, _trimmed(held), detok.errors, detok.flush(), detok.held_bytes(), empty)
