"""``fuzz``: seeded random id sequences, weighted toward the edges, decoded by every backend
in-process. Every exception (Rust panics included) is caught, classified and shrunk."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from tokaudit.backends.base import Backend
from tokaudit.backends.registry import LoadedBackend
from tokaudit.collector import collector_paused
from tokaudit.ids import IdRanges
from tokaudit.model.loaders import loader_views, loaders_seeing
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.oncall.codes import BACKEND_CRASH
from tokaudit.oncall.edges import edge_pools, sample_ranges
from tokaudit.oncall.records import BackendRun, Failure, Unavailable
from tokaudit.oncall.shrink import Shrinker, failure_class
from tokaudit.report.finding import Finding, Severity
from tokaudit.report.text import visible

if TYPE_CHECKING:
    from rich.console import Console

    from tokaudit.report.policy import PolicyCounts

#: Share of positions filled with an ordinary mapped id (the rest are edge ids).
ORDINARY_SHARE = 0.6
#: Decode calls between two progress updates.
CHUNK = 256


class Progress(Protocol):
    def start(self, total: int) -> None: ...

    def advance(self, label: str, amount: int) -> None: ...


@dataclass(frozen=True)
class FuzzOptions:
    iterations: int = 2000
    seed: int = 0
    max_length: int = 8


def sequences(model: TokenizerModel, options: FuzzOptions) -> tuple[list[list[int]], dict[str, list[int]]]:
    """The id sequences every backend decodes, and the edge pools they were drawn from."""
    rng = random.Random(options.seed)
    pools = edge_pools(model, options.seed)
    categories = list(pools)
    ordinary = sample_ranges(model.files.mapped, 4096, rng) or [0]
    out = []
    for _ in range(options.iterations):
        seq = []
        for _ in range(rng.randint(1, options.max_length)):
            if not categories or rng.random() < ORDINARY_SHARE:
                seq.append(rng.choice(ordinary))
            else:
                seq.append(rng.choice(pools[rng.choice(categories)]))
        out.append(seq)
    return out, pools


def decode_loop(
    decode: Callable[[list[int]], object], seqs: list[list[int]], progress: Callable[[int], None] | None = None
) -> tuple[list[int], float, list[type]]:
    """Decode every sequence; the indices of the sequences that raised, the seconds spent, and the
    exception type each raised.

    The loop is kept as bare as a hand-written one (no wrapper objects, no exception kept alive:
    thousands of live tracebacks make the garbage collector dominate; only the type is kept), so
    calls/s measure the backend.
    """
    failed: list[int] = []
    types: list[type] = []
    start = time.perf_counter()
    for first in range(0, len(seqs), CHUNK):
        for k in range(first, min(first + CHUNK, len(seqs))):
            try:
                decode(seqs[k])
            except (KeyboardInterrupt, SystemExit, GeneratorExit):
                raise
            except BaseException as exc:  # noqa: BLE001 - Rust panics are BaseExceptions
                failed.append(k)
                types.append(type(exc))
        if progress is not None:
            progress(min(CHUNK, len(seqs) - first))
    return failed, time.perf_counter() - start, types


def fuzz_backend(
    backend: Backend, seqs: list[list[int]], size: int, progress: Callable[[int], None] | None = None
) -> BackendRun:
    with collector_paused():
        return _fuzz_backend(backend, seqs, size, progress)


def _fuzz_backend(
    backend: Backend, seqs: list[list[int]], size: int, progress: Callable[[int], None] | None
) -> BackendRun:
    run = BackendRun(backend.name, calls=len(seqs))
    # the library's own function when the backend's decode(ids) only forwards to it (the same outcomes)
    decode = getattr(backend, "plain_decode", None) or backend.decode
    failed, run.seconds, types = decode_loop(decode, seqs, progress)
    start = time.perf_counter()
    shrinker = Shrinker(decode)
    classes = {t: "panic" if t.__name__ == "PanicException" else t.__name__ for t in set(types)}
    # the one-id memo, read inline: this loop runs once per failure (70% of Kimi's sequences)
    memo, singles, one_id_class = shrinker.classes, shrinker.singles, shrinker.one_id_class
    append = run.failures.append
    one_id: dict[
        int, list[int]
    ] = {}  # one reproducer list per id, shared by the failures it reproduces (never mutated)
    for k, raised in zip(failed, types):
        # Usually one id of the sequence fails alone with the class the sequence raised: the first such
        # id is the reproducer (what Shrinker.single_reproducer returns), from the memo of one-id outcomes
        # without decoding the sequence again.
        cls, seq = classes[raised], seqs[k]
        for i in seq:
            got = memo.get(i, False)
            if got is False:
                got = one_id_class(i)
            if got == cls:
                reproducer = one_id.get(i)
                if reproducer is None:
                    reproducer = one_id[i] = [i]
                append(Failure(cls, seq, reproducer, singles[i], 0 <= i < size))
                break
        else:
            _shrink_one(run, shrinker, seq, size)
    run.shrink_calls = shrinker.calls
    run.shrink_seconds = time.perf_counter() - start
    return run


def _shrink_one(run: BackendRun, shrinker: Shrinker, seq: list[int], size: int) -> None:
    """A failing sequence in which no id fails alone with the class the sequence raised."""
    outcome = shrinker.outcome(seq)
    if outcome.ok:  # not reproducible (a backend with state): keep the sequence as it is
        run.failures.append(Failure("not reproducible", seq, seq, outcome, all(0 <= i < size for i in seq)))
        return
    cls = failure_class(outcome) or "unknown"
    reproducer, small = shrinker.shrink(seq, cls)
    inside = all(0 <= i < size for i in reproducer)
    run.failures.append(Failure(cls, seq, reproducer, small if not small.ok else outcome, inside))


def _crash_findings(model: TokenizerModel, run: BackendRun) -> Iterator[Finding]:
    size = model.checked_size
    for inside in (True, False):
        chosen = [f for f in run.failures if f.in_declared_range is inside]
        if not chosen:
            continue
        first = chosen[0]
        single = IdRanges.from_ids({f.reproducer[0] for f in chosen if len(f.reproducer) == 1})
        classes = sorted({f.cls for f in chosen})
        example = f"decode({first.reproducer}) raises {first.outcome.describe()}"
        if inside:
            severity = BACKEND_CRASH.severity
            what = f"inside the declared range [0, {size})"
            why = "the model can produce these ids, so a server using this backend fails on them"
            seen = loaders_seeing(loader_views(model), single) if run.name == "strict" and single else {}
            if seen and "crash" not in seen.values():
                # strict emulates a tiktoken-rs gateway; no loader that reads these files decodes that way
                severity = Severity.WARNING
                why = (
                    f"strict emulates a tiktoken-rs gateway, but the loaders that leave these ids unmapped "
                    f"({', '.join(sorted(seen))}) decode through tokenizers, which drops them silently"
                )
            elif model.published_layout:
                severity = Severity.NOTE
                why = (
                    "these ids are holes of tiktoken's own published encoding, laid out as its registry lays it out "
                    "(tiktoken.get_encoding raises the same); only a model that declares a larger vocabulary produces "
                    "them"
                )
        else:
            severity = Severity.WARNING if any(f.cls == "panic" for f in chosen) else Severity.NOTE
            what = f"outside the declared range [0, {size})"
            why = "the model cannot produce these ids; validate ids before decoding" + (
                " (a Rust panic aborts a Rust server)" if severity is Severity.WARNING else ""
            )
        yield Finding(
            BACKEND_CRASH.code,
            BACKEND_CRASH.name,
            severity,
            f"{run.name} fails on {len(chosen)} of {run.calls} fuzzed sequences with ids {what} "
            f"({', '.join(classes)}); e.g. {visible(example)}. {why[0].upper()}{why[1:]}.",
            location=model.declared.source,
            ids=single if single else None,
            details={
                "backend": run.name,
                "in_declared_range": inside,
                "classes": classes,
                "first_reproducer": first.to_json(),
            },
            target=model.target,
        )


def fuzz(
    model: TokenizerModel, backends: list[LoadedBackend], options: FuzzOptions, progress: Progress | None = None
) -> tuple[FuzzResult, list[Finding]]:
    seqs, pools = sequences(model, options)
    available = [lb for lb in backends if lb.backend is not None]
    if progress is not None:
        progress.start(len(seqs) * len(available))
    rows: list[BackendRun | Unavailable] = []
    findings: list[Finding] = []
    for lb in backends:
        if lb.backend is None:
            rows.append(Unavailable(lb.name, lb.unavailable))
            continue
        tick = (lambda n, name=lb.name: progress.advance(f"fuzz {name}", n)) if progress is not None else None
        run = fuzz_backend(lb.backend, seqs, model.checked_size, tick)
        rows.append(run)
        findings.extend(_crash_findings(model, run))
    result = FuzzResult(
        model.target,
        model.source,
        options=options,
        declared_size=model.declared.size,
        checked_size=model.checked_size,
        edges={name: len(ids) for name, ids in pools.items()},
        edge_examples={name: tuple(ids[:8]) for name, ids in pools.items()},
        backends=tuple(rows),
    )
    return result, findings


@dataclass(frozen=True)
class FuzzResult:
    """One target's fuzz (a :class:`tokaudit.report.report.CommandResult`): the run's parameters, the edge pools
    and each backend's run."""

    target: str
    #: where the target's files came from (a :class:`tokaudit.source.resolve.Source`)
    source: Any
    options: FuzzOptions
    declared_size: int | None
    checked_size: int
    #: edge pool name -> how many ids it holds
    edges: Mapping[str, int]
    #: edge pool name -> its first 8 ids
    edge_examples: Mapping[str, tuple[int, ...]]
    backends: tuple[BackendRun | Unavailable, ...]
    not_checked: tuple[str, ...] = ()
    policy: PolicyCounts | None = None
    rules: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "fuzz": {
                "iterations": self.options.iterations,
                "seed": self.options.seed,
                "max_length": self.options.max_length,
                "declared_size": self.declared_size,
                "checked_size": self.checked_size,
                "edges": {
                    name: {"count": n, "examples": list(self.edge_examples[name])} for name, n in self.edges.items()
                },
            },
            "backends": [row.to_json() for row in self.backends],
        }

    def rich(self, console: Console) -> None:
        from tokaudit.oncall.view import fuzz_view

        o = self.options
        fuzz_view(console, (o.iterations, o.max_length, o.seed), self.checked_size, self.edges, self.backends)
