"""What ``scan`` reports of one target: a frozen record whose ``to_json()`` writes the target's keys of
``--format json`` (``report.schema.json``), and whose ``rich()`` draws its section (``scan/view.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tokaudit.model.loaders import LoaderView
from tokaudit.report.policy import PolicyCounts
from tokaudit.scan.records import ArtifactRow, GgufSummary, VocabSummary

if TYPE_CHECKING:
    from rich.console import Console


@dataclass(frozen=True)
class ScanResult:
    """One target's scan (a :class:`tokaudit.report.report.CommandResult`)."""

    target: str
    #: where the target's files came from (a :class:`tokaudit.source.resolve.Source`)
    source: Any
    artifacts: tuple[ArtifactRow, ...]
    vocab: VocabSummary
    loaders: tuple[LoaderView, ...]
    #: ``(code, name)`` of each rule run
    rules: tuple[tuple[str, str], ...]
    gguf: GgufSummary | None = None
    #: what the scan could not check for lack of an optional library
    not_checked: tuple[str, ...] = ()
    #: set by the policy (``scan/policy.py``) once the findings are filtered
    policy: PolicyCounts | None = field(default=None)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "artifacts": [a.to_json() for a in self.artifacts],
            "vocab": self.vocab.to_json(),
            "loaders": [v.to_json() for v in self.loaders],
            "rules": [{"code": code, "name": name} for code, name in self.rules],
        }
        if self.gguf is not None:
            out["gguf"] = self.gguf.to_json()
        if self.not_checked:
            out["not_checked"] = list(self.not_checked)
        if self.policy is not None:
            out["policy"] = self.policy.to_json()
        return out

    def rich(self, console: Console) -> None:
        from tokaudit.scan.view import scan_view

        scan_view(console, self.vocab, self.artifacts, self.loaders, self.gguf)
