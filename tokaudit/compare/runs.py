"""Run every backend over the corpus once: batch encode, batch decode of its own ids, timed.

Each backend uses its own batch API (tiktoken's and tokenizers' are multi-threaded) over chunks of
the corpus; a chunk whose batch call raises (a Rust panic included) is re-run case by case so the
crash is pinned to the input that caused it and the other cases still count.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol, cast

from tokaudit.backends.base import Backend, Outcome, call, decode_batch, encode_batch

#: About this many UTF-8 bytes of corpus per batch call (a unit of progress and of crash isolation).
CHUNK_BYTES = 256 * 1024


class Progress(Protocol):
    """Where runs report how far they are (the CLI draws a progress bar; the core never prints)."""

    def start(self, total: int) -> None: ...

    def advance(self, label: str, amount: int) -> None: ...


@dataclass(frozen=True)
class Crash:
    backend: str
    #: "encode" or "decode"
    operation: str
    case: int
    outcome: Outcome


@dataclass
class BackendRun:
    name: str
    backend: Backend
    encodes: bool
    #: Own ids per case (None where encoding raised); decode-only backends: None.
    ids: list[list[int] | None] | None = None
    #: Decode of the backend's own ids per case (decode-only backends: of the primary encoder's ids);
    #: None where decoding raised.
    texts: list[str | None] = field(default_factory=list)
    encode_seconds: float = 0.0
    decode_seconds: float = 0.0
    tokens: int = 0
    crashes: list[Crash] = field(default_factory=list)


def chunks(sizes: list[int], limit: int = CHUNK_BYTES) -> Iterator[tuple[int, int]]:
    """Half-open index ranges of consecutive cases holding about ``limit`` bytes each."""
    start, total = 0, 0
    for i, size in enumerate(sizes):
        total += size
        if total >= limit:
            yield start, i + 1
            start, total = i + 1, 0
    if start < len(sizes):
        yield start, len(sizes)


def _isolated(
    run: BackendRun, operation: str, batch_fn: Callable[[list], list], one_fn: Callable, items: list, first: int
) -> tuple[list, float]:
    """Results of one batch call, or of one call per item when the batch raises (crashes recorded)."""
    start = time.perf_counter()
    out = call(batch_fn, items)
    if out.ok and isinstance(out.value, list) and len(out.value) == len(items):
        return out.value, time.perf_counter() - start
    results = []
    for k, item in enumerate(items):
        one = call(one_fn, item)
        if one.ok:
            results.append(one.value)
        else:
            results.append(None)
            run.crashes.append(Crash(run.name, operation, first + k, one))
    return results, time.perf_counter() - start


def run_backend(backend: Backend, texts: list[str], sizes: list[int], progress: Progress | None = None) -> BackendRun:
    """Encode every text with the backend, then decode its own ids (an encoding backend only)."""
    run = BackendRun(backend.name, backend, encodes=True, ids=[])
    assert run.ids is not None
    spans = list(chunks(sizes))
    for lo, hi in spans:
        ids, seconds = _isolated(run, "encode", lambda b: encode_batch(backend, b), backend.encode, texts[lo:hi], lo)
        run.ids.extend(ids)
        run.encode_seconds += seconds
        if progress:
            progress.advance(f"{backend.name}: encode", sum(sizes[lo:hi]))
    run.tokens = sum(len(x) for x in run.ids if x is not None)
    _decode_into(run, run.ids, spans, sizes, progress)
    return run


def run_decoder(
    backend: Backend, ids: list[list[int] | None], sizes: list[int], progress: Progress | None = None
) -> BackendRun:
    """A decode-only backend: decode the primary encoder's ids."""
    run = BackendRun(backend.name, backend, encodes=False)
    _decode_into(run, ids, list(chunks(sizes)), sizes, progress)
    return run


def _decode_into(
    run: BackendRun,
    ids: list[list[int] | None],
    spans: list[tuple[int, int]],
    sizes: list[int],
    progress: Progress | None,
) -> None:
    backend = run.backend

    def one(x: list[int] | None) -> str | None:
        return None if x is None else backend.decode(x)

    def batch(xs: list[list[int] | None]) -> list[str | None]:
        if all(x is not None for x in xs):
            return cast("list[str | None]", decode_batch(backend, cast("list[list[int]]", xs)))  # none of xs is None
        return [one(x) for x in xs]

    for lo, hi in spans:
        texts, seconds = _isolated(run, "decode", batch, one, ids[lo:hi], lo)
        run.texts.extend(texts)
        run.decode_seconds += seconds
        if progress:
            progress.advance(f"{backend.name}: decode", sum(sizes[lo:hi]))
