"""Benchmark: `compare` on a ~5 MB corpus against the sum of each backend's own batch encode + batch
decode of the same corpus, measured in the same run (same process, same loaded backends).

    python bench/compare.py [TARGET] [--mb 5] [--backends LIST] [--runs N]
    python bench/compare.py fixtures/kimi-k2.5 --mb 1 --backends tiktoken,hf,reference,strict   (loading dominates)
    python bench/compare.py ~/.cache/tokaudit/real/models/llama3 --gguf ggml-vocab-llama-bpe.gguf \\
        --backends hf,fastokens,llama.cpp

The corpus is seeded text: the built-in corpus's fixed texts and generators (no Unicode sweep),
shuffled and repeated, one case per line. Compare's wall time includes loading the backends,
building the corpus, every comparison, the unknown-id table and the JSON-able result; the
baseline is only `encode_batch` + `decode_batch` of every backend (decode-only backends decode the
first encoder's ids). ``--gguf FILE`` loads the llama.cpp (and transformers-gguf) backends from that GGUF,
so llama.cpp's load time and throughput show beside hf's and fastokens' on the same corpus. Prints both
(median of N runs) and the ratio (target: <= 1.3), the same in
CPU seconds of all threads (steadier than wall time on a shared machine), then each
backend's load seconds (as compare measured them) beside its encode/decode throughput (MB/s of
corpus, decode throughput counted on the same corpus's ids).

Then, when fastokens is installed and the target has a tokenizer.json, Dynamo's question: fastokens'
and tokenizers' encode throughput side by side on the same corpus (their own batch encode, and one
call per line), and the load time of each from the same tokenizer.json (median of N runs; the ratio
is fastokens / tokenizers, both measured in this run). ``--no-compare`` prints only that part.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from tokaudit.backends.base import can_encode, decode_batch, encode_batch
from tokaudit.backends.registry import BACKEND_NAMES, load_backends, parse_backend_list
from tokaudit.compare.corpus import builtin_corpus, user_corpus
from tokaudit.compare.run import CompareOptions, compare_model, special_strings
from tokaudit.model.load import load_model

ROOT = Path(__file__).resolve().parent.parent


def make_corpus(path: Path, specials: list[str], megabytes: float, seed: int = 0) -> None:
    lines = [
        line
        for case in builtin_corpus(specials, seed=seed, generated=256, sweep="off")
        for line in case.text.splitlines()
        if line
    ]
    rng = random.Random(seed)
    out, size = [], 0
    while size < megabytes * 1_000_000:
        rng.shuffle(lines)
        for line in lines:
            out.append(line)
            size += len(line.encode("utf-8")) + 1
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def baseline(
    target: str, names: list[str], texts: list[str], per_backend: dict | None = None, gguf: Path | None = None
) -> tuple[float, float]:
    """Each backend's own batch encode + decode of the corpus, summed (wall, CPU seconds); ``per_backend``
    collects name -> [encode seconds, decode seconds] runs."""
    loaded = [lb.backend for lb in load_backends(load_model(target), names, gguf=gguf) if lb.backend is not None]
    total, cpu, first_ids = 0.0, 0.0, None
    for b in [b for b in loaded if can_encode(b)] + [b for b in loaded if not can_encode(b)]:
        start, cpu_start = time.perf_counter(), time.process_time()
        if can_encode(b):
            ids = encode_batch(b, texts)
            first_ids = first_ids or ids
        else:
            ids = first_ids
        encoded = time.perf_counter()
        decode_batch(b, ids)
        total += time.perf_counter() - start
        cpu += time.process_time() - cpu_start
        if per_backend is not None:
            per_backend.setdefault(b.name, []).append(
                (encoded - start if can_encode(b) else None, time.perf_counter() - encoded)
            )
    return total, cpu


def fastokens_vs_tokenizers(tokenizer_json: Path, texts: list[str], runs: int) -> None:
    """Encode throughput and load time of fastokens and tokenizers on the same file and corpus."""
    try:
        import fastokens
    except ImportError:
        print("fastokens: not installed (pip install 'tokaudit[fastokens]'): not measured")
        return
    from tokenizers import Tokenizer

    loaders = {"fastokens": fastokens.Tokenizer.from_file, "tokenizers": Tokenizer.from_file}
    loaded, load_s = {}, {}
    for name, load in loaders.items():
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            try:
                loaded[name] = load(str(tokenizer_json))
            except BaseException as exc:  # fastokens refusing the file is the answer
                if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                    raise
                print(f"{name}: cannot load {tokenizer_json.name}: {exc} (Dynamo falls back to HF)")
                return
            times.append(time.perf_counter() - start)
        load_s[name] = statistics.median(times)
    size = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    batch, loop, ids = {}, {}, {}
    for name, tok in loaded.items():
        b, lp = [], []
        for _ in range(runs):
            start = time.perf_counter()
            out = tok.encode_batch(texts, add_special_tokens=False)
            b.append(time.perf_counter() - start)
            start = time.perf_counter()
            for t in texts:
                tok.encode(t, add_special_tokens=False)
            lp.append(time.perf_counter() - start)
        batch[name], loop[name] = statistics.median(b), statistics.median(lp)
        ids[name] = [list(e.ids) for e in out]
    same = sum(a == b for a, b in zip(ids["fastokens"], ids["tokenizers"]))
    print(f"fastokens vs tokenizers on {tokenizer_json} ({size:.2f} MB, {len(texts)} lines; median of {runs}):")
    print(f"  {'':12} {'load s':>8} {'batch MB/s':>11} {'loop MB/s':>10}")
    for name in loaded:
        print(f"  {name:12} {load_s[name]:8.3f} {size / batch[name]:11.2f} {size / loop[name]:10.2f}")
    print(
        f"  ratio fastokens/tokenizers: load {load_s['fastokens'] / load_s['tokenizers']:.2f}x, batch throughput "
        f"{batch['tokenizers'] / batch['fastokens']:.2f}x, loop throughput "
        f"{loop['tokenizers'] / loop['fastokens']:.2f}x; "
        f"same ids on {same} of {len(texts)} lines"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", nargs="?", default=str(ROOT / "fixtures" / "compare" / "same"))
    parser.add_argument("--mb", type=float, default=5.0)
    parser.add_argument("--backends", default=",".join(BACKEND_NAMES))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-compare", action="store_true", help="only the fastokens vs tokenizers figures")
    parser.add_argument("--gguf", type=Path, default=None, help="the GGUF the llama.cpp backend loads")
    args = parser.parse_args()
    names = parse_backend_list(args.backends)
    model = load_model(args.target)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.txt"
        make_corpus(corpus, special_strings(model), args.mb)
        texts = [c.text for c in user_corpus(corpus)]
        tj = model.artifacts.tokenizer_json
        if args.no_compare:
            if tj is not None:
                fastokens_vs_tokenizers(tj.path, texts, args.runs)
            return
        options = CompareOptions(backends=names, corpora=[corpus], builtin=False, gguf=args.gguf)
        walls, bases, cpus, base_cpus, loads, per_backend = [], [], [], [], {}, {}
        for _ in range(args.runs):
            start, cpu_start = time.perf_counter(), time.process_time()
            result, _findings = compare_model(load_model(args.target), options)
            walls.append(time.perf_counter() - start)
            cpus.append(time.process_time() - cpu_start)
            for row in result.backends:
                loads.setdefault(row.loaded.name, []).append(round(row.loaded.load_seconds, 4) or 0.0)
            base_wall, base_cpu = baseline(args.target, names, texts, per_backend, args.gguf)
            bases.append(base_wall)
            base_cpus.append(base_cpu)
    used = [row.loaded.name for row in result.backends if row.loaded.available]
    wall, base = statistics.median(walls), statistics.median(bases)
    print(f"corpus: {result.corpus.bytes / 1e6:.2f} MB, {result.corpus.cases} cases; backends: {', '.join(used)}")
    print(f"compare wall time:                 {wall:.3f} s (median of {args.runs})")
    print(f"sum of own batch encode + decode:  {base:.3f} s")
    print(f"ratio: {wall / base:.2f} (target <= 1.3)")
    cpu, base_cpu = statistics.median(cpus), statistics.median(base_cpus)
    print(f"CPU seconds (all threads): compare {cpu:.3f}, own batch calls {base_cpu:.3f}, ratio {cpu / base_cpu:.2f}")
    size = result.corpus.bytes / 1e6
    print(f"per backend (medians of {args.runs}; load inside compare, throughput of its own batch calls):")
    print(f"  {'backend':<18} {'load s':>7} {'encode MB/s':>12} {'decode MB/s':>12}")
    for row in result.backends:
        name = row.loaded.name
        if not row.loaded.available:
            print(f"  {name:<18} unavailable: {row.loaded.unavailable}")
            continue
        runs = per_backend.get(name, [])
        enc = [e for e, _ in runs if e]
        dec = [d for _, d in runs if d]
        enc_s = f"{size / statistics.median(enc):12.2f}" if enc else f"{'-':>12}"
        dec_s = f"{size / statistics.median(dec):12.2f}" if dec else f"{'-':>12}"
        print(f"  {name:<18} {statistics.median(loads[name]):7.3f} {enc_s} {dec_s}")
    if model.artifacts.tokenizer_json is not None:
        fastokens_vs_tokenizers(model.artifacts.tokenizer_json.path, texts, args.runs)


if __name__ == "__main__":
    main()
