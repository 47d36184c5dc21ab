"""Incremental detokenizers: the strategies serving stacks use to turn streamed ids into text.

Each one is fed the stream step by step (a step may carry several ids, as speculative decoding
emits them) and returns the text chunk it would send for that step. ``flush`` is what it would
add if the stream ended now and everything held were released, so that "chunks + flush" can be
compared with the full decode whatever the detokenizer was still holding.

One module per strategy (``offsets.py``: the window algorithm of TGI, vLLM, SGLang, smg and Dynamo;
``decodestream.py``, ``utf8_bytes.py``, ``naive.py``) beside the shared core (``core.py``: token bytes,
the decode context and its memo tables, the base class and the stall) and ``runs.py`` (a whole replay
as compact arrays). ``llama.cpp-server`` is :mod:`tokaudit.stream.llamacpp_server`.
"""

from __future__ import annotations

from collections.abc import Sequence

from tokaudit.errors import InputError, chosen_names
from tokaudit.stream.detokenizers.core import (
    INITIAL_OFFSET,
    REPLACEMENT,
    STALL_IDS,
    DecodeContext,
    Detokenizer,
    StepError,
    TokenBytes,
)
from tokaudit.stream.detokenizers.decodestream import DecodeStreamDetok
from tokaudit.stream.detokenizers.naive import Naive
from tokaudit.stream.detokenizers.offsets import Offsets
from tokaudit.stream.detokenizers.runs import FEED_BLOCK, Chunks, Run, run, window
from tokaudit.stream.detokenizers.utf8_bytes import BytesDetok, bytes_not_applicable

__all__ = [
    "DETOKENIZER_NAMES",
    "FEED_BLOCK",
    "INITIAL_OFFSET",
    "REPLACEMENT",
    "STALL_IDS",
    "BytesDetok",
    "Chunks",
    "DecodeContext",
    "DecodeStreamDetok",
    "DefaultDetokenizers",
    "Detokenizer",
    "Naive",
    "Offsets",
    "Run",
    "StepError",
    "TokenBytes",
    "build_detokenizers",
    "bytes_not_applicable",
    "parse_detokenizer_list",
    "run",
    "window",
]


#: ``--detokenizers`` names, in display order. ``decodestream`` also runs ``decodestream-prefill``
#: when a prompt is given. ``llama.cpp-server`` (:mod:`tokaudit.stream.llamacpp_server`) runs when there
#: is a GGUF (a GGUF target, or ``replay --gguf``).
DETOKENIZER_NAMES = ("full", "offsets", "decodestream", "bytes", "naive", "llama.cpp-server")


class DefaultDetokenizers(list):
    """The selection when ``--detokenizers`` is not given: llama.cpp-server is left out, not listed as not
    applicable, when there is no GGUF."""


def parse_detokenizer_list(value: str | None) -> list[str]:
    if not value:
        return DefaultDetokenizers(DETOKENIZER_NAMES)
    names = chosen_names(value, DETOKENIZER_NAMES, "detokenizer", "--detokenizers")
    if not names:
        raise InputError("no detokenizer given", key="--detokenizers")
    return [n for n in DETOKENIZER_NAMES if n in names]


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
