"""The records the on-call views read (``oncall/view.py``): what explain knows of one id, a backend call that
raised, and a fuzz run per backend. Each command's result (``explain.py``, ``codec.py``, ``fuzz.py``) holds them;
the view imports these and no result, so no result and its view import each other."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tokaudit.backends.base import Outcome
from tokaudit.records import Provenance

#: Distinct reproducers kept per backend.
MAX_REPRODUCERS = 12


@dataclass(frozen=True)
class IdSource:
    """Where one loader profile finds the id: the file and rule of the table that maps it, and its token."""

    profile: str
    artifact: str
    #: the file and its line or JSON key
    where: Provenance
    rule: str
    special: bool
    text: str
    bytes_hex: str
    partial_utf8: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "artifact": self.artifact,
            **self.where.to_json(),
            "rule": self.rule,
            "special": self.special,
            "text": self.text,
            "bytes_hex": self.bytes_hex,
            "partial_utf8": self.partial_utf8,
        }


@dataclass(frozen=True)
class BackendAnswer:
    """What one backend's ``decode([id])`` returns: text, dropped (empty), an exception, a panic; or why the
    backend is unavailable (``available`` False: only ``reason`` is set)."""

    available: bool
    reason: str | None = None
    #: "text", "dropped", "error" or "panic"
    kind: str = ""
    text: str | None = None
    exception: str | None = None
    message: str | None = None
    panic: bool = False

    def to_json(self) -> dict[str, Any]:
        if not self.available:
            return {"available": False, "reason": self.reason}
        return {
            "available": True,
            "kind": self.kind,
            "text": self.text,
            "dropped": self.kind == "dropped",
            "exception": self.exception,
            "message": self.message,
            "panic": self.panic,
        }


@dataclass(frozen=True)
class ExplainedId:
    """Everything known about one id: the query that named it, the declared range, which profile maps it from
    which file, its bytes, and what each backend decodes it to."""

    query: str
    id: int
    in_declared_range: bool
    #: profile -> whether it maps the id
    mapped: Mapping[str, bool]
    sources: tuple[IdSource, ...]
    bytes_hex: str | None
    text: str | None
    special: bool
    partial_utf8: bool
    #: backend name -> its answer
    backends: Mapping[str, BackendAnswer]

    def to_json(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "id": self.id,
            "in_declared_range": self.in_declared_range,
            "mapped": dict(self.mapped),
            "sources": [s.to_json() for s in self.sources],
            "bytes_hex": self.bytes_hex,
            "text": self.text,
            "special": self.special,
            "partial_utf8": self.partial_utf8,
            "backends": {name: a.to_json() for name, a in self.backends.items()},
        }


@dataclass(frozen=True)
class CodecError:
    """A backend's call that raised: the exception's type and message, and whether it was a Rust panic."""

    exception: str | None
    message: str | None
    panic: bool

    @classmethod
    def of(cls, outcome: Outcome) -> CodecError | None:
        return None if outcome.ok else cls(outcome.error_type, outcome.error, outcome.panic)

    def to_json(self) -> dict[str, Any]:
        return {"exception": self.exception, "message": self.message, "panic": self.panic}


@dataclass(slots=True)  # tens of thousands per run
class Failure:
    cls: str
    sequence: list[int]
    reproducer: list[int]
    outcome: Outcome
    in_declared_range: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "class": self.cls,
            "ids": self.reproducer,
            "sequence": self.sequence,
            "exception": self.outcome.error_type,
            "message": self.outcome.error,
            "panic": self.outcome.panic,
            "in_declared_range": self.in_declared_range,
        }


@dataclass(frozen=True)
class ClassCount:
    """One failure class of a backend's run."""

    count: int
    in_declared_range: int
    first: Failure

    def to_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "in_declared_range": self.in_declared_range,
            "first_reproducer": self.first.to_json(),
        }


@dataclass(frozen=True)
class Unavailable:
    """A backend asked for that could not load, and why."""

    name: str
    reason: str | None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "available": False, "reason": self.reason}


@dataclass
class BackendRun:
    """One backend's fuzz run: filled while it runs, then read as it stands."""

    name: str
    calls: int = 0
    seconds: float = 0.0
    failures: list[Failure] = field(default_factory=list)
    shrink_calls: int = 0
    shrink_seconds: float = 0.0

    @property
    def calls_per_second(self) -> float | None:
        return self.calls / self.seconds if self.seconds > 0 else None

    @property
    def rate(self) -> float:
        """Failures per call, to 6 places (0.0 when nothing ran)."""
        return round(len(self.failures) / self.calls, 6) if self.calls else 0.0

    @property
    def first(self) -> Failure | None:
        return self.failures[0] if self.failures else None

    @property
    def first_in_range(self) -> Failure | None:
        """The first failure whose reproducer lies inside the declared range."""
        return next((f for f in self.failures if f.in_declared_range), None)

    def by_class(self) -> dict[str, ClassCount]:
        """Failures per class, in order of discovery: how many, how many inside the declared range, the first."""
        failures: dict[str, list[Failure]] = {}
        for f in self.failures:
            failures.setdefault(f.cls, []).append(f)
        return {
            cls: ClassCount(len(found), sum(f.in_declared_range for f in found), found[0])
            for cls, found in failures.items()
        }

    def reproducers(self) -> list[dict[str, Any]]:
        """Distinct (class, reproducer) pairs in order of discovery, with how often each was hit."""
        seen: dict[tuple[str, tuple[int, ...]], dict[str, Any]] = {}
        for f in self.failures:
            key = (f.cls, tuple(f.reproducer))
            if key not in seen:
                if len(seen) >= MAX_REPRODUCERS:
                    continue
                seen[key] = {**f.to_json(), "hits": 0}
                del seen[key]["sequence"]
            seen[key]["hits"] += 1
        return list(seen.values())

    def to_json(self) -> dict[str, Any]:
        cps = self.calls_per_second
        return {
            "name": self.name,
            "available": True,
            "calls": self.calls,
            "failures": len(self.failures),
            "rate": self.rate,
            "by_class": {cls: c.to_json() for cls, c in self.by_class().items()},
            "first_reproducer": None if self.first is None else self.first.to_json(),
            "first_in_range_reproducer": None if self.first_in_range is None else self.first_in_range.to_json(),
            "reproducers": self.reproducers(),
            "seconds": round(self.seconds, 6),
            "calls_per_second": None if cps is None else round(cps, 1),
            "shrink_calls": self.shrink_calls,
            "shrink_seconds": round(self.shrink_seconds, 6),
        }
