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
    err,
    handle_errors,
    parse_also,
    to_stdout,
)
from tokaudit.cli.jsonl import emit_lines
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
        from tokaudit.errors import InputError
        from tokaudit.model.load import load_model
        from tokaudit.report.report import Report
        from tokaudit.scan.policy import scan_policy
        from tokaudit.scan.run import scan_model, scan_targets

        extra_reports = parse_also(also)
        if extra_reports and fmt is OutputFormat.jsonl:
            raise InputError(
                "--also needs one report of the whole run; --format jsonl writes one per target", key="--also"
            )
        policy = scan_policy(select, ignore, baseline, stack, parsers, deep)
        rules = policy.rules
        all_targets = list(targets or [])
        if targets_from:
            from tokaudit.fleet import read_target_list  # only for a target list (~0.5 ms of every other scan)

            all_targets += read_target_list(targets_from)
        if not all_targets:
            raise InputError("no target: give TARGET... or --targets-from FILE", key="TARGET")

        if fmt is OutputFormat.jsonl:  # a line per target as it finishes; an unreadable target does not stop the rest
            from tokaudit.fleet import as_completed

            def one(target: str) -> Report:
                result, found = scan_model(load_model(target, revision, pat_str), rules)
                return policy.report([result], found)[0]  # a line is one target of the run: no baseline warning

            emit_lines("scan", as_completed(all_targets, one, jobs), output, fail_on, quiet)
        with progress_bar(quiet) as sink, reporting_to(sink):
            # a report written to a file is written even when a target cannot be read: a CI step uploads it either way
            results, findings, unreadable = scan_targets(
                all_targets, revision, rules, jobs, pat_str, keep_going=len(all_targets) > 1 or not to_stdout(output)
            )
        for target, error in unreadable.items():  # the others are reported; the exit code is 2
            err(f"tokaudit: error: {error}")
        full, stale_baseline = policy.report(results, findings)
        if stale_baseline is not None:
            err(f"tokaudit: warning: {stale_baseline}")
        full.unreadable = unreadable
        emit(full, fmt, output, fail_on, quiet, color, also=extra_reports)
