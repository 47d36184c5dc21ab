"""``tokaudit scan TARGET...``

No ``from __future__ import annotations`` here: typer reads the command's annotations on every run, and as
objects they need no evaluating (as text, ~3 ms of every scan).
"""

from typing import Annotated

import typer

from tokaudit.cli.common import (
    AlsoOpt,
    BaselineOpt,
    Color,
    ColorOpt,
    DebugOpt,
    FailOn,
    FailOnOpt,
    FormatOpt,
    IgnoreOpt,
    JobsOpt,
    OutputFormat,
    OutputOpt,
    ParsersOpt,
    QuietOpt,
    RevisionOpt,
    SelectOpt,
    StackOpt,
    emit,
    emit_lines,
    err,
    handle_errors,
    parse_also,
    to_stdout,
)
from tokaudit.cli.progress import progress_bar


def scan(
    targets: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="TARGET...",
            help="Model directory, tokenizer file, or Hugging Face repo id (org/name).",
            show_default=False,
        ),
    ] = None,
    targets_from: Annotated[
        str | None,
        typer.Option(
            "--targets-from",
            metavar="FILE",
            help="Also scan the targets listed in FILE, one per line (- for stdin; "
            "blank lines and # comments skipped). With --format jsonl a target that cannot be read is a line "
            "with its error, and the scan goes on.",
        ),
    ] = None,
    deep: Annotated[bool, typer.Option("--deep", help="Also run the slow rules (TA402 unreachable-token).")] = False,
    pat_str: Annotated[
        str | None,
        typer.Option(
            "--pat-str", help="Pre-tokenizer regex for the encoders --deep builds, when the model declares none."
        ),
    ] = None,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    baseline: BaselineOpt = None,
    stack: StackOpt = None,
    parsers: ParsersOpt = None,
    jobs: JobsOpt = 1,
    revision: RevisionOpt = None,
    fmt: FormatOpt = OutputFormat.rich,
    output: OutputOpt = None,
    fail_on: FailOnOpt = FailOn.error,
    debug: DebugOpt = False,
    quiet: QuietOpt = False,
    color: ColorOpt = Color.auto,
    also: AlsoOpt = None,
) -> None:
    """Check a tokenizer's id space, special tokens and artifacts for problems that break serving stacks.

    \b
    Examples:
      tokaudit scan models/kimi-k2.5                       # a model directory
      tokaudit scan Qwen/Qwen3-8B --revision main
      tokaudit scan models/* -f sarif -o scan.sarif --also markdown=summary.md
    """
    with handle_errors(debug):
        from tokaudit.checks.progress import reporting_to
        from tokaudit.config import load_config
        from tokaudit.errors import InputError
        from tokaudit.report.baseline import load_baseline
        from tokaudit.report.finding import Finding
        from tokaudit.report.policy import META_CODES, Selection, apply_policy, split_selectors, validate
        from tokaudit.report.report import Report, TargetResult
        from tokaudit.rules import all_rules
        from tokaudit.scan import load_model, scan_model, scan_targets
        from tokaudit.roundtrip.choice import ParserChoice, check_choice, parsers_mode, resolve_parsers
        from tokaudit.roundtrip.rules import configure
        from tokaudit.template.rules import SELECTED_STACKS
        from tokaudit.template.stacks import STACK_NAMES, parse_stacks

        extra_reports = parse_also(also)
        if extra_reports and fmt is OutputFormat.jsonl:
            raise InputError(
                "--also needs one report of the whole run; --format jsonl writes one per target", key="--also"
            )
        config = load_config()
        where = "--stack" if stack else "tool.tokaudit.stacks"
        stacks = parse_stacks(stack) if stack else parse_stacks(config.stacks or None, where, config.name)
        SELECTED_STACKS.set(stacks)  # the template rules check only these stacks (every scan sets it)
        choice = ParserChoice(
            stacks if (stack or config.stacks) else None,
            config.tool_parser,
            config.reasoning_parser,
            parsers=parsers_mode(parsers, config.parsers),
        )
        check_choice(choice, where, STACK_NAMES)
        choice = resolve_parsers(choice)
        configure(choice)  # the parser round trip's rules read the deploy's stacks and parsers (every scan sets it)
        known = [(r.code, r.name) for r in all_rules()] + [(meta.code, meta.name) for meta in META_CODES]
        cli_select, cli_ignore = split_selectors(select), split_selectors(ignore)
        validate(cli_select, known, "--select")
        validate(cli_ignore, known, "--ignore")
        validate(config.select, known, "tool.tokaudit.select", config.name)
        validate(config.ignore, known, "tool.tokaudit.ignore", config.name)
        for entry in config.per_target_ignores:
            validate(entry.rules, known, f"{entry.key}.rules", config.name)
        selection = Selection(cli_select or config.select, config.ignore + cli_ignore)
        rules = [
            r
            for r in all_rules()
            if selection.chosen(r.code, r.name) and (deep or not r.deep or selection.named_exactly(r.code, r.name))
        ]
        if not rules:
            raise InputError("no rule is selected", key="--select/--ignore")
        baseline_path = baseline or config.baseline
        loaded_baseline = load_baseline(baseline_path, require_reason=config.require_reason) if baseline_path else None
        all_targets = list(targets or [])
        if targets_from:
            from tokaudit.fleet import read_target_list  # only for a target list (~0.5 ms of every other scan)

            all_targets += read_target_list(targets_from)
        if not all_targets:
            raise InputError("no target: give TARGET... or --targets-from FILE", key="TARGET")

        def report(results: list[TargetResult], findings: list[Finding], whole_run: bool = True) -> Report:
            outcome = apply_policy(
                findings,
                [r.target for r in results],
                selection=selection,
                config=config,
                baseline=loaded_baseline,
                rules_run=[(r.code, r.name) for r in rules],
                target_keys={r.target: r.source.key for r in results if r.source is not None},
            )
            if whole_run and outcome.stale_baseline is not None:  # a jsonl line is one target of the run
                err(f"tokaudit: warning: {outcome.stale_baseline}")
            for result in results:
                result.data["policy"] = {
                    **outcome.counts.get(result.target, {"suppressed": 0, "baselined": 0}),
                    "config": str(config.path) if config.path else None,
                    "baseline": str(baseline_path) if baseline_path else None,
                }
            return Report("scan", results, outcome.findings)

        if fmt is OutputFormat.jsonl:  # a line per target as it finishes; an unreadable target does not stop the rest
            from tokaudit.fleet import as_completed

            def one(target: str) -> Report:
                result, found = scan_model(load_model(target, revision, pat_str), rules)
                return report([result], found, whole_run=False)

            emit_lines("scan", as_completed(all_targets, one, jobs), output, fail_on, quiet)
        with progress_bar(quiet) as sink, reporting_to(sink):
            # a report written to a file is written even when a target cannot be read: a CI step uploads it either way
            results, findings, unreadable = scan_targets(
                all_targets, revision, rules, jobs, pat_str, keep_going=len(all_targets) > 1 or not to_stdout(output)
            )
        for target, error in unreadable.items():  # the others are reported; the exit code is 2
            err(f"tokaudit: error: {error}")
        full = report(results, findings)
        full.unreadable = unreadable
        emit(full, fmt, output, fail_on, quiet, color, also=extra_reports)
