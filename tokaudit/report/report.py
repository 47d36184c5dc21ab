"""A command's report and the exit-code policy."""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from typing import Any

from tokaudit import __version__
from tokaudit.report.finding import Finding, Severity

#: ``--fail-on`` values: the lowest severity that fails the run ("never": nothing does).
FAIL_ON = ("error", "warning", "note", "never")


@dataclass
class TargetResult:
    """One target's command-specific data (scan: artifacts, vocab; replay: stream, ...)."""

    target: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Report:
    command: str
    results: list[TargetResult]
    findings: list[Finding]

    @property
    def targets(self) -> list[str]:
        return [r.target for r in self.results]

    def summary(self) -> dict[str, int]:
        counts = {s.value: 0 for s in Severity}
        for f in self.findings:
            counts[f.severity.value] += 1
        return counts

    def failing(self, fail_on: str) -> list[Finding]:
        if fail_on == "never":
            return []
        threshold = Severity(fail_on).rank
        return [f for f in self.findings if f.severity.rank >= threshold]

    def exit_code(self, fail_on: str) -> int:
        return 1 if self.failing(fail_on) else 0


def versions() -> dict[str, str]:
    """Versions of Python and the tokenizer libraries that produced a report."""
    from importlib import metadata  # lazy: ~15 ms of start-up that most commands reach only here

    out = {"python": platform.python_version()}
    for dist in ("tokenizers", "tiktoken", "transformers"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            if dist != "transformers":
                out[dist] = "not installed"
    return out


def tool_version() -> str:
    return __version__
