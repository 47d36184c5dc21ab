"""Build the backends a command asks for, recording which are unavailable and why."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokaudit.backends.base import Backend, BackendUnavailable, is_panic
from tokaudit.backends.inputs import LoadInputs, gguf_file
from tokaudit.backends.kinds import BACKENDS
from tokaudit.backends.pattern import Pattern, find_pattern
from tokaudit.errors import InputError, chosen_names
from tokaudit.model.tokenizer_model import TokenizerModel

#: Every backend name, in display order (the rows of backends/kinds.py). The transformers ones need the optional extra.
BACKEND_NAMES = tuple(BACKENDS)
#: The backends that read a GGUF file (the target's, or the one ``--gguf`` names).
GGUF_BACKENDS = tuple(name for name, kind in BACKENDS.items() if kind.gguf)


#: The libraries an optional backend needs (import names): one unavailable for lack of them was not checked.
NEEDS = {name: kind.needs for name, kind in BACKENDS.items() if kind.needs}


def missing_libraries(name: str) -> list[str]:
    """The libraries backend ``name`` needs that are not installed (import names)."""
    from importlib.util import find_spec

    return [lib for lib in NEEDS.get(name, ()) if find_spec(lib) is None]


def gguf_option(path: Path | None) -> Path | None:
    """``--gguf FILE`` checked: a regular file that starts with the GGUF magic (else one InputError line)."""
    if path is None:
        return None
    from tokaudit.artifacts.safe_files import read_bytes_head, regular_file_error

    problem = regular_file_error(path)
    if problem is not None:
        raise InputError(problem.message, file=str(path), key="--gguf")
    if read_bytes_head(path, 4) != b"GGUF":
        raise InputError("not a GGUF file (it does not start with the magic 'GGUF')", file=str(path), key="--gguf")
    return path


def _applies(name: str, model: TokenizerModel, gguf: Path | None = None) -> bool:
    """Whether a model-dependent backend belongs in the default selection for this model:
    sentencepiece when there is a SentencePiece model, fastokens when it is installed and there
    is a tokenizer.json (what Dynamo hands it), the GGUF backends when there is a GGUF (the target's
    or ``--gguf``'s). Asked for by name, they are always tried."""
    if name in GGUF_BACKENDS:
        return gguf_file(model, gguf) is not None
    if model.artifacts.gguf_only:  # the backends that read HF files have none to read
        return name == "strict"
    if name == "sentencepiece":
        return model.artifacts.sentencepiece is not None
    if name == "fastokens":
        from importlib.util import find_spec

        return model.artifacts.tokenizer_json is not None and find_spec("fastokens") is not None
    return True


class DefaultBackends(list):
    """The selection when ``--backends`` is not given: model-dependent backends that do not apply
    to the model are left out (instead of showing as unavailable)."""


@dataclass
class LoadedBackend:
    name: str
    backend: Backend | None
    unavailable: str | None
    load_seconds: float
    #: What was really loaded: "tokenizer.json", "rebuilt from tiktoken.model ranks", "TokenizersBackend (fast)"...
    detail: str | None = None
    #: Set when the backend was built from only the rank entries one question reads (``for_ids`` / ``for_text``).
    subset: str | None = None

    @property
    def available(self) -> bool:
        return self.backend is not None

    def to_json(self) -> dict[str, Any]:
        out = {
            "name": self.name,
            "available": self.available,
            "reason": self.unavailable,
            "load_seconds": round(self.load_seconds, 4),
            "detail": self.detail,
        }
        if self.subset is not None:  # only explain / decode / encode build subsets
            out["subset"] = self.subset
        load_warnings = getattr(self.backend, "load_warnings", None)
        if load_warnings is not None:  # llama.cpp's load log, captured instead of printed
            out["load_warnings"] = load_warnings()
        return out


def parse_backend_list(value: str | None) -> list[str]:
    """``--backends a,b``: validated names (all of them when not given)."""
    if not value:
        return DefaultBackends(BACKEND_NAMES)
    return chosen_names(value, BACKEND_NAMES, "backend", "--backends")


#: ``watcher(name, index, total)`` before each backend loads, and ``watcher("", total, total)`` when all have (the
#: CLI's status line); None: nobody watches.
_LOADING: ContextVar[Callable[[str, int, int], None] | None] = ContextVar("tokaudit_backend_loading", default=None)


@contextmanager
def watching_loads(watcher: Callable[[str, int, int], None] | None) -> Iterator[None]:
    """Tell ``watcher`` about each backend :func:`load_backends` starts to load, in this context."""
    token = _LOADING.set(watcher)
    try:
        yield
    finally:
        _LOADING.reset(token)


def load_backends(
    model: TokenizerModel,
    names: list[str],
    pat_str: str | None = None,
    *,
    trust_remote_code: bool = False,
    decode_only: bool = False,
    for_ids: Collection[int] | None = None,
    for_text: str | None = None,
    gguf: Path | None = None,
) -> list[LoadedBackend]:
    """Build each named backend; ``trust_remote_code`` only reaches transformers, and only when the user asked.
    ``decode_only``: the caller only decodes, so tiktoken and hf-from-ranks load without a pattern (decode-only).
    ``for_ids`` / ``for_text``: the caller only decodes these ids / encodes this text, so the backends rebuilt
    from ranks are built from the entries that reads (:mod:`tokaudit.backends.subset`), and say so.
    ``gguf``: the GGUF file the GGUF backends load instead of the target's own (``compare --gguf``).
    """
    if isinstance(names, DefaultBackends):
        names = [n for n in names if _applies(n, model, gguf)]
    inputs = LoadInputs(
        model, pat_str, find_pattern(model, pat_str), decode_only, trust_remote_code, for_ids, for_text, gguf
    )
    pattern = inputs.pattern

    def build(name: str) -> Backend:
        kind = BACKENDS.get(name)
        if kind is None:
            raise InputError(f"unknown backend {name!r}", key="--backends")
        return kind.load(inputs, name)

    out = []
    watcher = _LOADING.get()
    for i, name in enumerate(names):
        if watcher is not None:
            watcher(name, i, len(names))
        start = time.perf_counter()
        try:
            backend: Backend | None = build(name)
            reason = None
        except BackendUnavailable as exc:
            backend, reason = None, str(exc)
        except InputError:
            raise
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # noqa: BLE001 - a library that cannot load these files (a Rust panic too)
            first = (str(exc).strip().splitlines() or [""])[0][:200]
            backend, reason = None, f"loading raised {'a panic' if is_panic(exc) else type(exc).__name__}: {first}"
        loaded = LoadedBackend(name, backend, reason, time.perf_counter() - start, _detail(backend, pattern))
        if backend is not None and inputs.subset is not None and _built_from_ranks(backend):
            loaded.subset = inputs.subset.describe()
        out.append(loaded)
    if watcher is not None:
        watcher("", len(names), len(names))  # done
    return out


def _built_from_ranks(backend: Backend) -> bool:
    """Whether the backend was built from the rank vocabulary (and so from a subset, when one was made)."""
    if backend.name in ("tiktoken", "reference"):
        return True
    return backend.name == "hf" and str(getattr(backend, "origin", "")).startswith("rebuilt from")


def _detail(backend: Backend | None, pattern: Pattern | None) -> str | None:
    """One line on what a backend really is (its origin, the loaded class, the pattern's source)."""
    if backend is None:
        return None
    describe = getattr(backend, "describe", None)
    if describe is not None:
        return describe()
    origin = getattr(backend, "origin", None)
    if origin is not None:
        return origin
    if backend.name in ("tiktoken", "reference") and pattern is not None:
        return f"pattern from {pattern.source}"
    return None
