#!/usr/bin/env python3
"""Benchmark: the on-call verbs on the Kimi fixture as whole processes with default options
(``explain 163600``, ``encode``, ``decode``), median wall of N runs with the bytecode cache warm,
beside a raw tiktoken script (load the ranks, build the Encoding, decode) measured in the same run.

    python bench/oncall.py [TARGET] [--runs N]

Target (issue 11): each verb <= 0.5 s wall (median). The ratio to the raw script is printed too,
since the absolute figure depends on the machine's load, and so is each command's median CPU time
(user + sys of the child), which other processes on a shared machine disturb less than wall time.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

RAW = r"""
import sys, tiktoken
from tiktoken.load import load_tiktoken_bpe
ranks = load_tiktoken_bpe(sys.argv[1])
enc = tiktoken.Encoding("raw", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={})
print(enc.decode([1, 2, 3]))
"""


def env() -> dict[str, str]:
    """Bytecode cached in a temp prefix, as after a normal install (this machine disables writing it)."""
    out = dict(os.environ)
    out.pop("PYTHONDONTWRITEBYTECODE", None)
    out["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "tokaudit-bench-pycache")
    return out


def cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def wall(cmd: list[str], cpu: list[float] | None = None) -> float:
    """Wall seconds of one whole process; its CPU seconds are appended to ``cpu``."""
    before = cpu_children()
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env())
    if proc.returncode not in (0, 1):
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr.decode()[-400:]}")
    took = time.perf_counter() - start
    if cpu is not None:
        cpu.append(cpu_children() - before)
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("target", nargs="?", default=str(ROOT / "fixtures" / "kimi-k2.5"))
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    py = [sys.executable, "-m", "tokaudit"]
    verbs = {
        "explain 163600": py + ["explain", args.target, "163600", "--format", "json"],
        "encode": py + ["encode", args.target, "检查 CDP 依赖环境 hello", "--format", "json"],
        "decode": py + ["decode", args.target, "19180 11 2804", "--format", "json"],
    }
    raw = [sys.executable, "-c", RAW, str(Path(args.target) / "tiktoken.model")]
    for cmd in [*verbs.values(), raw]:
        wall(cmd)  # warm the page and bytecode caches
    times: dict[str, list[float]] = {name: [] for name in [*verbs, "raw tiktoken"]}
    cpus: dict[str, list[float]] = {name: [] for name in times}
    for _ in range(args.runs):  # interleaved: a noisy moment hits every command
        for name, cmd in verbs.items():
            times[name].append(wall(cmd, cpus[name]))
        times["raw tiktoken"].append(wall(raw, cpus["raw tiktoken"]))
    base = statistics.median(times["raw tiktoken"])
    base_cpu = statistics.median(cpus["raw tiktoken"])
    print(f"{args.target}, median of {args.runs} runs, bytecode cache warm (load average {os.getloadavg()[0]:.2f})")
    for name, runs in times.items():
        m, c = statistics.median(runs), statistics.median(cpus[name])
        target = "" if name == "raw tiktoken" else f"  (target <= 0.50 s: {'met' if m <= 0.5 else 'not met'})"
        print(f"  {name:<16} {m:6.3f} s  {m / base:5.2f}x raw tiktoken   CPU {c:5.3f} s  {c / base_cpu:5.2f}x{target}")


if __name__ == "__main__":
    main()
