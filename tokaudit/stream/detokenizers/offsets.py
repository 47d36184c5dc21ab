"""``offsets``: the left-context window algorithm of TGI, vLLM, SGLang, smg and Dynamo (their
``prefix_offset``/``read_offset`` pair), with the memoised steps that make it fast."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from itertools import chain, compress, count, islice, repeat

from tokaudit.stream.detokenizers.core import (
    INITIAL_OFFSET,
    REPLACEMENT,
    STALL_IDS,
    WINDOW_MEMO_SIZE,
    DecodeContext,
    Detokenizer,
    StepError,
    joined_per_step,
)
from tokaudit.stream.steps import Steps


#: what a memo lookup returns for a step never taken (None is a memoised step that holds)
_UNSEEN = object()


class Offsets(Detokenizer):
    """TGI / vLLM slow path: per token, decode ``ids[prefix:read]`` and ``ids[prefix:]``, emit the
    difference unless the window ends in U+FFFD (then hold), slide the window on emission."""

    name = "offsets"

    def __init__(self, ctx: DecodeContext, prompt: Sequence[int]) -> None:
        super().__init__(ctx)
        self.ids = list(prompt[-(INITIAL_OFFSET + 2) :])  # vLLM keeps only the last 7 prompt ids
        self.read = len(self.ids)
        self.prefix = max(self.read - INITIAL_OFFSET, 0)
        #: True while every step so far is one DecodeStream takes the same way from the same window (see
        #: ``DecodeStreamDetok.run_from``): one id per step, no stall, and no window decode that fails to extend
        #: the prefix text without ending in U+FFFD (DecodeStream errors or compares byte lengths there)
        self.like_decodestream = True
        #: the window and its read offset before the first generated id
        self.start = (tuple(self.ids[self.prefix :]), self.read - self.prefix)

    def feed(
        self, steps: Iterable[Sequence[int]], position: int = 0, track_held: bool = True
    ) -> tuple[list[str], list[int]]:
        if isinstance(steps, Steps) and steps.single:
            return self._tokens(steps.ids, position, track_held)
        if isinstance(steps, Steps) and steps:  # several ids per step: id by id, then each step's share
            self.like_decodestream = False  # DecodeStream decodes a multi-id step once, not id by id
            outs, helds = self._tokens(steps.ids, position, True)
            starts = steps.starts
            assert starts is not None  # multi-id steps: starts is set
            ends = islice(starts, 1, None)
            held_per_step = list(map(helds.__getitem__, map(operator.sub, ends, repeat(1)))) if track_held else []
            return joined_per_step(outs, starts), held_per_step
        steps = steps if isinstance(steps, Sequence) else list(steps)
        if all(len(step) == 1 for step in steps):
            return self._tokens([step[0] for step in steps], position, track_held)
        self.like_decodestream = False  # DecodeStream decodes a multi-id step once, not id by id
        outs, helds = self._tokens([i for step in steps for i in step], position, True)
        chunks: list[str] = []
        held: list[int] = []
        k = 0
        for step in steps:
            chunks.append("".join(outs[k : k + len(step)]))
            k += len(step)
            held.append(helds[k - 1] if step else (held[-1] if held else 0))
        return chunks, held if track_held else []

    def _transition(
        self, window: tuple[int, ...], read: int, token_id: int
    ) -> tuple[str | None, tuple[int, ...], int, str | None, bool]:
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
            rewritten = (
                None
                if not unlike
                else (
                    f"window decode {new_text!r} no longer starts with {prefix_text!r}: the emitted "
                    "text would have to change (the window emits a slice by length regardless)"
                )
            )
            return new_text[len(prefix_text) :], ids[read:], len(ids) - read, rewritten, unlike
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
        texts = ctx.tokenizer.decode_batch(
            list(map(list, zip(windows, map(operator.and_, order, repeat(0xFFFFFFFF))))), ctx.skip_special_tokens
        )
        prefixes = list(map(ctx.decode_one, windows))
        cuts = list(map(len, prefixes))
        # emits: longer than the prefix's text, not ending in U+FFFD, and extending the prefix's text
        emits = map(
            operator.and_,
            map(
                operator.and_,
                map(operator.gt, map(len, texts), cuts),
                map(operator.not_, map(str.endswith, texts, repeat(REPLACEMENT))),
            ),
            map(str.startswith, texts, prefixes),
        )
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
        window, read = tuple(self.ids[self.prefix :]), self.read - self.prefix
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
                    outs += found[k:end]  # type: ignore[arg-type]  # between two breaks: memoised str, none None or unseen
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
                    rest, rest_held = self._held_steps(tokens[k + 1 :], self.ids, held_now, track_held)
                    return outs + rest, held[: k + 1] + rest_held if track_held else []
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
        prefix_text = self.ctx.decode(self.ids[self.prefix : self.read])
        return self.ctx.decode(self.ids[self.prefix :])[len(prefix_text) :]
