"""What ``compare`` reports of one target: frozen records (``compare/rows.py``, the pairs, the unknown-id table,
the races) whose ``to_json()`` writes the target's keys of ``--format json`` (``report.schema.json``); ``rich()``
draws its section (``compare/view.py``, given the parts: it imports no result)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tokaudit.compare.golden import Golden, GoldenResult
from tokaudit.compare.parity import PairResult
from tokaudit.compare.race import RaceResult
from tokaudit.compare.rows import BackendRow, CorpusSummary
from tokaudit.compare.unknown_ids import UnknownIdTable

if TYPE_CHECKING:
    from rich.console import Console

    from tokaudit.report.policy import PolicyCounts


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

        compare_view(console, self.corpus, self.backends, self.pairs, self.unknown_ids, self.race_note, self.races)
