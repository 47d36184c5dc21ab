#!/usr/bin/env python3
"""Benchmark ``replay`` as whole processes against a raw incremental-decode loop over the same ids,
both measured in the same run (wall seconds and peak RSS of each child process).

    python bench/replay.py [TARGET] [--sizes 10000,100000,1000000] [--formats json,rich,...]

Baseline: a minimal script that loads the tokenizer the cheapest way and decodes the ids
incrementally: ``tokenizers`` DecodeStream for a tokenizer.json model, tiktoken
(``decode_single_token_bytes`` + an incremental UTF-8 decoder) for a rank model such as Kimi.

Targets (issue 11): at the largest size, replay (all detokenizers, all checks, chunk invariance on)
<= 3x the baseline's wall time, peak RSS <= 2x the baseline's in every output format;
time(1M)/time(100k) <= 11. Also prints each detokenizer's in-process rate against the raw
DecodeStream loop.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tokaudit.model.load import load_model  # noqa: E402 - after sys.path names the checkout
from tokaudit.stream.detokenizers import DecodeContext, TokenBytes, build_detokenizers, run  # noqa: E402 - after sys.path names the checkout
from tokaudit.stream.steps import Stream  # noqa: E402 - after sys.path names the checkout
from tokaudit.stream.replay import load_tokenizer  # noqa: E402 - after sys.path names the checkout
from scan import bytecode_env  # noqa: E402  (bench/scan.py: the same bytecode cache for every bench)

TEXT = (
    "The quick brown fox jumps over the lazy dog. Streaming detokenizers must never rewrite text.\n"
    "北京的天气很好，我们去检查依赖环境。东京、大阪和上海也是大城市。\n"
    '{"command": "bash check-deps.sh", "description": "检查 CDP 依赖环境"} 🌶️🎉 café naïve — “quotes”\n'
    "def f(x):\n    return x ** 2  # a comment with émojis 🚀\n"
)

#: The raw loops, run as ``python -c`` with argv: target dir, ids file.
RAW_DECODESTREAM = """
import json, sys
from tokenizers import Tokenizer
from tokenizers.decoders import DecodeStream
tok = Tokenizer.from_file(sys.argv[1] + "/tokenizer.json")
ids = json.load(open(sys.argv[2]))
step = DecodeStream(skip_special_tokens=True).step
n = 0
for i in ids:
    out = step(tok, i)
    if out is not None:
        n += len(out)
print(n)
"""

RAW_TIKTOKEN = """
import codecs, json, sys
from tiktoken.load import load_tiktoken_bpe
import tiktoken
ranks = load_tiktoken_bpe(sys.argv[1] + "/tiktoken.model")
pat = sys.argv[3]
enc = tiktoken.Encoding("bench", pat_str=pat, mergeable_ranks=ranks, special_tokens={})
ids = json.load(open(sys.argv[2]))
token_bytes = enc.decode_single_token_bytes
decode = codecs.getincrementaldecoder("utf-8")("replace").decode
n = 0
for i in ids:
    try:
        n += len(decode(token_bytes(i)))
    except KeyError:
        pass  # special tokens: skipped, as skip_special_tokens does
print(n)
"""


def child(argv: list[str], cpu: list[float] | None = None) -> tuple[float, int]:
    """Wall seconds and peak RSS (KB) of one child process (its CPU seconds appended to ``cpu``). The
    child is started by GNU time: a child forked from this (large) process would report this process's
    RSS as its own peak. Compiled modules are cached, as after a normal install."""
    t = time.perf_counter()
    proc = subprocess.run(
        ["/usr/bin/time", "-f", "maxrss=%M cpu=%U+%S", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=bytecode_env(True),
    )
    wall = time.perf_counter() - t
    err = proc.stderr.decode()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{argv[:4]} failed: {err.strip()[-500:]}")
    stats = err.rsplit("maxrss=", 1)[1].split()
    if cpu is not None:
        cpu.append(sum(float(x) for x in stats[1].removeprefix("cpu=").split("+")))
    return wall, int(stats[0])


def median_child(argv: list[str], repeat: int) -> tuple[float, int, float]:
    """Median wall seconds, the largest peak RSS and the median CPU seconds of ``repeat`` runs."""
    cpu: list[float] = []
    runs = [child(argv, cpu) for _ in range(repeat)]
    return statistics.median(w for w, _ in runs), max(r for _, r in runs), statistics.median(cpu)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("target", nargs="?", default=str(ROOT / "fixtures" / "kimi-k2.5"))
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--formats", default="json,rich,sarif,junit,markdown,github")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--text",
        help="a UTF-8 file to encode for the streams instead of the repeated sample (e.g. a "
        "concatenation of source files: distinct text, so memoised steps rarely hit)",
    )
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    formats = args.formats.split(",")

    model = load_model(args.target)
    tokenizer, origin, build, _ = loaded = load_tokenizer(model)
    print(f"target {args.target}: tokenizer {origin}, built in {build:.2f}s")
    target = Path(args.target)
    text = Path(args.text).read_text(encoding="utf-8", errors="replace") if args.text else TEXT
    if (target / "tokenizer.json").is_file():
        raw, raw_name = [RAW_DECODESTREAM], "raw tokenizers DecodeStream loop"
        unit = tokenizer.encode(text, add_special_tokens=False).ids
    else:
        from tokaudit.backends.registry import load_backends

        # replay's tokenizer rebuilt from ranks is decode-only (no merges): encode with tiktoken
        enc = load_backends(model, ["tiktoken"])[0].backend.encoding  # type: ignore[union-attr]
        raw, raw_name = [RAW_TIKTOKEN], "raw tiktoken incremental decode"
        pat = enc._pat_str
        unit = enc.encode_ordinary(text)
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for n in sizes:
            files[n] = Path(tmp) / f"ids-{n}.json"
            files[n].write_text(json.dumps((unit * (n // len(unit) + 1))[:n]))
        out = str(Path(tmp) / "report")
        print(f"baseline: {raw_name}, whole process (python start, tokenizer load, json ids, the loop)")
        print(
            f"{'tokens':>9}  {'baseline s':>10} {'cpu s':>6} {'RSS MB':>7}  {'replay json s':>13} {'cpu s':>6} "
            f"{'RSS MB':>7}  {'time x':>6} {'cpu x':>6} {'RSS x':>6}"
        )
        walls = {}
        for n in sizes:
            extra = [pat] if raw[0] is RAW_TIKTOKEN else []
            base_s, base_kb, base_cpu = median_child(
                [py, "-c", raw[0], str(target), str(files[n]), *extra], args.repeat
            )
            rep_s, rep_kb, rep_cpu = median_child(
                [
                    py,
                    "-m",
                    "tokaudit",
                    "replay",
                    str(target),
                    str(files[n]),
                    "--format",
                    "json",
                    "--quiet",
                    "--output",
                    out,
                ],
                args.repeat,
            )
            walls[n] = (rep_s, base_s, base_kb, rep_cpu, base_cpu)
            print(
                f"{n:>9}  {base_s:>10.2f} {base_cpu:>6.2f} {base_kb / 1024:>7.0f}  {rep_s:>13.2f} {rep_cpu:>6.2f} "
                f"{rep_kb / 1024:>7.0f}  {rep_s / base_s:>6.2f} {rep_cpu / base_cpu:>6.2f} {rep_kb / base_kb:>6.2f}"
            )
        big = max(sizes)
        print(
            f"\npeak RSS per output format at {big} tokens (target <= 2.00x the baseline's {walls[big][2] / 1024:.0f} "
            "MB):"
        )
        for fmt in formats:
            wall, kb = child(
                [
                    py,
                    "-m",
                    "tokaudit",
                    "replay",
                    str(target),
                    str(files[big]),
                    "--format",
                    fmt,
                    "--quiet",
                    "--output",
                    out,
                ]
            )
            print(f"  {fmt:<9} {wall:6.2f}s  {kb / 1024:6.0f} MB  {kb / walls[big][2]:.2f}x")
        wall, kb = child(
            [
                py,
                "-m",
                "tokaudit",
                "replay",
                str(target),
                str(files[big]),
                "--format",
                "json",
                "--quiet",
                "--steps",
                "all",
                "--output",
                out,
            ]
        )
        print(
            f"  json --steps all {wall:6.2f}s  {kb / 1024:6.0f} MB  {kb / walls[big][2]:.2f}x  "
            f"({os.path.getsize(out) / 1e6:.0f} MB written)"
        )
        print(
            f"\nwhole replay at {big} tokens: {walls[big][0] / walls[big][1]:.2f}x the baseline wall time, "
            f"{walls[big][3] / walls[big][4]:.2f}x its CPU time (target <= 3.00x)"
        )
        if 100_000 in walls and 1_000_000 in walls:
            print(f"linearity: time(1M)/time(100k) = {walls[1_000_000][0] / walls[100_000][0]:.2f} (target <= 11)")

    # In-process rate of each detokenizer against the raw DecodeStream loop over the same ids.
    from tokenizers.decoders import DecodeStream

    ids = (unit * (200_000 // len(unit) + 1))[:200_000]
    steps = Stream("json", ids).steps  # as read from a file: flat ids, one per step

    def best(fn) -> float:
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        return min(times)

    def raw_loop() -> None:
        step = DecodeStream(skip_special_tokens=True).step
        for i in ids:
            step(tokenizer, i)

    raw_rate = len(ids) / best(raw_loop)
    print(f"\nin-process, {len(ids)} tokens: raw DecodeStream loop {raw_rate:,.0f} tok/s (1.00x)")
    for name in ("offsets", "decodestream", "bytes", "naive"):

        def one(name: str = name) -> None:
            ctx = DecodeContext(tokenizer, True, TokenBytes(model.files))  # fresh caches each time
            run(build_detokenizers([name], ctx, ())[0], steps)

        rate = len(ids) / best(one)
        print(f"  {name:<13} {rate:>12,.0f} tok/s  {rate / raw_rate:.2f}x")
    del loaded
    return 0


if __name__ == "__main__":
    sys.exit(main())
