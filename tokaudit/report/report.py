"""A command's report and the exit-code policy."""

from __future__ import annotations

import platform
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from tokaudit import __version__
from tokaudit.report.finding import Finding, Severity
from tokaudit.report.policy import PolicyCounts
from tokaudit.result_cache import installed_version  # its home is the bottom layer; imported from here too

#: ``--fail-on`` values: the lowest severity that fails the run ("never": nothing does).
FAIL_ON = ("error", "warning", "note", "never")

if TYPE_CHECKING:
    from rich.console import Console


class CommandResult(Protocol):
    """One target's result of a command, as every renderer reads it. Each command defines its own (frozen
    dataclasses beside the command: ``tokaudit/scan/result.py``'s ``ScanResult``, ...); the renderers of
    ``report/`` read only what this protocol names, never a command's fields."""

    @property
    def target(self) -> str: ...

    #: Where the target's files came from (``TokenizerModel.source``, a :class:`tokaudit.source.resolve.Source`):
    #: its path, Hub repo and resolved commit, the key baselines know it by. None when a core built no model.
    @property
    def source(self) -> Any: ...

    #: What the command could not check (an engine or backend that is not installed or cannot load the model).
    @property
    def not_checked(self) -> Sequence[str]: ...

    #: What the policy dropped for this target and the files it read; None when no policy ran.
    @property
    def policy(self) -> PolicyCounts | None: ...

    #: ``(code, name)`` of each rule the command ran (JUnit's test cases), empty when it runs no rules.
    @property
    def rules(self) -> Sequence[tuple[str, str]]: ...

    def to_json(self) -> dict[str, Any]:
        """The target's keys of ``--format json`` (``report.schema.json``), in their order."""
        ...

    def rich(self, console: Console) -> None:
        """The target's section of the rich report (layout only: every value comes from the result)."""
        ...


@dataclass
class Report:
    """What one command reports: a result per target, and the findings."""

    command: str
    results: Sequence[CommandResult]
    findings: list[Finding]
    #: Targets that could not be read (a scan of several goes on without them): target -> the error line.
    unreadable: dict[str, str] = field(default_factory=dict)
    #: A command that reports rather than judges (explain, decode, encode): no PASS/FAIL verdict unless it raised
    #: a finding. Said by the command that builds the report.
    reports_only: bool = False

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
        return not self.reports_only or bool(self.findings)

    def not_checked(self) -> list[str]:
        """What the command could not check, over every target (an engine or backend that is not installed or
        cannot load the model): each result's ``not_checked``, in order, once."""
        return list(dict.fromkeys(item for r in self.results for item in r.not_checked))

    def suppressed(self) -> dict[str, int]:
        """Findings the policy dropped, over every target: ``baselined`` (in ``--baseline``) and
        ``ignored`` (a ``[tool.tokaudit]`` per-target ignore)."""
        out = {"baselined": 0, "ignored": 0}
        for r in self.results:
            if r.policy is not None:
                out["baselined"] += r.policy.baselined
                out["ignored"] += r.policy.suppressed
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
