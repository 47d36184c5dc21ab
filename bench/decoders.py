"""Benchmark: decoder-aware token text against the baselines measured in the same run.

    python bench/decoders.py [TARGET ...] [--runs N] [--repeat K]
    python bench/decoders.py ~/.cache/tokaudit/real/models/qwen3 ~/.cache/tokaudit/real/models/gemma3

For each target (a directory with a tokenizer.json; default: the decoders/ fixtures) the built-in
corpus (no Unicode sweep) repeated K times (default 40, ~200k tokens on real vocabularies) is
encoded once with ``tokenizers``; then, median of N runs:

* strict: ``StrictBackend.decode`` per case (the decoder chain over the files profile) against
  ``tokenizers``' own ``decode_batch`` of the same ids (ratio strict / tokenizers);
* replay ``bytes``: the detokenizer fed the whole corpus as one stream, one token per step, with
  the decoder pieces against the same detokenizer over the plain table bytes (no decoder: what it
  did before the text followed the decoder chain); ratio pieces / plain. WordPiece targets have no
  ``bytes`` row (the strategy does not apply there).

Every text is checked equal to the library's decode before timing is printed.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from tokenizers import Tokenizer

from tokaudit.backends.registry import load_backends
from tokaudit.compare.corpus import builtin_corpus
from tokaudit.model.text import TokenText
from tokaudit.model.load import load_model
from tokaudit.stream.detokenizers import BytesDetok, DecodeContext, TokenBytes

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = [ROOT / "fixtures" / "decoders" / name for name in ("gemma-like", "mistral-like", "bert-json")]


def _median(fn, runs: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(runs):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def bench(target: Path, runs: int, repeat: int) -> None:
    tok = Tokenizer.from_file(str(target / "tokenizer.json"))
    model = load_model(str(target))
    strict = load_backends(model, ["strict"])[0].backend
    texts = [c.text for c in builtin_corpus([], seed=0, sweep="off")] * repeat
    ids = [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
    tokens = sum(map(len, ids))
    base, want = _median(lambda: tok.decode_batch(ids, skip_special_tokens=False), runs)
    mine, got = _median(lambda: [strict.decode(x) for x in ids], runs)
    assert got == want, f"{target.name}: strict differs from tokenizers"
    print(f"{target.name}: {tokens:,} tokens in {len(ids)} cases")
    print(f"  strict decode   {mine:.3f} s   tokenizers decode_batch {base:.3f} s   ratio {mine / base:.2f}")
    text = TokenText(model)
    if text.not_concatenative is not None:
        print(f"  bytes           not applicable: {text.not_concatenative}")
        return
    stream = [i for x in ids for i in x]
    steps = [(i,) for i in stream]
    full = tok.decode(stream, skip_special_tokens=False)

    def run(tokens_: TokenBytes) -> str:
        detok = BytesDetok(DecodeContext(tok, False, tokens_), [])
        chunks, _ = detok.feed(steps, 0, False)
        return "".join(chunks) + detok.flush()

    plain, _ = _median(lambda: run(TokenBytes(model.files)), runs)
    pieces, out = _median(lambda: run(TokenBytes(model.files, TokenText(model))), runs)
    assert out == full, f"{target.name}: bytes differs from tokenizers"
    print(f"  replay bytes    {pieces:.3f} s   plain table bytes {plain:.3f} s   ratio {pieces / plain:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=40)
    args = parser.parse_args()
    for target in args.targets or DEFAULT:
        bench(target.expanduser(), args.runs, args.repeat)


if __name__ == "__main__":
    main()
