"""``tokaudit diff TARGET_A TARGET_B``"""

from __future__ import annotations

from typing import Annotated

import typer

from tokaudit.cli.common import (
    Color,
    ColorOpt,
    DebugOpt,
    FailOn,
    FailOnOpt,
    FormatOpt,
    OutputFormat,
    OutputOpt,
    QuietOpt,
    emit,
    handle_errors,
)


def diff(
    draft: Annotated[str, typer.Argument(metavar="TARGET_A", help="The draft model (directory, tokenizer file or repo id).", show_default=False)],
    target: Annotated[str, typer.Argument(metavar="TARGET_B", help="The target model it drafts for.", show_default=False)],
    revision: Annotated[
        str | None,
        typer.Option("--revision", metavar="REV", help="Branch, tag or commit of TARGET_A when it is a Hugging Face repo id "
                     "(and of TARGET_B unless --target-revision is given)."),
    ] = None,
    target_revision: Annotated[
        str | None,
        typer.Option("--target-revision", metavar="REV", help="Branch, tag or commit of TARGET_B when it is a Hugging Face repo id "
                     "(default: --revision)."),
    ] = None,
    fmt: FormatOpt = OutputFormat.rich,
    output: OutputOpt = None,
    fail_on: FailOnOpt = FailOn.error,
    debug: DebugOpt = False,
    quiet: QuietOpt = False,
    color: ColorOpt = Color.auto,
) -> None:
    """Compare a draft tokenizer with its target id by id: identical, compatible or incompatible (exit 1)."""
    with handle_errors(debug):
        from tokaudit.oncall.diff import diff_models
        from tokaudit.report.report import Report
        from tokaudit.scan import load_model

        result, findings = diff_models(load_model(draft, revision), load_model(target, target_revision or revision))
        emit(Report("diff", [result], findings), fmt, output, fail_on, quiet, color)
