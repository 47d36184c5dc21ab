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
    err,
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
    """Compare a draft tokenizer with its target id by id: identical, compatible or incompatible (exit 1).

    With HF files on one side and a GGUF on the other (either order), check the conversion instead: per-id
    bytes, token types against the special flags, special ids, add_bos, merges, the pre-tokenizer and the
    chat template (faithful or drifted).

    \b
    Examples:
      tokaudit diff models/eagle3-draft models/llama3
      tokaudit diff org/model org/model --revision v1 --target-revision v2
      tokaudit diff models/llama3 llama3-q4_k_m.gguf
    """
    with handle_errors(debug):
        from tokaudit.oncall.diff import diff_models
        from tokaudit.oncall.gguf_diff import conversion_diff, is_conversion_pair
        from tokaudit.report.report import Report
        from tokaudit.scan import load_model
        from tokaudit.source.resolve import same_files

        a, b = load_model(draft, revision), load_model(target, target_revision or revision)
        same = same_files(a.source, b.source)
        if same is not None:  # e.g. diff org/m org/m --revision old: old against old
            err(f"tokaudit: warning: both sides are the same files ({same}): every id matches itself; "
                "give the other side's revision with --target-revision")
        for warning in b.source.warnings:  # the draft's are shown with the report
            err(f"tokaudit: warning: {warning}")
        if is_conversion_pair(a, b):  # HF files and a GGUF: the conversion's drift, in either order
            hf, gguf = (b, a) if a.artifacts.gguf_only else (a, b)
            result, findings = conversion_diff(hf, gguf, a.target)
        else:
            result, findings = diff_models(a, b)
        emit(Report("diff", [result], findings), fmt, output, fail_on, quiet, color)
