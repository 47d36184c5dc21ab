"""``diff A B --corpus FILE``: token counts of a corpus under two tokenizers (or one and a committed baseline).

Each side encodes every text with the engine a gateway serving it uses (:func:`gateway_backend`: tokenizers for a
tokenizer.json, tiktoken for a rank file, llama.cpp for a GGUF). The counts baseline (``--write-counts``) is a JSON
object that CI can commit and gate on with ``--counts-baseline``:

    {"tokaudit_counts": 1, "target": "...", "backend": "hf", "corpus": "corpus.txt",
     "corpus_sha256": "<sha256 of the texts, each followed by a NUL>", "total": 1234,
     "texts": [{"name": "corpus.txt:1", "tokens": 12}, ...]}
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from tokaudit.artifacts.strict_json import read_json
from tokaudit.records import Provenance
from tokaudit.backends.base import call, encode_batch
from tokaudit.compare.corpus import Case
from tokaudit.errors import InputError
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.oncall.codec import pick_backend
from tokaudit.oncall.diff_result import CountsDrift, CountTotal, TextCounts
from tokaudit.oncall.codes import BACKEND_CRASH, TOKEN_COUNT_DRIFT
from tokaudit.report.finding import Finding
from tokaudit.report.text import visible

FORMAT = 1
DEFAULT_MAX_GROWTH = 2.0
#: Texts named in the drift finding (the largest growths).
SHOWN = 5


@dataclass(frozen=True)
class Counts:
    """One tokenizer's token count per corpus text."""

    target: str
    backend: str
    counts: tuple[int, ...]

    @property
    def total(self) -> int:
        return sum(self.counts)


def corpus_digest(cases: list[Case]) -> str:
    h = hashlib.sha256()
    for c in cases:
        h.update(c.text.encode("utf-8", "surrogatepass") + b"\0")
    return h.hexdigest()


def count_tokens(model: TokenizerModel, cases: list[Case]) -> tuple[Counts | None, list[Finding]]:
    """Token counts of every case with the model's serving encoder; a backend that fails is a TA605 finding."""
    lb = pick_backend(model, None, encode=True)
    backend = lb.backend
    assert backend is not None
    texts = [c.text for c in cases]
    batch = call(encode_batch, backend, texts)
    if batch.ok:
        return Counts(model.target, lb.name, tuple(len(ids) for ids in batch.value)), []
    counts = []
    for case in cases:  # find the text that breaks it
        one = call(backend.encode, case.text)
        if not one.ok:
            return None, [
                Finding(
                    BACKEND_CRASH.code,
                    BACKEND_CRASH.name,
                    BACKEND_CRASH.severity,
                    f"{lb.name} cannot encode corpus text {case.source}: {visible(one.describe())}",
                    details={"backend": lb.name, "case": case.source},
                    target=model.target,
                )
            ]
        counts.append(len(one.value))
    return Counts(model.target, lb.name, tuple(counts)), []


def write_counts(path: Path, counts: Counts, cases: list[Case], corpus: str) -> None:
    doc = {
        "tokaudit_counts": FORMAT,
        "target": counts.target,
        "backend": counts.backend,
        "corpus": corpus,
        "corpus_sha256": corpus_digest(cases),
        "total": counts.total,
        "texts": [{"name": c.source, "tokens": n} for c, n in zip(cases, counts.counts)],
    }
    try:
        path.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    except OSError as exc:
        raise InputError(
            f"cannot write the counts: {exc.strerror or exc}", file=str(path), key="--write-counts"
        ) from None


def read_counts(path: Path, cases: list[Case]) -> Counts:
    """A counts baseline for these texts; another corpus, or a file that is not one, is an error."""
    data = read_json(path)
    if not isinstance(data, dict) or data.get("tokaudit_counts") != FORMAT:
        raise InputError(
            f'not a tokaudit counts file (expected "tokaudit_counts": {FORMAT}; write one with --write-counts)',
            file=str(path),
            key="tokaudit_counts",
        )
    texts = data.get("texts")
    if not isinstance(texts, list) or not all(
        isinstance(t, dict)
        and isinstance(t.get("tokens"), int)
        and not isinstance(t.get("tokens"), bool)
        and t["tokens"] >= 0
        for t in texts
    ):
        raise InputError('expected a list of {"name", "tokens"} objects', file=str(path), key="texts")
    if data.get("corpus_sha256") != corpus_digest(cases) or len(texts) != len(cases):
        raise InputError(
            f"the counts were written for another corpus ({len(texts)} texts, sha256 "
            f"{str(data.get('corpus_sha256'))[:12]}…; this one: {len(cases)} texts, {corpus_digest(cases)[:12]}…): "
            "rewrite them with --write-counts",
            file=str(path),
            key="corpus_sha256",
        )
    return Counts(str(data.get("target", path.name)), str(data.get("backend", "?")), tuple(t["tokens"] for t in texts))


def drift(a: Counts, b: Counts, cases: list[Case], corpus: str, max_growth: float) -> tuple[CountsDrift, list[Finding]]:
    """The per-text and total counts of both sides, and TA704 when B's total grows past ``max_growth`` percent."""
    rows = tuple(TextCounts(c.source, x, y) for c, x, y in zip(cases, a.counts, b.counts))
    growth = (b.total - a.total) / a.total * 100 if a.total else (0.0 if b.total == 0 else float("inf"))
    data = CountsDrift(
        corpus=corpus,
        texts=rows,
        max_growth_percent=max_growth,
        a=CountTotal(a.target, a.backend, a.total),
        b=CountTotal(b.target, b.backend, b.total),
        growth_percent=round(growth, 4) if growth != float("inf") else None,
    )
    findings = []
    if growth > max_growth:
        worst = sorted((r for r in rows if r.delta > 0), key=lambda r: (-r.delta, r.name))[:SHOWN]
        shown = "; ".join(f"{r.name} {r.a} -> {r.b}" for r in worst)
        findings.append(
            TOKEN_COUNT_DRIFT.finding(
                f"the corpus ({len(rows):,} texts) encodes to {a.total:,} tokens under {a.target} ({a.backend}) and "
                f"{b.total:,} "
                f"under {b.target} ({b.backend}): {'+' if growth != float('inf') else ''}"
                f"{f'{growth:.2f} %' if growth != float('inf') else 'from zero'}, over --max-growth {max_growth:g} %. "
                "Prompts cost "
                f"more, fit less context and hit max_tokens sooner. Grew most: {shown}.",
                location=Provenance(corpus),
                details={
                    "subject": corpus,
                    "total_a": a.total,
                    "total_b": b.total,
                    "growth_percent": data.growth_percent,
                    "max_growth_percent": max_growth,
                    "grew_most": [r.to_json() for r in worst],
                },
            )
        )
    return data, findings
