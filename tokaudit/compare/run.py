"""``compare``: load the backends, run them over the corpus, compare every pair, build the findings."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

from tokaudit.backends.base import can_encode
from tokaudit.backends.registry import LoadedBackend, load_backends, missing_libraries
from tokaudit.compare.cause import one_cause
from tokaudit.compare.findings import (
    crash_findings,
    fallback_findings,
    own_roundtrip_findings,
    pair_findings,
    race_findings,
    unknown_id_findings,
)
from tokaudit.compare.corpus import Case, builtin_corpus, sample, user_corpus
from tokaudit.compare.golden import Golden, GoldenResult, check_golden, golden_findings, read_golden
from tokaudit.compare.parity import PairResult, TokenView, compare_decoder, compare_encoders
from tokaudit.compare.race import RaceResult, race
from tokaudit.compare.special_addition import special_addition_findings
from tokaudit.compare.result import CompareResult
from tokaudit.compare.rows import BackendRow, CorpusSummary, Throughput
from tokaudit.compare.runs import BackendRun, Progress, run_backend, run_decoder
from tokaudit.compare.triage import triage_for
from tokaudit.compare.unknown_ids import UnknownIdTable, unknown_id_table
from tokaudit.errors import InputError
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Finding

#: At most this many special-token strings go into the built-in corpus (Kimi-style models declare hundreds).
MAX_SPECIALS = 512


@dataclass(frozen=True)
class CompareOptions:
    backends: list[str]
    pat_str: str | None = None
    corpora: list[Path] = field(default_factory=list)
    whole_file: bool = False
    sample: int | None = None
    seed: int = 0
    builtin: bool = True
    #: "planes" (default), "full" or "off"
    sweep: str = "planes"
    trust_remote_code: bool = False
    concurrency: int = 0
    max_examples: int = 3
    #: ``--golden FILE``: expected ids per text, checked for every backend that encodes.
    golden: Path | None = None
    #: ``--gguf FILE``: the GGUF the llama.cpp and transformers-gguf backends load (the conversion check).
    gguf: Path | None = None


def special_strings(model: TokenizerModel) -> list[str]:
    """Special-token strings a files-only loader knows (the strings users can type to reach them)."""
    out: dict[str, None] = {}
    for layer in model.files.layers:
        if layer.special:
            for token in layer.tokens.values():
                out.setdefault(token.decode("utf-8", "replace"), None)
    return sorted(out)[:MAX_SPECIALS]


def build_corpus(model: TokenizerModel, options: CompareOptions, golden: Golden | None = None) -> list[Case]:
    """The built-in corpus, the user's, then the golden file's texts (last, so their ids are the run's tail)."""
    cases: list[Case] = []
    if options.builtin:
        cases += builtin_corpus(special_strings(model), seed=options.seed, sweep=options.sweep)
    user: list[Case] = []
    for path in options.corpora:
        user += user_corpus(path, options.whole_file)
    cases += sample(user, options.sample, options.seed)
    if golden is not None:
        cases += [Case(g.where, g.text) for g in golden.cases]
    if not cases:
        raise InputError(
            "nothing to compare: the corpus is empty", key="--corpus" if options.corpora else "--no-builtin-corpus"
        )
    return cases


@dataclass
class Comparison:
    loaded: list[LoadedBackend]
    cases: list[Case]
    corpus_bytes: int
    runs: list[BackendRun]
    pairs: list[PairResult]
    unknown: UnknownIdTable
    races: list[RaceResult]
    race_note: str | None
    golden: Golden | None = None
    golden_results: list[GoldenResult] = field(default_factory=list)


def run_comparison(model: TokenizerModel, options: CompareOptions, progress: Progress | None = None) -> Comparison:
    golden = read_golden(options.golden) if options.golden is not None else None
    cases = build_corpus(model, options, golden)  # first: a bad corpus fails before any backend loads
    loaded = load_backends(
        model, options.backends, options.pat_str, trust_remote_code=options.trust_remote_code, gguf=options.gguf
    )
    usable = [lb.backend for lb in loaded if lb.backend is not None]
    encoders = [b for b in usable if can_encode(b)]
    # with a golden file, one backend that encodes is enough: the file is the other side. A named backend that
    # cannot load is a row with its reason (and TA306 for fastokens): what can still run, runs.
    asked_too_few = len(loaded) < 2 and golden is None
    if not encoders or asked_too_few:
        why = "; ".join(f"{lb.name}: {lb.unavailable}" for lb in loaded if lb.unavailable)
        if not why:  # the user's --backends asked for too few
            raise InputError(
                "compare needs two usable backends, one of which encodes (fewer than two were asked for)",
                key="--backends",
            )
        # the model's files made the backends unavailable: name the vocabulary file, not an option
        raise InputError(
            f"compare needs a usable backend that encodes ({why})",
            file=str(model.artifacts.root / model.vocab_artifact),
        )
    texts = [c.text for c in cases]
    sizes = [len(t.encode("utf-8")) for t in texts]
    if progress:
        progress.start(sum(sizes) * (2 * len(encoders) + len(usable) - len(encoders)))
    runs = [run_backend(b, texts, sizes, progress) for b in encoders]
    primary = runs[0]
    assert primary.ids is not None
    runs += [run_decoder(b, primary.ids, sizes, progress) for b in usable if not can_encode(b)]
    view = TokenView(model.files.flat[0])
    enc_runs = [r for r in runs if r.encodes]
    dec_runs = [r for r in runs if not r.encodes]
    pairs = [compare_encoders(a, b, cases, view, options.max_examples) for a, b in combinations(enc_runs, 2)]
    pairs += [compare_decoder(e, d, cases, primary, options.max_examples) for d in dec_runs for e in enc_runs]
    unknown = unknown_id_table(model, usable)
    races, note = _races(model, loaded, options)
    checked: list[GoldenResult] = []
    if golden is not None:
        first = len(cases) - len(golden.cases)
        checked = [
            check_golden(golden, r.name, r.ids[first:], options.max_examples) for r in enc_runs if r.ids is not None
        ]
    return Comparison(loaded, cases, sum(sizes), runs, pairs, unknown, races, note, golden, checked)


def _races(
    model: TokenizerModel, loaded: list[LoadedBackend], options: CompareOptions
) -> tuple[list[RaceResult], str | None]:
    if options.concurrency <= 0:
        return [], None
    from tokaudit.backends.transformers_backend import USE_FAST

    chosen = [lb for lb in loaded if lb.name in USE_FAST and lb.backend is not None]
    if not chosen:
        return [], "no transformers backend is loaded (is the transformers extra installed, and is it in --backends?)"
    return [
        race(lb.name, model.artifacts.root, options.concurrency, options.trust_remote_code, USE_FAST[lb.name])
        for lb in chosen
    ], None


# -- findings -------------------------------------------------------------------------------------


def compare_result(model: TokenizerModel, c: Comparison) -> CompareResult:
    by_name = {r.name: r for r in c.runs}
    backends = []
    for lb in c.loaded:
        run = by_name.get(lb.name)
        backends.append(
            BackendRow(lb, Throughput.of(run, c.corpus_bytes) if run else None, len(run.crashes) if run else None)
        )
    builtin = sum(1 for case in c.cases if case.source.startswith("builtin:"))
    return CompareResult(
        model.target,
        model.source,
        backends=tuple(backends),
        not_checked=tuple(
            f"backend {lb.name} ({', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed)"
            for lb in c.loaded
            if lb.backend is None and (missing := missing_libraries(lb.name))
        ),
        corpus=CorpusSummary(len(c.cases), c.corpus_bytes, builtin, len(c.cases) - builtin),
        pairs=tuple(c.pairs),
        unknown_ids=c.unknown,
        races=tuple(c.races),
        race_note=c.race_note,
        golden=c.golden,
        golden_results=tuple(c.golden_results),
    )


def compare_model(
    model: TokenizerModel, options: CompareOptions, progress: Progress | None = None
) -> tuple[CompareResult, list[Finding]]:
    c = run_comparison(model, options, progress)
    t = model.target
    findings: list[Finding] = []
    for pair in c.pairs:
        findings += pair_findings(pair, t)
    losses: dict[str, list[int]] = {}
    findings += own_roundtrip_findings(c.runs, c.cases, t, options.max_examples, triage_for(model), losses)
    findings = one_cause(findings, c.runs, c.cases, losses)
    findings += crash_findings(c.runs, c.cases, t, options.max_examples)
    findings += unknown_id_findings(c.unknown, t)
    findings += race_findings(c.races, t)
    findings += fallback_findings(model, c.loaded)
    findings += special_addition_findings(model, c.loaded)
    if c.golden is not None:
        findings += golden_findings(c.golden, c.golden_results, t)
    return compare_result(model, c), findings
