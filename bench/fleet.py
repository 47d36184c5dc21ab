#!/usr/bin/env python3
"""Benchmark: the peak memory of a fleet scan (``scan --targets-from``) against the largest single scan of the
same targets, measured in the same run (issue 34: the fleet must stay within 1.5x the largest single target).

    python bench/fleet.py [--jobs N] [--format json|jsonl] [TARGET...]

Targets default to every directory of the real-tokenizer cache (``~/.cache/tokaudit/real/models``) that a
scan reads. Each run is a fresh process with the result cache off; peak memory is its own max RSS (wait4).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REAL = Path(os.environ.get("TOKAUDIT_REAL_CACHE", Path.home() / ".cache" / "tokaudit" / "real")) / "models"


def peak(args: list[str]) -> tuple[int, float, int]:
    """(exit code, seconds, peak MiB) of ``python -m tokaudit ARGS``."""
    env = dict(os.environ, TOKAUDIT_CACHE="off", HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tokaudit", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    _, status, usage = os.wait4(proc.pid, 0)
    return os.waitstatus_to_exitcode(status), time.perf_counter() - start, usage.ru_maxrss // 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--format", default="json", choices=["json", "jsonl"])
    parser.add_argument("targets", nargs="*")
    opts = parser.parse_args()
    targets = opts.targets
    if not targets:
        index = json.loads((REAL / "index.json").read_text(encoding="utf-8"))
        targets = sorted(entry["dir"] for entry in index.values() if Path(entry["dir"]).is_dir())
    singles = []
    for target in targets:
        code, seconds, mib = peak(["scan", target, "--format", "json", "-q"])
        if code in (0, 1):
            singles.append((mib, target))
    if not singles:
        sys.exit("no target to scan (fetch the real tokenizers: python scripts/fetch_real_tokenizers.py)")
    largest, which = max(singles)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as fh:
        fh.write("\n".join(t for _, t in singles) + "\n")
    try:
        code, seconds, mib = peak(
            ["scan", "--targets-from", fh.name, "--format", opts.format, "-q", "--jobs", str(opts.jobs)]
        )
    finally:
        os.unlink(fh.name)
    print(f"largest single scan: {largest} MiB ({Path(which).name}); {len(singles)} targets scanned singly")
    print(
        f"fleet scan (--format {opts.format} --jobs {opts.jobs}): {mib} MiB in {seconds:.1f} s, exit {code}: "
        f"ratio {mib / largest:.2f} (bound 1.5)"
    )


if __name__ == "__main__":
    main()
