"""What ``compare`` reports of one target: frozen records whose ``to_json()`` writes the target's keys of
``--format json`` (``report.schema.json``) and whose ``rich()`` draws its section (``compare/view.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tokaudit.backends.registry import LoadedBackend
from tokaudit.compare.golden import Golden, GoldenResult
from tokaudit.compare.parity import PairResult
from tokaudit.compare.race import RaceResult
from tokaudit.compare.runs import BackendRun
from tokaudit.compare.unknown_ids import UnknownIdTable

if TYPE_CHECKING:
    from rich.console import Console

    from tokaudit.report.policy import PolicyCounts


@dataclass(frozen=True)
class Throughput:
    """MB/s and tokens/s of one backend's run (encode and decode); the encode figures are None for a
    decode-only backend, a rate None when its time is 0."""

    encode_seconds: float | None
    decode_seconds: float
    tokens: int | None
    encode_mb_per_s: float | None
    encode_tokens_per_s: float | None
    decode_mb_per_s: float | None

    @classmethod
    def of(cls, run: BackendRun, corpus_bytes: int) -> Throughput:
        def rate(amount: float, seconds: float) -> float | None:
            return round(amount / seconds, 1) if seconds > 0 else None

        return cls(
            encode_seconds=round(run.encode_seconds, 4) if run.encodes else None,
            decode_seconds=round(run.decode_seconds, 4),
            tokens=run.tokens if run.encodes else None,
            encode_mb_per_s=rate(corpus_bytes / 1e6, run.encode_seconds) if run.encodes else None,
            encode_tokens_per_s=rate(run.tokens, run.encode_seconds) if run.encodes else None,
            decode_mb_per_s=rate(corpus_bytes / 1e6, run.decode_seconds),
        )

    def to_json(self) -> dict[str, float | int | None]:
        return {
            "encode_seconds": self.encode_seconds,
            "decode_seconds": self.decode_seconds,
            "tokens": self.tokens,
            "encode_mb_per_s": self.encode_mb_per_s,
            "encode_tokens_per_s": self.encode_tokens_per_s,
            "decode_mb_per_s": self.decode_mb_per_s,
        }


@dataclass(frozen=True)
class BackendRow:
    """One backend asked for: how it loaded (:class:`LoadedBackend`), its run's throughput and crashes (None
    when it did not run)."""

    loaded: LoadedBackend
    throughput: Throughput | None
    crashes: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            **self.loaded.to_json(),
            "throughput": None if self.throughput is None else self.throughput.to_json(),
            "crashes": self.crashes,
        }


@dataclass(frozen=True)
class CorpusSummary:
    cases: int
    bytes: int
    builtin_cases: int
    user_cases: int

    def to_json(self) -> dict[str, int]:
        return {
            "cases": self.cases,
            "bytes": self.bytes,
            "builtin_cases": self.builtin_cases,
            "user_cases": self.user_cases,
        }


@dataclass(frozen=True)
class CompareResult:
    """One target's compare (a :class:`tokaudit.report.report.CommandResult`)."""

    target: str
    #: where the target's files came from (a :class:`tokaudit.source.resolve.Source`)
    source: Any
    backends: tuple[BackendRow, ...]
    #: the backends that could not load for lack of a library
    not_checked: tuple[str, ...]
    corpus: CorpusSummary
    pairs: tuple[PairResult, ...]
    unknown_ids: UnknownIdTable
    races: tuple[RaceResult, ...]
    #: why no race ran although ``--concurrency`` asked for one
    race_note: str | None
    golden: Golden | None
    golden_results: tuple[GoldenResult, ...] = ()
    policy: PolicyCounts | None = None
    rules: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "backends": [b.to_json() for b in self.backends],
            "not_checked": list(self.not_checked),
            "corpus": self.corpus.to_json(),
            "pairs": [p.to_json() for p in self.pairs],
            "unknown_ids": self.unknown_ids.to_json(),
            "race": {"results": [r.to_json() for r in self.races], "note": self.race_note},
            "golden": None
            if self.golden is None
            else {**self.golden.to_json(), "backends": [r.to_json() for r in self.golden_results]},
        }

    def rich(self, console: Console) -> None:
        from tokaudit.compare.view import compare_view

        compare_view(console, self)
