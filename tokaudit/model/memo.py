"""A result kept per live model object: the rules of one family (TA8xx templates, TA82x parser round trip) share
one computation per model, and the entry goes when the model does (a fleet scan must not keep every model it
has scanned alive: issue 34)."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from threading import Lock
from typing import Generic, TypeVar

T = TypeVar("T")


class ModelMemo(Generic[T]):
    """``get(model, compute)``: ``compute(model)`` once per live model object, held by a weak reference."""

    def __init__(self) -> None:
        self._lock = Lock()
        self._entries: dict[int, tuple[weakref.ref[object], T]] = {}

    def get(self, model: object, compute: Callable[[], T]) -> T:
        key = id(model)
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None and hit[0]() is model:
                return hit[1]
        value = compute()

        def dropped(_: object) -> None:  # the model is gone: so is its entry
            self._drop(key)

        with self._lock:
            self._entries[key] = (weakref.ref(model, dropped), value)
        return value

    def _drop(self, key: int) -> None:
        with self._lock:
            self._entries.pop(key, None)

    def __len__(self) -> int:
        return len(self._entries)
