"""The backend protocol and safe calls into backends.

A backend is built from a :class:`~tokaudit.model.tokenizer_model.TokenizerModel`. Calls into a
backend go through :func:`call`, which catches everything a backend can throw, Rust panics
(``pyo3_runtime.PanicException``, a ``BaseException``) included, and classifies it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class BackendUnavailable(Exception):
    """The model lacks what this backend needs (no ranks, no pattern, library not installed...)."""


class UnknownId(KeyError):
    """Raised by tokaudit's own backends (reference, strict) for an id they cannot map."""


class Backend(Protocol):
    name: str

    def encode(self, text: str) -> list[int]:
        """Ids for ``text``; special/added token strings in the text encode to their ids."""

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str: ...

    def versions(self) -> dict[str, str]: ...


@dataclass(frozen=True)
class Outcome:
    """What one backend call did: a value, or an exception classified by type (``panic`` for Rust panics)."""

    value: Any = None
    error_type: str | None = None
    error: str | None = None
    panic: bool = False

    @property
    def ok(self) -> bool:
        return self.error_type is None

    def describe(self) -> str:
        if self.ok:
            return repr(self.value)
        kind = "panic" if self.panic else self.error_type
        return f"{kind}: {self.error}" if self.error else str(kind)


def is_panic(exc: BaseException) -> bool:
    return type(exc).__name__ == "PanicException"


def call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> Outcome:
    try:
        return Outcome(fn(*args, **kwargs))
    except (KeyboardInterrupt, SystemExit, GeneratorExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - Rust panics are BaseExceptions
        text = str(exc).strip().splitlines()
        return Outcome(None, type(exc).__name__, text[0][:200] if text else "", is_panic(exc))


def decode_rewrite(backend: Backend) -> Callable[[str], str] | None:
    """A deterministic rewrite the backend's decode applies to text (llama.cpp's space cleanup), or None:
    decode differences it explains are told apart from real ones."""
    return getattr(backend, "decode_rewrite", None)


def can_encode(backend: Backend) -> bool:
    """False for decode-only backends (``strict``)."""
    return getattr(backend, "can_encode", True)


def encode_batch(backend: Backend, texts: list[str]) -> list[list[int]]:
    """The backend's own batch encoder when it has one (tiktoken, tokenizers), else one call per text."""
    batch = getattr(backend, "encode_batch", None)
    return batch(texts) if batch is not None else [backend.encode(t) for t in texts]


def decode_batch(backend: Backend, ids: list[list[int]], skip_special_tokens: bool = False) -> list[str]:
    """The backend's own batch decoder when it has one, else one call per sequence."""
    batch = getattr(backend, "decode_batch", None)
    if batch is not None:
        return batch(ids, skip_special_tokens)
    return [backend.decode(x, skip_special_tokens) for x in ids]
