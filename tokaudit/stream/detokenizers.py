"""Incremental detokenizers: the strategies serving stacks use to turn streamed ids into text.

Each one is fed the stream step by step (a step may carry several ids, as speculative decoding
emits them) and returns the text chunk it would send for that step. ``flush`` is what it would
add if the stream ended now and everything held were released, so that "chunks + flush" can be
compared with the full decode whatever the detokenizer was still holding.
"""

from __future__ import annotations

import codecs
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tokaudit.errors import InputError
from tokaudit.model.id_table import IdTable

#: The TGI/vLLM/SGLang/smg/Dynamo left-context window (``INITIAL_INCREMENTAL_DETOKENIZATION_OFFSET``).
INITIAL_OFFSET = 5
REPLACEMENT = "\ufffd"

#: ``--detokenizers`` names, in display order. ``decodestream`` also runs ``decodestream-prefill``
#: when a prompt is given.
DETOKENIZER_NAMES = ("full", "offsets", "decodestream", "bytes", "naive")


def parse_detokenizer_list(value: str | None) -> list[str]:
    if not value:
        return list(DETOKENIZER_NAMES)
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
    """Token bytes per id from the files profile (what a gateway reading the data files sees), cached."""

    def __init__(self, table: IdTable) -> None:
        self.table = table
        self._cache: dict[int, tuple[bytes, bool] | None] = {}

    def get(self, token_id: int) -> tuple[bytes, bool] | None:
        """``(bytes, special)``, or None when the files profile maps nothing to the id."""
        try:
            return self._cache[token_id]
        except KeyError:
            found = self.table.lookup(token_id)
            entry = (found.token, found.layer.special) if found is not None else None
            self._cache[token_id] = entry
            return entry

    def data(self, token_id: int, skip_special: bool) -> bytes:
        """The bytes the id contributes to text (nothing for unmapped ids and skipped specials)."""
        entry = self.get(token_id)
        if entry is None or (skip_special and entry[1]):
            return b""
        return entry[0]

    def count(self, ids: Sequence[int], skip_special: bool) -> int:
        return sum(len(self.data(i, skip_special)) for i in ids)


@dataclass
class DecodeContext:
    """What every detokenizer decodes with: the ``tokenizers.Tokenizer``, the skip flag, token bytes."""

    tokenizer: Any
    skip_special_tokens: bool
    tokens: TokenBytes

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=self.skip_special_tokens)


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

    def step(self, ids: Sequence[int], position: int) -> str:
        raise NotImplementedError

    def held_bytes(self) -> int:
        return 0

    def flush(self) -> str:
        return ""


class Offsets(Detokenizer):
    """TGI / vLLM slow path: decode ``ids[prefix:read]`` and ``ids[prefix:]`` per token, emit the
    difference unless the window ends in U+FFFD (then hold), slide the window on emission."""

    name = "offsets"

    def __init__(self, ctx: DecodeContext, prompt: Sequence[int]) -> None:
        super().__init__(ctx)
        self.ids = list(prompt[-(INITIAL_OFFSET + 2):])  # vLLM keeps only the last 7 prompt ids
        self.read = len(self.ids)
        self.prefix = max(self.read - INITIAL_OFFSET, 0)

    def step(self, ids: Sequence[int], position: int) -> str:
        decode = self.ctx.decode
        out = []
        for k, token_id in enumerate(ids):
            self.ids.append(token_id)
            prefix_text = decode(self.ids[self.prefix:self.read])
            new_text = decode(self.ids[self.prefix:])
            if len(new_text) > len(prefix_text) and not new_text.endswith(REPLACEMENT):
                if not new_text.startswith(prefix_text):
                    self.errors.append(StepError(
                        position + k, token_id, "rewritten",
                        f"window decode {new_text!r} no longer starts with {prefix_text!r}: the emitted "
                        "text would have to change; the window emits a slice by length regardless",
                    ))
                out.append(new_text[len(prefix_text):])
                self.prefix, self.read = self.read, len(self.ids)
                if self.prefix > 4096:  # keep the id list short: only the window matters
                    del self.ids[:self.prefix]
                    self.read -= self.prefix
                    self.prefix = 0
        return "".join(out)

    def held_bytes(self) -> int:
        return self.ctx.tokens.count(self.ids[self.read:], self.ctx.skip_special_tokens)

    def flush(self) -> str:
        if self.read == len(self.ids):
            return ""
        prefix_text = self.ctx.decode(self.ids[self.prefix:self.read])
        return self.ctx.decode(self.ids[self.prefix:])[len(prefix_text):]


class DecodeStreamDetok(Detokenizer):
    """``tokenizers.decoders.DecodeStream``. ``prefill``: built with the prompt ids (vLLM since
    #34217); otherwise the prompt ids are stepped through first and their output discarded.
    An ``Invalid prefix`` error is handled as vLLM does: a fresh stream, the ids stepped again."""

    def __init__(self, ctx: DecodeContext, prompt: Sequence[int], prefill: bool) -> None:
        super().__init__(ctx)
        from tokenizers.decoders import DecodeStream

        self._new = lambda ids=None: DecodeStream(ids=ids, skip_special_tokens=ctx.skip_special_tokens) if ids \
            else DecodeStream(skip_special_tokens=ctx.skip_special_tokens)
        self.name = "decodestream-prefill" if prefill else "decodestream"
        self.stream = self._new(list(prompt)) if prefill else self._new()
        self.pending: list[int] = []  # ids stepped since the last emission
        self.context: list[int] = list(prompt[-INITIAL_OFFSET:])
        if not prefill:
            for token_id in prompt:
                self._step(token_id)
            self.pending = []

    def _step(self, arg: int | list[int]) -> str | None:
        return self.stream.step(self.ctx.tokenizer, arg)

    def step(self, ids: Sequence[int], position: int) -> str:
        arg: int | list[int] = ids[0] if len(ids) == 1 else list(ids)
        try:
            out = self._step(arg)
        except Exception as exc:  # noqa: BLE001 - tokenizers raises a plain Exception for Invalid prefix
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            kind = "rewritten" if "Invalid prefix" in message else "error"
            self.errors.append(StepError(position + len(ids) - 1, ids[-1], kind, message[:300]))
            self.stream = self._new()
            out = self._step(arg)
        self.pending.extend(ids)
        if out is None:
            return ""
        self.context = self.pending[-INITIAL_OFFSET:]
        self.pending = []
        return out

    def held_bytes(self) -> int:
        return self.ctx.tokens.count(self.pending, self.ctx.skip_special_tokens)

    def flush(self) -> str:
        if not self.pending:
            return ""
        before = self.ctx.decode(self.context)
        return self.ctx.decode(self.context + self.pending)[len(before):]


class BytesDetok(Detokenizer):
    """Accumulate token bytes (files profile) and emit the longest valid UTF-8 prefix; invalid bytes
    become U+FFFD at once, so holdback is bounded. Unmapped ids are errors, as in a strict gateway."""

    name = "bytes"
    drops_unknown = False

    def __init__(self, ctx: DecodeContext, prompt: Sequence[int]) -> None:
        super().__init__(ctx)
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        # The prompt's trailing partial character (if any) is held for the first generated bytes.
        self.decoder.decode(b"".join(ctx.tokens.data(i, ctx.skip_special_tokens) for i in prompt))

    def step(self, ids: Sequence[int], position: int) -> str:
        tokens, skip = self.ctx.tokens, self.ctx.skip_special_tokens
        parts = []
        for k, token_id in enumerate(ids):
            entry = tokens.get(token_id)
            if entry is None:
                self.errors.append(StepError(
                    position + k, token_id, "error", f"no entry found for key {token_id} (the data files map no token to it)"
                ))
            elif not (skip and entry[1]):
                parts.append(entry[0])
        return self.decoder.decode(b"".join(parts) if len(parts) != 1 else parts[0])

    def held_bytes(self) -> int:
        return len(self.decoder.getstate()[0])

    def flush(self) -> str:
        held = self.decoder.getstate()[0]
        return held.decode("utf-8", "replace")


class Naive(Detokenizer):
    """Decode each token alone and concatenate: the classic bug, for contrast."""

    name = "naive"

    def step(self, ids: Sequence[int], position: int) -> str:
        decode = self.ctx.decode
        return "".join(decode([i]) for i in ids)


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
            out.append(BytesDetok(ctx, prompt))
        elif name == "naive":
            out.append(Naive(ctx))
    return out


@dataclass
class Run:
    """One detokenizer's replay: a chunk and the bytes held after every step, errors, the flush."""

    name: str
    chunks: list[str] = field(default_factory=list)
    held: list[int] = field(default_factory=list)
    errors: list[StepError] = field(default_factory=list)
    flush: str = ""

    @property
    def text(self) -> str:
        return "".join(self.chunks)

    @property
    def held_bytes(self) -> int:
        return self.held[-1] if self.held else 0


def run(detok: Detokenizer, steps: Sequence[Sequence[int]], track_held: bool = True) -> Run:
    """Feed every step to ``detok``. ``track_held=False`` skips the per-step held count (re-runs)."""
    result = Run(detok.name)
    chunks, held = result.chunks, result.held
    position = 0
    step = detok.step
    for ids in steps:
        chunks.append(step(ids, position))
        position += len(ids)
        if track_held:
            held.append(detok.held_bytes())
    if not track_held:
        held.append(detok.held_bytes())
    result.errors = detok.errors
    result.flush = detok.flush()
    return result
