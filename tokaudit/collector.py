"""The cyclic garbage collector, paused around work that allocates many containers and no reference cycles.

Importing the CLI and the rule modules, parsing a large tokenizer.json, fuzz's decode loop: each makes
tens of thousands to millions of objects that live on and form no cycles. Left on, the collector scans
them again and again (a third of fuzz's CPU time on Kimi; six full collections, ~0.6 s, of a Gemma 3
template run; ~10 ms of a scan's start-up) and frees nothing.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: Whether tokaudit owns the process (the CLI sets it): only then does ``freeze`` move objects out of the collector.
#: A program that loads a model through the library keeps its collector as it was: freezing is process-wide, and
#: would keep that program's own garbage (and each model it drops) alive to its end.
_owns_process = False


def own_process() -> None:
    """Called by the CLI when it starts: the process is tokaudit's, ``collector_paused(freeze=True)`` may freeze."""
    global _owns_process
    _owns_process = True


@contextmanager
def collector_paused(freeze: bool = False) -> Iterator[None]:
    """No collection inside the block; with ``freeze`` (and only in the CLI's process, see :func:`own_process`), what
    is alive at its end is moved out of every later collection (never scanned again) instead of being left as one
    large young generation. The collector's previous state is restored."""
    freeze = freeze and _owns_process
    was = gc.isenabled()
    if freeze and gc.get_freeze_count():
        # a fleet: what the previous target left in cycles was frozen with it; collect it before freezing again
        # (frozen, it was never freed: 29 real models peaked at 1 GB where the largest alone takes 313 MB)
        gc.unfreeze()
        gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if was:
            gc.enable()
