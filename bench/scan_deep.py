"""Benchmark: `tokaudit scan <Kimi-K2.5 fixture> --deep` (adds TA402 unreachable-token) against the default
scan of the same target, both as whole processes in the same run, plus the rule's own throughput in-process.

    python bench/scan_deep.py [TARGET] [--runs N]

Prints median wall times, their ratio, and tokens/second of the reachability check (aim: --deep under 10 s).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if proc.returncode not in (0, 1):
        sys.exit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr.decode()}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", nargs="?", default=str(ROOT / "fixtures" / "kimi-k2.5"))
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    base = [sys.executable, "-m", "tokaudit", "scan", args.target, "--format", "json"]
    deep = base + ["--deep"]
    timed(base)
    deep_times, base_times = [], []
    for _ in range(args.runs):
        deep_times.append(timed(deep))
        base_times.append(timed(base))
    d, b = statistics.median(deep_times), statistics.median(base_times)
    print(f"tokaudit scan --deep:  {d:.2f} s wall (median of {args.runs})")
    print(f"tokaudit scan:         {b:.2f} s wall (median of {args.runs})")
    print(f"ratio: {d / b:.2f}")

    sys.path.insert(0, str(ROOT))
    from tokaudit.checks.token_classes import unreachable_token
    from tokaudit.scan import load_model

    model = load_model(args.target)
    start = time.perf_counter()
    (finding,) = list(unreachable_token.check(model)) or [None]
    rule_seconds = time.perf_counter() - start
    checked = finding.details["checked"] if finding else 0
    print(f"TA402 in-process: {rule_seconds:.2f} s for {checked} tokens (backend build included): "
          f"{checked / rule_seconds:,.0f} tokens/s; {finding.ids.count if finding else 0} unreachable")


if __name__ == "__main__":
    main()
