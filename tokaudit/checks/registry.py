"""Rule registration and selection."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass

from tokaudit.collector import collector_paused
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


def all_rules() -> list[Rule]:
    """Every registered rule, in code order (importing the rule modules registers them)."""
    first = "tokaudit.checks.pattern_rules" not in sys.modules
    # the first call imports the rule modules: no collection while they load (see tokaudit.collector)
    with collector_paused(freeze=True) if first else nullcontext():
        from tokaudit.checks import artifact_rules, empty_tokens, gguf_rules, id_rules, id_space, special_tokens, token_classes  # noqa: F401
        from tokaudit.template import rules as _template_rules  # noqa: F401 - the TA8xx family
        from tokaudit.checks import pattern_rules  # noqa: F401 - TA305
    return sorted(RULES.values(), key=lambda r: r.code)


def run_rules(model: TokenizerModel, rules: Iterable[Rule]) -> Iterator[Finding]:
    for r in rules:
        for finding in r.check(model):
            yield finding.with_target(model.target)
