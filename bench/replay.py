#!/usr/bin/env python3
"""Benchmark ``replay``: each detokenizer's tokens/second against a raw ``tokenizers`` DecodeStream
loop over the same ids (measured in the same run), and whole-replay linearity (N vs 2N tokens).

    python bench/replay.py [TARGET] [--tokens 200000]

Targets: offsets and bytes >= 0.5x the raw loop; doubling the stream costs at most 2.2x.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tokaudit.scan import load_model  # noqa: E402
from tokaudit.stream.detokenizers import DecodeContext, TokenBytes, build_detokenizers, run  # noqa: E402
from tokaudit.stream.readers import Stream  # noqa: E402
from tokaudit.stream.replay import ReplayOptions, load_tokenizer, replay  # noqa: E402

TEXT = (
    "The quick brown fox jumps over the lazy dog. Streaming detokenizers must never rewrite text.\n"
    "北京的天气很好，我们去检查依赖环境。东京、大阪和上海也是大城市。\n"
    '{"command": "bash check-deps.sh", "description": "检查 CDP 依赖环境"} 🌶️🎉 café naïve — “quotes”\n'
    "def f(x):\n    return x ** 2  # a comment with émojis 🚀\n"
)


def make_ids(tokenizer, n: int) -> list[int]:
    unit = tokenizer.encode(TEXT, add_special_tokens=False).ids
    reps = n // len(unit) + 1
    return (unit * reps)[:n]


def best_of(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("target", nargs="?", default=str(ROOT / "fixtures" / "kimi-k2.5"))
    ap.add_argument("--tokens", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    t = time.perf_counter()
    model = load_model(args.target)
    load = time.perf_counter() - t
    loaded = load_tokenizer(model)
    tokenizer, origin, build = loaded
    print(f"target {args.target}: model loaded in {load:.2f}s; tokenizer {origin} built in {build:.2f}s")

    ids = make_ids(tokenizer, args.tokens)
    steps = [(i,) for i in ids]
    print(f"stream: {len(ids)} tokens, one id per step")

    from tokenizers.decoders import DecodeStream

    def raw() -> None:
        ds = DecodeStream(skip_special_tokens=True)
        step = ds.step
        for i in ids:
            step(tokenizer, i)

    raw_s = best_of(raw, args.repeat)
    raw_rate = len(ids) / raw_s
    print(f"{'raw DecodeStream loop':<24} {raw_rate:>12,.0f} tok/s   1.00x  (baseline)")

    for name in ("offsets", "decodestream", "bytes", "naive"):
        def one(name: str = name) -> None:
            # a fresh context each time: no memo or token-bytes cache carried over between runs
            ctx = DecodeContext(tokenizer, True, TokenBytes(model.files))
            run(build_detokenizers([name], ctx, ())[0], steps)

        s = best_of(one, args.repeat)
        rate = len(ids) / s
        target = "  (target >= 0.50x)" if name in ("offsets", "bytes") else ""
        print(f"{name:<24} {rate:>12,.0f} tok/s   {rate / raw_rate:.2f}x{target}")

    t = time.perf_counter()
    tokenizer.decode(ids, skip_special_tokens=True)
    print(f"{'full (one decode)':<24} {len(ids) / (time.perf_counter() - t):>12,.0f} tok/s")

    # Linearity of the whole replay (all detokenizers, all checks, chunk invariance on; the
    # tokenizer build is left out: it does not depend on the stream).
    half = args.tokens // 2
    options = ReplayOptions(["full", "offsets", "decodestream", "bytes", "naive"])
    timings = {}
    for n in (half, args.tokens):
        stream = Stream("ids", tuple((i,) for i in ids[:n]))
        timings[n] = best_of(lambda stream=stream: replay(model, stream, options, loaded), 2)
        print(f"whole replay, {n:>7} tokens: {timings[n]:.2f}s")
    ratio = timings[args.tokens] / timings[half]
    print(f"linearity: {args.tokens} vs {half} tokens = {ratio:.2f}x the time (target <= 2.2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
