"""The rows of a compare result that its view reads: each backend asked for (how it loaded, its run's throughput
and crashes) and the corpus's size."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tokaudit.backends.registry import LoadedBackend
from tokaudit.compare.runs import BackendRun


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
