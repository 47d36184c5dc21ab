"""Progress reporting for slow rules, without printing: the CLI installs a sink, rules call :func:`advance`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

#: ``sink(label, done, total)``; ``None`` means nobody is watching.
Sink = Callable[[str, int, int], None]

_SINK: ContextVar[Sink | None] = ContextVar("tokaudit_progress", default=None)


def advance(label: str, done: int, total: int) -> None:
    sink = _SINK.get()
    if sink is not None:
        sink(label, done, total)


@contextmanager
def reporting_to(sink: Sink | None) -> Iterator[None]:
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)
