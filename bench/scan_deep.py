"""Benchmark: `tokaudit scan <Kimi-K2.5 fixture> --deep` (adds TA402 unreachable-token) against a raw
tiktoken script that builds the encoding from the same ranks and encodes every token's own text once
(what the reachability check must do at least), and against the default scan; all whole processes
in the same run, plus the rule's own throughput in-process.

    python bench/scan_deep.py [TARGET] [--runs N]

Target (issue 11): --deep <= 1.2x the raw tiktoken build + per-token encode.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from scan import bytecode_env, timed  # bench/scan.py: one way to time a whole process

ROOT = Path(__file__).resolve().parent.parent

#: argv: the rank file, the pattern. Every rank's bytes that are UTF-8 text, encoded alone.
RAW = r"""
import sys, tiktoken
from tiktoken.load import load_tiktoken_bpe
ranks = load_tiktoken_bpe(sys.argv[1])
enc = tiktoken.Encoding("raw", pat_str=sys.argv[2], mergeable_ranks=ranks, special_tokens={})
encode = enc.encode_ordinary
unreachable = 0
for token, rank in ranks.items():
    try:
        text = token.decode("utf-8")
    except UnicodeDecodeError:
        continue
    if encode(text) != [rank]:
        unreachable += 1
print(unreachable)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", nargs="?", default=str(ROOT / "fixtures" / "kimi-k2.5"))
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from tokaudit.backends.pattern import find_pattern
    from tokaudit.checks.token_classes import unreachable_token
    from tokaudit.model.load import load_model

    model = load_model(args.target)
    pattern = find_pattern(model, None)
    ranks_file = model.artifacts.tiktoken.path if model.artifacts.tiktoken is not None else None
    base = [sys.executable, "-m", "tokaudit", "scan", args.target, "--format", "json"]
    deep = base + ["--deep"]
    raw = [sys.executable, "-c", RAW, str(ranks_file), pattern.regex] if ranks_file and pattern else None
    env = bytecode_env(True)  # compiled modules cached, as after a normal install
    timed(base, env), timed(deep, env)
    deep_times, base_times, raw_times = [], [], []
    for _ in range(args.runs):  # interleaved so all see the same machine load
        deep_times.append(timed(deep, env))
        base_times.append(timed(base, env))
        if raw:
            raw_times.append(timed(raw, env))
    (d, dc), (b, bc) = _medians(deep_times), _medians(base_times)
    print(f"tokaudit scan --deep:  {d:.2f} s wall, {dc:.2f} s CPU (medians of {args.runs})")
    print(f"tokaudit scan:         {b:.2f} s wall, {bc:.2f} s CPU; --deep/scan {d / b:.2f}")
    if raw_times:
        r, rc = _medians(raw_times)
        print(
            f"raw tiktoken build + per-token encode: {r:.2f} s wall, {rc:.2f} s CPU; --deep/raw {d / r:.2f} wall, "
            f"{dc / rc:.2f} CPU (target <= 1.2)"
        )

    start = time.perf_counter()
    (finding,) = list(unreachable_token.check(model)) or [None]
    rule_seconds = time.perf_counter() - start
    checked = finding.details["checked"] if finding else 0
    print(
        f"TA402 in-process: {rule_seconds:.2f} s for {checked} tokens (backend build included): "
        f"{checked / rule_seconds:,.0f} tokens/s; {finding.ids.count if finding else 0} unreachable"
    )


def _medians(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)


if __name__ == "__main__":
    main()
