#!/usr/bin/env python3
"""Benchmark: the bounded worker process (tokaudit/worker.py), against baselines measured in the same run.

    python bench/worker.py [--repeat R] [--gguf FILE]

1. Start-up: the first call of a new worker (spawn ``python -m tokaudit.worker``, set its limits, answer) vs
   ``python -c pass`` started the same way (the interpreter alone). Paid once per run per worker.
2. A round trip of :func:`tokaudit.worker.echo` with payloads a caller sends: 20 ids, a 4 KB prompt (a chat
   template render and its context, as part B will send), 100 KB and 1 MB of text, vs calling the same function in
   this process (which costs ~nothing: the ratio is the price of the isolation, in microseconds).
3. llama.cpp's tokenizer on a GGUF (default: fixtures/llamacpp/clean-bpe.gguf): ``encode`` of the 300 built-in
   corpus texts one call each and in one ``encode_batch``, through the backend (the worker), vs the same
   llama_tokenize calls made in this process (what tokaudit did before the worker).

Each figure is the median of R runs (default 200 for round trips, 5 for start-up and encode).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tokaudit.worker import Limits, Worker, echo  # noqa: E402 - after sys.path names the checkout


def _median(times: list[float]) -> float:
    return statistics.median(times)


def startup(repeat: int) -> None:
    spawn, bare = [], []
    for _ in range(repeat):
        worker = Worker(Limits())
        t = time.perf_counter()
        worker.call("tokaudit.worker:echo", 1)
        spawn.append(time.perf_counter() - t)
        worker.close()
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        bare.append(time.perf_counter() - t)
    s, b = _median(spawn), _median(bare)
    print(
        f"start-up: first call of a new worker {s * 1000:.1f} ms vs python -c pass {b * 1000:.1f} ms (ratio "
        f"{s / b:.2f})"
    )


def round_trips(repeat: int) -> None:
    worker = Worker(Limits())
    worker.call("tokaudit.worker:echo", 0)
    payloads = {
        "20 ids": list(range(20)),
        "4 KB render + context": {"template": "x" * 3000, "messages": [{"role": "user", "content": "y" * 1000}]},
        "100 KB text": "z" * 100_000,
        "1 MB text": "z" * 1_000_000,
    }
    for label, payload in payloads.items():
        through, local = [], []
        for _ in range(repeat):
            t = time.perf_counter()
            worker.call("tokaudit.worker:echo", payload)
            through.append(time.perf_counter() - t)
            t = time.perf_counter()
            echo(payload)
            local.append(time.perf_counter() - t)
        w, b = _median(through), _median(local)
        print(
            f"round trip, {label:22}: {w * 1e6:8.0f} us vs in-process {b * 1e6:6.2f} us (+{(w - b) * 1e6:.0f} us per "
            "call)"
        )
    worker.close()


def llamacpp(gguf: Path, repeat: int) -> None:
    try:
        import llama_cpp  # noqa: F401 - imported to time the import
    except ImportError:
        print("llama.cpp: skipped (llama-cpp-python is not installed)")
        return
    from tokaudit.backends import llamacpp_calls
    from tokaudit.backends.llamacpp_backend import LlamaCppBackend
    from tokaudit.compare.corpus import builtin_corpus

    texts = [c.text for c in builtin_corpus([], sweep="off")]
    backend = LlamaCppBackend.load(gguf)
    one, batch, local = [], [], []
    for _ in range(repeat):
        t = time.perf_counter()
        ids_one = [backend.encode(text) for text in texts]
        one.append(time.perf_counter() - t)
        t = time.perf_counter()
        ids_batch = backend.encode_batch(texts)
        batch.append(time.perf_counter() - t)
        t = time.perf_counter()
        ids_local = llamacpp_calls.tokenize(str(gguf), texts, False)  # in this process, as before the worker
        local.append(time.perf_counter() - t)
    assert ids_one == ids_batch == ids_local
    o, b, loc = _median(one), _median(batch), _median(local)
    print(
        f"llama.cpp encode of {len(texts)} texts ({gguf.name}): one call each {o * 1000:.1f} ms, one batch "
        f"{b * 1000:.1f} ms, "
        f"in-process {loc * 1000:.1f} ms (ratios {o / loc:.2f}, {b / loc:.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--gguf", type=Path, default=ROOT / "fixtures" / "llamacpp" / "clean-bpe.gguf")
    opts = parser.parse_args()
    startup(max(3, opts.repeat // 40))
    round_trips(opts.repeat)
    llamacpp(opts.gguf, max(3, opts.repeat // 40))


if __name__ == "__main__":
    main()
