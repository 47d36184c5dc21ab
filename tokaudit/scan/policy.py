"""What a scan checks and what it counts: the serving stacks and parsers of the deploy, the rules selected
(``--select``/``--ignore``, ``--deep``, ``[tool.tokaudit]``), the baseline, and the policy applied to the findings
of each target (suppressions, baseline, TA001) once they are in."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tokaudit.checks.registry import Rule
from tokaudit.config import Config, load_config
from tokaudit.errors import InputError
from tokaudit.report.baseline import Baseline, load_baseline
from tokaudit.report.finding import Finding
from tokaudit.report.policy import META_CODES, PolicyCounts, Selection, apply_policy, split_selectors, validate
from tokaudit.report.report import Report
from tokaudit.rules import all_rules
from tokaudit.scan.result import ScanResult


@dataclass(frozen=True)
class ScanPolicy:
    """The rules a run checks, and how it filters their findings."""

    config: Config
    selection: Selection
    rules: tuple[Rule, ...]
    baseline_path: Path | None
    baseline: Baseline | None

    def report(self, results: Sequence[ScanResult], findings: list[Finding]) -> tuple[Report, str | None]:
        """The scan's report of these targets (each result with its ``policy`` counts), and what is wrong with the
        baseline (a warning line; None when nothing is)."""
        outcome = apply_policy(
            findings,
            [r.target for r in results],
            selection=self.selection,
            config=self.config,
            baseline=self.baseline,
            rules_run=[(r.code, r.name) for r in self.rules],
            target_keys={r.target: r.source.key for r in results if r.source is not None},
        )
        counted = [
            replace(
                result,
                policy=PolicyCounts(
                    **outcome.counts.get(result.target, {"suppressed": 0, "baselined": 0}),
                    config=str(self.config.path) if self.config.path else None,
                    baseline=str(self.baseline_path) if self.baseline_path else None,
                ),
            )
            for result in results
        ]
        return Report("scan", counted, outcome.findings), outcome.stale_baseline


def scan_policy(
    select: Sequence[str] | None,
    ignore: Sequence[str] | None,
    baseline: Path | None,
    stack: str | None,
    parsers: str | None,
    deep: bool,
) -> ScanPolicy:
    """The policy of a run from its options and ``[tool.tokaudit]``; also sets the stacks the template rules check
    and the deploy's parsers the round-trip rules read (every scan sets both). A bad value is an InputError."""
    from tokaudit.roundtrip.choice import ParserChoice, check_choice, parsers_mode, resolve_parsers
    from tokaudit.roundtrip.rules import configure
    from tokaudit.template.rules import SELECTED_STACKS
    from tokaudit.template.stacks import STACK_NAMES, parse_stacks

    config = load_config()
    where = "--stack" if stack else "tool.tokaudit.stacks"
    stacks = parse_stacks(stack) if stack else parse_stacks(config.stacks or None, where, config.name)
    SELECTED_STACKS.set(stacks)  # the template rules check only these stacks
    choice = ParserChoice(
        stacks if (stack or config.stacks) else None,
        config.tool_parser,
        config.reasoning_parser,
        parsers=parsers_mode(parsers, config.parsers),
    )
    check_choice(choice, where, STACK_NAMES)
    configure(resolve_parsers(choice))  # the parser round trip's rules read the deploy's stacks and parsers
    known = [(r.code, r.name) for r in all_rules()] + [(meta.code, meta.name) for meta in META_CODES]
    cli_select, cli_ignore = split_selectors(select), split_selectors(ignore)
    validate(cli_select, known, "--select")
    validate(cli_ignore, known, "--ignore")
    validate(config.select, known, "tool.tokaudit.select", config.name)
    validate(config.ignore, known, "tool.tokaudit.ignore", config.name)
    for entry in config.per_target_ignores:
        validate(entry.rules, known, f"{entry.key}.rules", config.name)
    selection = Selection(cli_select or config.select, config.ignore + cli_ignore)
    rules = tuple(
        r
        for r in all_rules()
        if selection.chosen(r.code, r.name) and (deep or not r.deep or selection.named_exactly(r.code, r.name))
    )
    if not rules:
        raise InputError("no rule is selected", key="--select/--ignore")
    baseline_path = baseline or config.baseline
    loaded = load_baseline(baseline_path, require_reason=config.require_reason) if baseline_path else None
    return ScanPolicy(config, selection, rules, baseline_path, loaded)
