"""A command's report and the exit-code policy."""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from typing import Any

from tokaudit import __version__
from tokaudit.report.finding import Finding, Severity
from tokaudit.result_cache import installed_version  # its home is the bottom layer; imported from here too

#: ``--fail-on`` values: the lowest severity that fails the run ("never": nothing does).
FAIL_ON = ("error", "warning", "note", "never")

#: Commands that report rather than judge: no PASS/FAIL verdict unless they raised a finding.
REPORT_ONLY = frozenset({"explain", "decode", "encode"})


@dataclass
class TargetResult:
    """One target's command-specific data (scan: artifacts, vocab; replay: stream, ...)."""

    target: str
    data: dict[str, Any] = field(default_factory=dict)
    #: Where the target's files came from (``TokenizerModel.source``, a :class:`tokaudit.source.resolve.Source`):
    #: its path, Hub repo and resolved commit, the key baselines know it by. None when a core built no model.
    source: Any = None


@dataclass
class Report:
    """What one command reports: a result per target, and the findings."""

    command: str
    results: list[TargetResult]
    findings: list[Finding]
    #: Targets that could not be read (a scan of several goes on without them): target -> the error line.
    unreadable: dict[str, str] = field(default_factory=dict)

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
        """2 when a target could not be read, else 1 when a finding is at or above ``fail_on``, else 0."""
        if self.unreadable:
            return 2
        return 1 if self.failing(fail_on) else 0

    @property
    def judged(self) -> bool:
        """Whether the report ends in a verdict (a command that only reports does when it found something)."""
        return self.command not in REPORT_ONLY or bool(self.findings)

    def not_checked(self) -> list[str]:
        """What the command could not check, over every target (an engine or backend that is not installed or
        cannot load the model): each result's ``not_checked``, in order, once."""
        return list(dict.fromkeys(item for r in self.results for item in r.data.get("not_checked") or ()))

    def suppressed(self) -> dict[str, int]:
        """Findings the policy dropped, over every target: ``baselined`` (in ``--baseline``) and
        ``ignored`` (a ``[tool.tokaudit]`` per-target ignore)."""
        out = {"baselined": 0, "ignored": 0}
        for r in self.results:
            policy = r.data.get("policy") or {}
            out["baselined"] += policy.get("baselined", 0)
            out["ignored"] += policy.get("suppressed", 0)
        return out


#: Libraries whose behaviour a finding can depend on (tokenizers, tiktoken, sentencepiece: ids; jinja2 and
#: minijinja: TA8xx renders), named in every report: their version or "not installed".
REPORT_LIBRARIES = ("tokenizers", "tiktoken", "sentencepiece", "jinja2", "minijinja")
#: Optional backends, named only when installed (dist-info names: ``llama_cpp_python``).
OPTIONAL_REPORT_LIBRARIES = ("transformers", "fastokens", "llama_cpp_python")


def versions() -> dict[str, str]:
    """Versions of Python and the libraries that produced a report."""
    out = {"python": platform.python_version()}
    for dist in REPORT_LIBRARIES:
        out[dist] = installed_version(dist) or "not installed"
    for dist in OPTIONAL_REPORT_LIBRARIES:
        version = installed_version(dist)
        if version is not None:
            out[dist.replace("_", "-")] = version
    return out


def tool_version() -> str:
    return __version__
