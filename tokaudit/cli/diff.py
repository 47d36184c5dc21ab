"""``tokaudit diff TARGET_A TARGET_B``"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

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

if TYPE_CHECKING:
    from tokaudit.report.finding import Finding


def diff(
    draft: Annotated[
        str,
        typer.Argument(
            metavar="TARGET_A", help="The draft model (directory, tokenizer file or repo id).", show_default=False
        ),
    ],
    target: Annotated[
        str | None,
        typer.Argument(
            metavar="[TARGET_B]",
            help="The target model it drafts for (with --corpus: the new tokenizer). "
            "Leave it out with --counts-baseline or --write-counts.",
            show_default=False,
        ),
    ] = None,
    revision: Annotated[
        str | None,
        typer.Option(
            "--revision",
            metavar="REV",
            help="Branch, tag or commit of TARGET_A when it is a Hugging Face repo id "
            "(and of TARGET_B unless --target-revision is given).",
        ),
    ] = None,
    target_revision: Annotated[
        str | None,
        typer.Option(
            "--target-revision",
            metavar="REV",
            help="Branch, tag or commit of TARGET_B when it is a Hugging Face repo id (default: --revision).",
        ),
    ] = None,
    corpus: Annotated[
        Path | None,
        typer.Option(
            "--corpus",
            metavar="FILE|DIR",
            help="Count the tokens of each non-empty line (of each file) under both "
            "tokenizers: per-text and total counts, and TA704 token-count-drift when the total grows past "
            "--max-growth.",
        ),
    ] = None,
    max_growth: Annotated[
        float,
        typer.Option(
            "--max-growth",
            metavar="PERCENT",
            min=0.0,
            help="The total token count may grow this much (percent) before TA704.",
        ),
    ] = 2.0,
    write_counts: Annotated[
        Path | None,
        typer.Option(
            "--write-counts",
            metavar="FILE",
            help="Write the corpus's counts under TARGET_B (TARGET_A when it is "
            "the only target) as a counts baseline to commit.",
        ),
    ] = None,
    counts_baseline: Annotated[
        Path | None,
        typer.Option(
            "--counts-baseline",
            metavar="FILE",
            help="Compare TARGET_A's counts with this baseline (written by "
            "--write-counts) instead of a second tokenizer.",
        ),
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

    With --corpus, also the corpus's token counts under both (or under TARGET_A and a --counts-baseline).

    \b
    Examples:
      tokaudit diff models/eagle3-draft models/llama3
      tokaudit diff org/model org/model --revision v1 --target-revision v2
      tokaudit diff models/llama3 llama3-q4_k_m.gguf
      tokaudit diff models/v1 models/v2 --corpus prompts.txt --max-growth 2
    """
    with handle_errors(debug):
        from tokaudit.errors import InputError
        from tokaudit.oncall.diff import DiffResult, diff_models
        from tokaudit.oncall.gguf_diff import conversion_diff, is_conversion_pair
        from tokaudit.model.load import load_model
        from tokaudit.oncall.diff_result import CountsOnly, CountTotal
        from tokaudit.report.report import Report
        from tokaudit.source.resolve import same_files

        if corpus is None and (write_counts or counts_baseline):
            raise InputError("needs --corpus FILE", key="--write-counts" if write_counts else "--counts-baseline")
        if target is not None and counts_baseline is not None:
            raise InputError("give TARGET_B or --counts-baseline, not both", key="--counts-baseline")
        if target is None and counts_baseline is None and write_counts is None:
            raise InputError("missing TARGET_B (or --counts-baseline / --write-counts with --corpus)", key="TARGET_B")
        a = load_model(draft, revision)
        findings: list[Finding] = []
        if target is None:
            result = DiffResult(a.target, None)
        else:
            b = load_model(target, target_revision or revision)
            same = same_files(a.source, b.source)
            if same is not None:  # e.g. diff org/m org/m --revision old: old against old
                err(
                    f"tokaudit: warning: both sides are the same files ({same}): every id matches itself; "
                    "give the other side's revision with --target-revision"
                )
            for warning in b.source.warnings:  # the draft's are shown with the report
                err(f"tokaudit: warning: {warning}")
            if is_conversion_pair(a, b):  # HF files and a GGUF: the conversion's drift, in either order
                hf, gguf = (b, a) if a.artifacts.gguf_only else (a, b)
                result, findings = conversion_diff(hf, gguf, a.target)
            else:
                result, findings = diff_models(a, b)
        if corpus is not None:
            from tokaudit.compare.corpus import user_corpus
            from tokaudit.oncall.drift import count_tokens, drift, read_counts, write_counts as write

            cases = user_corpus(corpus)
            counted_a, crashed = count_tokens(a, cases)
            findings += crashed
            counted_b = None
            if target is not None:
                counted_b, crashed = count_tokens(b, cases)
                findings += crashed
            newest = counted_b if target is not None else counted_a
            if write_counts is not None and newest is not None:
                write(write_counts, newest, cases, str(corpus))
            if counts_baseline is not None and counted_a is not None:
                counted_b, counted_a = counted_a, read_counts(counts_baseline, cases)
            if counted_a is not None and counted_b is not None:
                counts, drifted = drift(counted_a, counted_b, cases, str(corpus), max_growth)
                result = replace(result, counts=counts)
                findings += [f.with_target(a.target) for f in drifted]
            elif newest is not None:
                total = CountTotal(newest.target, newest.backend, newest.total)
                texts = tuple((c.source, n) for c, n in zip(cases, newest.counts))
                result = replace(result, counts=CountsOnly(str(corpus), total, texts))
        emit(Report("diff", [result], findings), fmt, output, fail_on, quiet, color)
