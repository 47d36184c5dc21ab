"""Progress on stderr while a command works: a transient progress bar and the status line of backends loading,
only on a terminal and never with ``--quiet``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class ProgressBar:
    """A transient rich progress bar on stderr. Cores report through one of two small protocols:
    ``start(total)`` + ``advance(label, amount)`` (compare, fuzz), or being called as a sink
    ``bar(label, done, total)`` with one task per label (slow scan rules)."""

    def __init__(self, progress: Any) -> None:
        self.progress = progress
        self.task: Any = None
        self.tasks: dict[str, Any] = {}

    def start(self, total: int) -> None:
        self.task = self.progress.add_task("", total=total)

    def advance(self, label: str, amount: int) -> None:
        self.progress.update(self.task, advance=amount, description=label)

    def __call__(self, label: str, done: int, total: int) -> None:
        if label not in self.tasks:
            self.tasks[label] = self.progress.add_task(label, total=total)
        self.progress.update(self.tasks[label], completed=done, total=total)


@contextmanager
def loading_status(quiet: bool) -> Iterator[None]:
    """A transient status line on stderr while backends load (``loading backends 2/6: hf``): loading Gemma 3's
    six backends takes ~25 s, which would otherwise be a blank screen. Only on a terminal, not with --quiet."""
    from tokaudit.backends.registry import watching_loads

    if quiet or sys.stderr is None or not sys.stderr.isatty():
        yield
        return
    from rich.console import Console

    console = Console(file=sys.stderr, markup=False, highlight=False)
    status = console.status("loading backends")

    def show(name: str, index: int, total: int) -> None:
        if index >= total:  # all loaded: the command's own progress bar (if any) takes over
            status.stop()
            return
        status.update(f"loading backends {index + 1}/{total}: {name}")
        status.start()

    try:
        with watching_loads(show):
            yield
    finally:
        status.stop()


@contextmanager
def progress_bar(quiet: bool) -> Iterator[ProgressBar | None]:
    """A progress bar only when stderr is a terminal and not ``--quiet``; else ``None``."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    console = Console(file=sys.stderr, markup=False, highlight=False)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        yield ProgressBar(progress)
