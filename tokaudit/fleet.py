"""Fleet scans: a list of targets from a file (``--targets-from``), scanned one by one and handed on
as each finishes, so that a scan of hundreds of Hub repos can be piped and resumed."""

from __future__ import annotations

import contextvars
import os
import stat
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from tokaudit.errors import InputError

#: Budget of a targets file: more than this is not a list of model directories or repo ids.
MAX_TARGETS_BYTES = 16 * 1024 * 1024
MAX_TARGETS = 100_000
MAX_TARGET_CHARS = 4096

T = TypeVar("T")


def read_target_list(path: str) -> list[str]:
    """One target per line (``-``: stdin); blank lines and ``#`` comments are skipped."""
    name = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            data = sys.stdin.buffer.read(MAX_TARGETS_BYTES + 1)
        else:
            data = _read_regular(path)
    except OSError as exc:
        raise InputError(f"cannot read targets file: {exc.strerror or exc}", file=name) from None
    if len(data) > MAX_TARGETS_BYTES:
        raise InputError(f"targets file larger than {MAX_TARGETS_BYTES // (1024 * 1024)} MB", file=name)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError("not UTF-8 text", file=name, line=line) from None
    targets = []
    for number, raw in enumerate(text.splitlines(), 1):
        entry = raw.strip()
        if not entry or entry.startswith("#"):
            continue
        if len(entry) > MAX_TARGET_CHARS:
            raise InputError(f"a target longer than {MAX_TARGET_CHARS} characters", file=name, line=number)
        targets.append(entry)
        if len(targets) > MAX_TARGETS:
            raise InputError(f"more than {MAX_TARGETS:,} targets", file=name, line=number)
    return targets


def _read_regular(path: str) -> bytes:
    """A targets file's bytes (at most one past the budget); a FIFO, device or socket is refused before it is
    read: opening does not wait for a writer (O_NONBLOCK), and reading one would block or never end."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError("cannot read targets file: not a regular file (a FIFO, device or socket)", file=path)
        with os.fdopen(os.dup(fd), "rb") as fh:
            return fh.read(MAX_TARGETS_BYTES + 1)
    finally:
        os.close(fd)


@dataclass
class Outcome:
    """One target's result, or the input error that stopped it."""

    target: str
    value: object = None
    error: InputError | None = None


def as_completed(targets: Sequence[str], work: Callable[[str], T], jobs: int = 1) -> Iterator[Outcome]:
    """``work(target)`` for every target, yielded as each finishes (given order with one job). An
    unreadable target is an :class:`Outcome` with its error; the others go on."""

    def one(target: str) -> Outcome:
        try:
            return Outcome(target, work(target))
        except InputError as exc:
            return Outcome(target, error=exc)

    if jobs <= 1 or len(targets) <= 1:
        for target in targets:
            yield one(target)
        return
    from concurrent.futures import ThreadPoolExecutor
    from concurrent.futures import as_completed as futures_completed

    with ThreadPoolExecutor(max_workers=min(jobs, len(targets))) as pool:
        futures = [pool.submit(contextvars.copy_context().run, one, t) for t in targets]
        for future in futures_completed(futures):
            yield future.result()
