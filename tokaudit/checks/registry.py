"""Rule registration: ``@rule`` records a check in RULES (the list of rule modules is :mod:`tokaudit.rules`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Code, Finding, catalog_code

Check = Callable[[TokenizerModel], Iterable[Finding]]


@dataclass(frozen=True)
class Rule(Code):
    """A scan rule: its catalog entry and the check that finds it."""

    check: Check
    #: Only run with ``--deep`` (slow).
    deep: bool = False


RULES: dict[str, Rule] = {}


def rule(code: str, *, deep: bool = False) -> Callable[[Check], Rule]:
    """Register the decorated check as the rule ``code``: its name, default severity and summary are the
    catalog's (:mod:`tokaudit.catalog`), written nowhere else."""
    info = catalog_code(code)

    def register(check: Check) -> Rule:
        if code in RULES:
            raise ValueError(f"rule {code} {info.name} registered twice")
        RULES[code] = Rule(info.code, info.name, info.severity, info.summary, check, deep)
        return RULES[code]

    return register


def run_rules(model: TokenizerModel, rules: Iterable[Rule]) -> Iterator[Finding]:
    for r in rules:
        for finding in r.check(model):
            yield finding.with_target(model.target)
