"""The shared core of the incremental detokenizers: token bytes per id, the decode context (with the
memo tables ``offsets`` keeps across runs), the step errors, the base class and its stall handling."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate, islice
from typing import Any

from tokaudit.model.id_table import IdTable
from tokaudit.model.text import TokenText
from tokaudit.stream.utf8 import character_starts


#: The TGI/vLLM/SGLang/smg/Dynamo left-context window (``INITIAL_INCREMENTAL_DETOKENIZATION_OFFSET``).
INITIAL_OFFSET = 5
#: offsets memoises its steps from windows shorter than this many ids, at most WINDOW_MEMO_SIZE of them.
WINDOW_MEMO = 8
WINDOW_MEMO_SIZE = 1 << 18
REPLACEMENT = "\ufffd"
#: A window strategy holding this many ids without emitting is stalled: tokaudit stops stepping it (each
#: step re-decodes the whole held window, so a stream that never completes a character costs quadratic
#: time) and releases what it holds at the end. A character is at most 4 byte tokens; a stall is
#: invalid bytes, or text that decodes to nothing, going on and on.
STALL_IDS = 256


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
            special = found is not None and (
                found.layer.special or (self.text is not None and self.text.is_special(token_id))
            )
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

    def feed(
        self, steps: Iterable[Sequence[int]], position: int = 0, track_held: bool = True
    ) -> tuple[list[str], list[int]]:
        """Feed the steps; return the chunk emitted for each and, with ``track_held``, the bytes held
        after each. Subclasses run this as one tight loop: per-step calls would dominate the cost."""
        raise NotImplementedError

    def _stall(self, position: int, token_id: int, held: int) -> None:
        self.stalled = True
        self.errors.append(
            StepError(
                position,
                token_id,
                "stalled",
                f"held {held} ids without emitting anything: every further step would re-decode the whole held window; "
                "not stepped past here (the rest is released at the end)",
            )
        )

    def _held_steps(
        self, tokens: Sequence[int], pending: list[int], held_now: int, track_held: bool
    ) -> tuple[list[str], list[int]]:
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


def joined_per_step(parts: list[str], starts: Sequence[int]) -> list[str]:
    """Each step's parts joined (``starts``: where each step's ids start among the parts, then their end)."""
    return list(map("".join, map(parts.__getitem__, map(slice, starts, islice(starts, 1, None)))))


def summed_per_step(values: list[int], starts: Sequence[int]) -> list[int]:
    """Each step's values summed (``starts`` as for :func:`joined_per_step`)."""
    total = list(accumulate(values, initial=0))
    return list(map(operator.sub, map(total.__getitem__, islice(starts, 1, None)), map(total.__getitem__, starts)))
