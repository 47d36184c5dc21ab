"""The parts of a replay's result that its view reads: the stream, the tokenizer, each detokenizer's outcome, the
tool calls, the re-chunking check, the stops and the timeline's summary. Frozen records whose ``to_json()`` writes
their keys of ``--format json``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tokaudit.stream.detokenizers import Run, StepError
from tokaudit.stream.stops import StopOutcome


@dataclass(frozen=True)
class StreamSummary:
    """The stream replayed: its format, tokens, steps, the prompt's tokens and the special-token setting."""

    format: str
    tokens: int
    steps: int
    prompt_tokens: int
    skip_special_tokens: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "tokens": self.tokens,
            "steps": self.steps,
            "prompt_tokens": self.prompt_tokens,
            "skip_special_tokens": self.skip_special_tokens,
        }


@dataclass(frozen=True)
class TokenizerSummary:
    """The tokenizer replay decoded with: where it came from, its build time (4 places), and the subset it holds
    when it was rebuilt from ranks with only the stream's ids."""

    origin: str
    load_seconds: float
    subset: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "load_seconds": self.load_seconds,
            **({"subset": self.subset} if self.subset else {}),
        }


@dataclass(frozen=True)
class DetokenizerOutcome:
    """What one detokenizer emitted in all (``applicable`` False: it was not run, and ``reason`` says why)."""

    name: str
    text: str | None
    held_bytes: int
    errors: tuple[StepError, ...]
    flush: str
    applicable: bool = True
    reason: str | None = None

    @classmethod
    def of(cls, run: Run) -> DetokenizerOutcome:
        return cls(run.name, run.text, run.held_bytes, tuple(run.errors), run.flush)

    @classmethod
    def not_applicable(cls, name: str, reason: str) -> DetokenizerOutcome:
        return cls(name, None, 0, (), "", applicable=False, reason=reason)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if not self.applicable:
            out.update(applicable=False, reason=self.reason)
        out.update(
            text=self.text, held_bytes=self.held_bytes, errors=[e.to_json() for e in self.errors], flush=self.flush
        )
        return out


@dataclass(frozen=True)
class ToolCallSummary:
    """A tool call found in the text: its format, whether it was closed and its arguments parse."""

    format: str
    closed: bool
    error: str | None

    @property
    def valid(self) -> bool:
        return self.error is None

    def to_json(self) -> dict[str, Any]:
        return {"format": self.format, "closed": self.closed, "valid": self.valid, "error": self.error}


@dataclass(frozen=True)
class ChunkInvariance:
    """The re-chunking check: whether it ran, the step sizes, the variations found (JSON objects, as the findings
    give them) and how much of the stream it covered (``mode`` and its figures)."""

    checked: bool
    sizes: tuple[int, ...]
    varied: tuple[dict[str, Any], ...]
    coverage: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"checked": self.checked, "sizes": list(self.sizes), "varied": list(self.varied), **self.coverage}


@dataclass(frozen=True)
class Stops:
    """``--stop`` / ``--stop-id``: where the full text stops, and where each detokenizer's stream does."""

    strings: tuple[str, ...]
    ids: tuple[int, ...]
    expected: StopOutcome
    detokenizers: Mapping[str, StopOutcome]

    def to_json(self) -> dict[str, Any]:
        return {
            "strings": list(self.strings),
            "ids": list(self.ids),
            "expected": self.expected.to_json(),
            "detokenizers": {k: v.to_json() for k, v in self.detokenizers.items()},
        }


@dataclass(frozen=True)
class StepSummary:
    """One detokenizer over the whole stream: characters emitted, steps that emitted nothing, steps that ended
    holding bytes, the most bytes held."""

    characters: int
    empty_steps: int
    holding_steps: int
    max_held: int

    def to_json(self) -> dict[str, int]:
        return {
            "characters": self.characters,
            "empty_steps": self.empty_steps,
            "holding_steps": self.holding_steps,
            "max_held": self.max_held,
        }


@dataclass(frozen=True)
class TimelineSteps:
    """Which steps the timeline shows ("all", "around findings" or a ``--steps`` range), how many rows of how
    many steps, and each detokenizer's summary."""

    shown: str
    rows: int
    steps: int
    summary: Mapping[str, StepSummary]

    def to_json(self) -> dict[str, Any]:
        return {
            "shown": self.shown,
            "rows": self.rows,
            "steps": self.steps,
            "summary": {name: s.to_json() for name, s in self.summary.items()},
        }
