#!/usr/bin/env python3
"""Benchmark: fuzz's decode calls/s per backend vs a bare loop of the same decode calls.

    python bench/fuzz.py [TARGET] [--iterations N] [--repeat R]

Both sides decode the same seeded sequences with the same backend object in the same process;
the bare loop is ``try: decode(seq) except BaseException: pass`` and nothing else. The figure is
ratio = bare calls/s / fuzz calls/s (target <= 1.5), best of R runs each, interleaved so that a
noisy moment hits both sides.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from tokaudit.backends.registry import load_backends
from tokaudit.oncall.fuzz import FuzzOptions, fuzz_backend, sequences
from tokaudit.scan import load_model

ROOT = Path(__file__).resolve().parent.parent


def bare(decode, seqs: list[list[int]]) -> float:
    start = time.perf_counter()
    for seq in seqs:
        try:
            decode(seq)
        except BaseException:  # noqa: BLE001 - the same catch as fuzz, nothing more
            pass
    return len(seqs) / (time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("target", nargs="?", default=str(ROOT / "fixtures" / "kimi-k2.5"))
    ap.add_argument("--iterations", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--backends", default="tiktoken,hf,reference,strict")
    args = ap.parse_args()

    model = load_model(args.target)
    seqs, _ = sequences(model, FuzzOptions(iterations=args.iterations, seed=0))
    print(f"{args.target}: {len(seqs)} sequences, {sum(map(len, seqs))} ids, best of {args.repeat}")
    print(f"{'backend':<10} {'fuzz calls/s':>14} {'bare calls/s':>14} {'ratio':>7}")
    worst = 0.0
    for lb in load_backends(model, args.backends.split(",")):
        if lb.backend is None:
            print(f"{lb.name:<10} unavailable: {lb.unavailable}")
            continue
        fuzz_best = bare_best = 0.0
        for _ in range(args.repeat):
            fuzz_best = max(fuzz_best, fuzz_backend(lb.backend, seqs, model.checked_size).calls_per_second or 0.0)
            bare_best = max(bare_best, bare(lb.backend.decode, seqs))
        ratio = bare_best / fuzz_best
        worst = max(worst, ratio)
        print(f"{lb.name:<10} {fuzz_best:>14,.0f} {bare_best:>14,.0f} {ratio:>7.2f}")
    print(f"worst ratio {worst:.2f} (target <= 1.5)")


if __name__ == "__main__":
    main()
