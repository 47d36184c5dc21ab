"""Rule registration: ``@rule`` records a check in RULES (the list of rule modules is :mod:`tokaudit.rules`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Finding, Severity

Check = Callable[[TokenizerModel], Iterable[Finding]]


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: Severity
    summary: str
    check: Check
    #: Only run with ``--deep`` (slow).
    deep: bool = False

    def finding(self, message: str, **kwargs: object) -> Finding:
        """A finding of this rule with its code, name and default severity."""
        kwargs.setdefault("severity", self.severity)
        return Finding(self.code, self.name, message=message, **kwargs)  # type: ignore[arg-type]


RULES: dict[str, Rule] = {}


def rule(code: str, name: str, severity: Severity, summary: str, *, deep: bool = False) -> Callable[[Check], Rule]:
    def register(check: Check) -> Rule:
        if code in RULES or any(r.name == name for r in RULES.values()):
            raise ValueError(f"rule {code} {name} registered twice")
        RULES[code] = Rule(code, name, severity, summary, check, deep)
        return RULES[code]

    return register


def run_rules(model: TokenizerModel, rules: Iterable[Rule]) -> Iterator[Finding]:
    for r in rules:
        for finding in r.check(model):
            yield finding.with_target(model.target)
