"""What ``replay`` reports of one target: frozen records (``stream/summary.py``) whose ``to_json()`` writes the
target's keys of ``--format json`` (``report.schema.json``); ``rich()`` draws its section (``stream/view.py``, given
the parts: it imports no result).

The timeline's rows stay the JSON objects :class:`~tokaudit.stream.timeline.Timeline` computes (lazily, for
``--steps all`` on a long stream), and so do the parser run's and llama.cpp server's reports, which no view reads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tokaudit.report.rows import LazyRows
from tokaudit.stream.summary import (
    ChunkInvariance,
    DetokenizerOutcome,
    Stops,
    StreamSummary,
    TimelineSteps,
    TokenizerSummary,
    ToolCallSummary,
)

if TYPE_CHECKING:
    from rich.console import Console

    from tokaudit.report.policy import PolicyCounts


@dataclass(frozen=True)
class ReplayResult:
    """One target's replay (a :class:`tokaudit.report.report.CommandResult`)."""

    target: str
    #: where the target's files came from (a :class:`tokaudit.source.resolve.Source`)
    source: Any
    stream: StreamSummary
    tokenizer: TokenizerSummary
    #: the full decode of the stream (the reference)
    text: str
    detokenizers: tuple[DetokenizerOutcome, ...]
    tool_calls: tuple[ToolCallSummary, ...]
    chunk_invariance: ChunkInvariance
    timeline_steps: TimelineSteps
    #: the rows shown: a list, or the lazy :class:`~tokaudit.stream.timeline.Timeline` with ``--steps``
    timeline: list[dict[str, Any]] | LazyRows
    stops: Stops | None = None
    #: ``--tool-parser`` / ``--reasoning-parser``: the stack's parsers on the stream (``stream/parsing.py``)
    parser: dict[str, Any] | None = None
    #: the llama.cpp-server detokenizer's GGUF and settings (``stream/llamacpp_server.py``)
    llama_cpp_server: dict[str, Any] | None = None
    not_checked: tuple[str, ...] = ()
    policy: PolicyCounts | None = None
    rules: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "stream": self.stream.to_json(),
            "tokenizer": self.tokenizer.to_json(),
            "text": self.text,
            "detokenizers": [d.to_json() for d in self.detokenizers],
            "tool_calls": [c.to_json() for c in self.tool_calls],
            "chunk_invariance": self.chunk_invariance.to_json(),
        }
        if self.stops is not None:
            out["stops"] = self.stops.to_json()
        if self.parser is not None:
            out["parser"] = self.parser
        if self.llama_cpp_server is not None:
            out["llama_cpp_server"] = self.llama_cpp_server
        out["timeline_steps"] = self.timeline_steps.to_json()
        out["timeline"] = self.timeline
        return out

    def rich(self, console: Console) -> None:
        from tokaudit.stream.view import replay_view

        replay_view(
            console,
            self.stream,
            self.tokenizer,
            self.detokenizers,
            self.timeline_steps,
            self.timeline,
            self.tool_calls,
            self.stops,
            self.text,
        )
