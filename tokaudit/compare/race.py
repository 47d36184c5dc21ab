"""Backend-selection race: load the transformers tokenizer N times at once, in threads and in
processes, and check that every load produced the same class and the same ids.

transformers has been seen to return its Python backend instead of the Rust one under concurrent
first-time loads (seed 001); that backend then fails in ``__init__`` or encodes differently.
Processes are started with ``spawn`` (no fork of a process holding Rust thread pools).
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokaudit.backends.base import BackendUnavailable

#: Texts every concurrent load encodes (a few scripts, an emoji sequence, whitespace).
PROBE_TEXTS = ["Hello world, it's 2024!", "机器学习 and カタカナ", "👨‍👩‍👧‍👦 👍🏽", "  \n\t x", "مرحبا бвг 123456"]


@dataclass(frozen=True)
class LoadResult:
    mode: str  # "thread" or "process"
    index: int
    loaded_class: str | None
    ids: list[list[int]] | None
    error: str | None

    def signature(self) -> tuple[Any, ...]:
        return (self.loaded_class, None if self.ids is None else tuple(map(tuple, self.ids)), self.error)

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "index": self.index, "class": self.loaded_class, "error": self.error}


def load_and_encode(
    root: str, use_fast: bool, trust_remote_code: bool
) -> tuple[str | None, list[list[int]] | None, str | None]:
    """One load (module level: it runs in spawned processes too). Never raises."""
    try:
        from tokaudit.backends.transformers_backend import load_auto_tokenizer

        tok = load_auto_tokenizer(Path(root), use_fast, trust_remote_code)
    except BackendUnavailable as exc:
        return None, None, str(exc)
    try:
        ids = [list(tok.encode(t, add_special_tokens=False)) for t in PROBE_TEXTS]
    except BaseException as exc:  # a half-built backend can raise anything
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return type(tok).__name__, None, f"{type(exc).__name__}: {str(exc)[:200]}"
    return type(tok).__name__, ids, None


@dataclass(frozen=True)
class RaceResult:
    backend: str
    concurrency: int
    loads: list[LoadResult]

    def groups(self) -> dict[tuple[Any, ...], list[LoadResult]]:
        out: dict[tuple[Any, ...], list[LoadResult]] = {}
        for load in self.loads:
            out.setdefault(load.signature(), []).append(load)
        return out

    @property
    def consistent(self) -> bool:
        return len(self.groups()) == 1

    def failures(self) -> list[LoadResult]:
        return [load for load in self.loads if load.error is not None]

    @property
    def classes(self) -> list[str]:
        """The tokenizer classes the loads returned, sorted."""
        return sorted({str(load.loaded_class) for load in self.loads})

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "concurrency": self.concurrency,
            "consistent": self.consistent,
            "classes": self.classes,
            "loads": [load.to_json() for load in self.loads],
        }


def race(backend: str, root: Path, n: int, trust_remote_code: bool, use_fast: bool) -> RaceResult:
    """n concurrent loads in threads, then n in spawned processes."""
    args = (str(root), use_fast, trust_remote_code)
    loads: list[LoadResult] = []
    with ThreadPoolExecutor(max_workers=n) as pool:
        for k, (cls, ids, error) in enumerate(pool.map(lambda _: load_and_encode(*args), range(n))):
            loads.append(LoadResult("thread", k, cls, ids, error))
    with ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context("spawn")) as procs:
        futures = [procs.submit(load_and_encode, *args) for _ in range(n)]
        for k, future in enumerate(futures):
            try:
                cls, ids, error = future.result()
            except BaseException as exc:  # a worker that died (BrokenProcessPool)
                if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                    raise
                cls, ids, error = None, None, f"{type(exc).__name__}: {exc}"
            loads.append(LoadResult("process", k, cls, ids, error))
    return RaceResult(backend, n, loads)
