"""Benchmark: reading a GGUF's tokenizer, and `tokaudit scan FILE.gguf --format json`, against a minimal
stdlib reader of the same key/values measured in the same run.

    python bench/gguf.py [GGUF ...] [--runs N]

Defaults to llama.cpp's Llama 3 and Llama 2 vocab GGUFs from the real-tokenizer cache
(scripts/fetch_real_tokenizers.py). Prints, per file, medians of: tokaudit's reader
(:func:`tokaudit.artifacts.gguf.read_gguf_tokenizer`) and the baseline in-process, and their ratio; a whole
in-process scan (load_model + every default rule, modules already imported) against the baseline (issue 19's
target: <= 1.3x on ggml-vocab-llama-bpe.gguf); a whole `scan` process against a process running only the
baseline (interpreter start and imports included).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def baseline_read(path: str) -> dict:
    """The least a GGUF tokenizer reader has to do: header, every key/value (strings as bytes), no checks.
    ``python bench/gguf.py --baseline FILE`` runs it alone (the baseline process)."""
    import struct

    data = open(path, "rb").read()
    pos = 24
    n_kv = struct.unpack_from("<Q", data, 16)[0]

    def string() -> bytes:
        nonlocal pos
        n = struct.unpack_from("<Q", data, pos)[0]
        pos += 8 + n
        return data[pos - n : pos]

    def value(kind: int):
        nonlocal pos
        if kind == 8:
            return string()
        if kind == 9:
            inner, count = struct.unpack_from("<IQ", data, pos)
            pos += 12
            if inner == 8:
                return [string() for _ in range(count)]
            size = struct.calcsize(_SCALARS[inner])
            out = struct.unpack_from(f"<{count}{_SCALARS[inner]}", data, pos)
            pos += size * count
            return out
        size = struct.calcsize(_SCALARS[kind])
        pos += size
        return struct.unpack_from("<" + _SCALARS[kind], data, pos - size)[0]

    out = {}
    for _ in range(n_kv):
        key = string().decode()
        kind = struct.unpack_from("<I", data, pos)[0]
        pos += 4
        out[key] = value(kind)
    return out


def _defaults() -> list[Path]:
    spec = importlib.util.spec_from_file_location("fetch", ROOT / "scripts" / "fetch_real_tokenizers.py")
    assert spec is not None and spec.loader is not None
    fetch = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fetch)
    dirs = fetch.fetch(only=["gguf-llama-bpe", "gguf-llama-spm"])
    return [next(d.glob("*.gguf")) for d in dirs.values()]


def _median(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument(
        "--baseline", metavar="FILE", help="run only the baseline reader on FILE (the baseline process)"
    )
    args = parser.parse_args()
    if args.baseline:
        print(len(baseline_read(args.baseline)["tokenizer.ggml.tokens"]))
        return
    files = args.files or _defaults()
    sys.path.insert(0, str(ROOT))
    from tokaudit.artifacts.gguf import read_gguf_tokenizer

    from tokaudit.model.load import load_model
    from tokaudit.scan.run import scan_model

    print(
        f"{'file':<28} {'reader s':>8} {'baseline s':>10} {'ratio':>6} {'scan s':>7} {'ratio':>6} {'scan proc s':>11} "
        f"{'base proc s':>11} {'ratio':>6}"
    )
    for path in files:
        scan_model(load_model(str(path)))  # imports and first-use caches, as a warm process has them
        ours = _median(lambda: read_gguf_tokenizer(path), args.runs)
        theirs = _median(lambda: baseline_read(str(path)), args.runs)
        whole = _median(lambda: scan_model(load_model(str(path))), args.runs)
        scan = [sys.executable, "-m", "tokaudit", "scan", str(path), "--format", "json"]
        base = [sys.executable, __file__, "--baseline", str(path)]
        run = lambda cmd: subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)  # noqa: E731 - a one-line helper of this function
        run(scan), run(base)  # warm the page cache
        scan_s, base_s = _median(lambda: run(scan), args.runs), _median(lambda: run(base), args.runs)
        print(
            f"{path.name:<28} {ours:>8.3f} {theirs:>10.3f} {ours / theirs:>6.2f} {whole:>7.3f} {whole / theirs:>6.2f} "
            f"{scan_s:>11.2f} {base_s:>11.2f} {scan_s / base_s:>6.2f}"
        )


if __name__ == "__main__":
    main()
