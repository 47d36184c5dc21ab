"""``tokaudit scan TARGET...``"""

from __future__ import annotations

from typing import Annotated

import typer

from tokaudit.cli.common import (
    DebugOpt,
    FailOn,
    FailOnOpt,
    FormatOpt,
    OutputFormat,
    OutputOpt,
    QuietOpt,
    RevisionOpt,
    emit,
    handle_errors,
)


def scan(
    targets: Annotated[
        list[str], typer.Argument(help="Model directory, tokenizer file, or Hugging Face repo id (org/name).", show_default=False)
    ],
    deep: Annotated[bool, typer.Option("--deep", help="Also run the slow rules.")] = False,
    revision: RevisionOpt = None,
    fmt: FormatOpt = OutputFormat.rich,
    output: OutputOpt = None,
    fail_on: FailOnOpt = FailOn.error,
    debug: DebugOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Check a tokenizer's id space and artifacts for problems that break serving stacks."""
    with handle_errors(debug):
        from tokaudit.checks.registry import all_rules
        from tokaudit.report.report import Report
        from tokaudit.scan import load_model, scan_model

        rules = [r for r in all_rules() if deep or not r.deep]
        results, findings = [], []
        for target in targets:
            result, found = scan_model(load_model(target, revision), rules)
            results.append(result)
            findings.extend(found)
        emit(Report("scan", results, findings), fmt, output, fail_on, quiet)
