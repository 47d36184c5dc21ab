#!/usr/bin/env python3
"""Benchmark: ``fuzz`` per backend, decode loop *and* shrinking, against a raw loop of the library's own
decode over the same seeded sequences (tiktoken ``Encoding.decode``, tokenizers ``Tokenizer.decode``),
measured in the same process and run.

    python bench/fuzz.py [TARGET] [--iterations N] [--repeat R]

The raw loop is ``try: lib_decode(seq) except BaseException: pass`` and nothing else. The figure is
ratio = fuzz seconds (decode + shrink) / raw seconds, best of R runs each, interleaved so that a
noisy moment hits both sides; the same ratio in CPU seconds (less sensitive to other processes on a
shared machine) is printed beside it. Target (issue 11): <= 2.0 at 100k sequences.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from tokaudit.backends.registry import load_backends
from tokaudit.oncall.fuzz import FuzzOptions, fuzz_backend, sequences
from tokaudit.model.load import load_model

ROOT = Path(__file__).resolve().parent.parent


def raw(decode, seqs: list[list[int]]) -> tuple[float, float]:
    """Wall and CPU seconds of the bare loop."""
    start, cpu = time.perf_counter(), time.process_time()
    for seq in seqs:
        try:
            decode(seq)
        except BaseException:  # noqa: BLE001 - Rust panics are BaseExceptions
            pass
    return time.perf_counter() - start, time.process_time() - cpu


def library_decode(backend):
    """The library's own decode function under a tokaudit backend (None for tokaudit's own backends)."""
    if backend.name == "tiktoken":
        return backend.encoding.decode
    if backend.name == "hf":
        return backend.tokenizer.decode
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("target", nargs="?", default=str(ROOT / "fixtures" / "kimi-k2.5"))
    ap.add_argument("--iterations", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--backends", default="tiktoken,hf")
    args = ap.parse_args()

    model = load_model(args.target)
    seqs, _ = sequences(model, FuzzOptions(iterations=args.iterations, seed=0))
    print(f"{args.target}: {len(seqs)} sequences, {sum(map(len, seqs))} ids, best of {args.repeat}")
    print(
        f"{'backend':<10} {'raw s':>8} {'fuzz s':>8} {'decode s':>9} {'shrink s':>9} {'failures':>9} {'ratio':>6} "
        f"{'CPU ratio':>10}"
    )
    worst = 0.0
    for lb in load_backends(model, args.backends.split(",")):
        lib = library_decode(lb.backend) if lb.backend is not None else None
        if lib is None:
            print(f"{lb.name:<10} skipped: {lb.unavailable or 'no library decode to compare with'}")
            continue
        best_raw = best_fuzz = best_raw_cpu = best_fuzz_cpu = float("inf")
        best_run = None
        for _ in range(args.repeat):
            wall, cpu = raw(lib, seqs)
            best_raw, best_raw_cpu = min(best_raw, wall), min(best_raw_cpu, cpu)
            cpu = time.process_time()
            run = fuzz_backend(lb.backend, seqs, model.checked_size)
            best_fuzz_cpu = min(best_fuzz_cpu, time.process_time() - cpu)
            if run.seconds + run.shrink_seconds < best_fuzz:
                best_fuzz, best_run = run.seconds + run.shrink_seconds, run
        ratio = best_fuzz / best_raw
        worst = max(worst, ratio)
        print(
            f"{lb.name:<10} {best_raw:>8.2f} {best_fuzz:>8.2f} {best_run.seconds:>9.2f} "
            f"{best_run.shrink_seconds:>9.2f} "
            f"{len(best_run.failures):>9} {ratio:>6.2f} {best_fuzz_cpu / best_raw_cpu:>10.2f}"
        )
    print(f"worst ratio {worst:.2f} (target <= 2.0)")


if __name__ == "__main__":
    main()
