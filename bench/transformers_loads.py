"""Benchmark: loading ``transformers-fast`` and ``transformers-slow`` in one ``load_backends`` call (one
AutoTokenizer load shared, transformers >= 5.23 ignoring ``use_fast``) against the two separate loads the
backends made before (``load_auto_tokenizer`` without the shared loads), measured in the same run.

    python bench/transformers_loads.py [TARGET] [--runs N]
    python bench/transformers_loads.py ~/.cache/tokaudit/real/models/llama4-meta   (a tiktoken file: transformers
        converts 200k ranks in Python, seconds per load)

Prints the CPU seconds (all threads) of each, median of N runs, and the ratio (shared / separate); the
transformers import is paid before the first run and counted in neither.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from tokaudit.backends.base import BackendUnavailable
from tokaudit.backends.registry import load_backends
from tokaudit.backends.transformers_backend import _quiet_import, load_auto_tokenizer, load_slow_tokenizer
from tokaudit.model.load import load_model

ROOT = Path(__file__).resolve().parent.parent


def _separate(root: Path) -> None:
    """What the two backends did before: each its own AutoTokenizer load."""
    try:
        load_auto_tokenizer(root, True, False)
    except BackendUnavailable:
        pass
    try:
        load_slow_tokenizer(root, False)
    except BackendUnavailable:
        pass


def _cpu(action: Callable[[], object]) -> float:
    start = time.process_time()
    action()
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", nargs="?", default=str(ROOT / "fixtures" / "tiny-tiktoken"))
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    model = load_model(args.target)
    root = model.artifacts.root
    _quiet_import()
    names = ["transformers-fast", "transformers-slow"]
    shared, separate = [], []
    for _ in range(args.runs):
        shared.append(_cpu(lambda: load_backends(model, names)))
        separate.append(_cpu(lambda: _separate(root)))
    for row in load_backends(model, names):
        print(f"{row.name}: {'available' if row.available else row.unavailable}")
    s, p = statistics.median(shared), statistics.median(separate)
    print(f"shared load (load_backends):   {s:8.2f} s CPU")
    print(f"separate loads (before):       {p:8.2f} s CPU")
    print(f"ratio shared / separate:       {s / p:8.2f}")


if __name__ == "__main__":
    main()
