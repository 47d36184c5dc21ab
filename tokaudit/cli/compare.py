"""``tokaudit compare TARGET``"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from tokaudit.backends.kinds import names_help
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
    RevisionOpt,
    TargetArg,
    emit,
    handle_errors,
    within_limit,
)
from tokaudit.cli.progress import loading_status, progress_bar


class Sweep(str, Enum):
    planes = "planes"
    full = "full"
    off = "off"


def compare(
    target: TargetArg,
    backends: Annotated[
        str | None,
        typer.Option(
            "--backends", help=f"Comma-separated: {names_help()} (default: every backend the model supports)."
        ),
    ] = None,
    gguf: Annotated[
        Path | None,
        typer.Option(
            "--gguf",
            help="A GGUF converted from the target: llama.cpp (and transformers-gguf) load it, "
            "so compare checks the conversion against the HF files.",
        ),
    ] = None,
    golden: Annotated[
        Path | None,
        typer.Option(
            "--golden",
            help="Expected ids per text, checked for every backend: llama.cpp's NAME.inp "
            "(NAME.out beside it) or JSONL, a line an object with text and ids.",
        ),
    ] = None,
    corpus: Annotated[
        list[Path] | None,
        typer.Option("--corpus", help="A text file (a case per line) or a directory of them; repeatable."),
    ] = None,
    whole_file: Annotated[bool, typer.Option("--whole-file", help="Each corpus file is one case.")] = False,
    sample: Annotated[
        int | None, typer.Option("--sample", help="Compare N cases of the --corpus, picked at random.", min=0)
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of --sample and of the built-in generators.")] = 0,
    builtin: Annotated[
        bool,
        typer.Option(
            "--builtin-corpus/--no-builtin-corpus", help="Include the built-in corpus of known failure classes."
        ),
    ] = True,
    sweep: Annotated[
        Sweep,
        typer.Option(
            "--unicode-sweep",
            help="Unicode sweep of the built-in corpus: planes with assigned characters "
            "in full and the others sampled, every scalar value, or none.",
            case_sensitive=False,
        ),
    ] = Sweep.planes,
    pat_str: Annotated[
        str | None, typer.Option("--pat-str", help="Pre-tokenizer regex, when the model declares none.")
    ] = None,
    trust_remote_code: Annotated[
        bool,
        typer.Option(
            "--trust-remote-code", help="Let the transformers backends run the model's own code (never by default)."
        ),
    ] = False,
    concurrency: Annotated[
        int,
        typer.Option(
            "--concurrency", help="Load the transformers tokenizer N times at once (threads, then processes).", min=0
        ),
    ] = 0,
    examples: Annotated[int, typer.Option("--examples", help="First examples kept per pair and kind.", min=1)] = 3,
    revision: RevisionOpt = None,
    fmt: FormatOpt = OutputFormat.rich,
    output: OutputOpt = None,
    fail_on: FailOnOpt = FailOn.error,
    debug: DebugOpt = False,
    quiet: QuietOpt = False,
    color: ColorOpt = Color.auto,
) -> None:
    """Encode and decode the same text with every backend; report where they disagree.

    \b
    Examples:
      tokaudit compare models/llama3
      tokaudit compare models/llama3 --backends hf,tiktoken --corpus prompts/
      tokaudit compare models/llama3 --golden golden.jsonl    # expected ids
    """
    with handle_errors(debug):
        from tokaudit.backends.registry import gguf_option, parse_backend_list
        from tokaudit.compare.run import CompareOptions, compare_model
        from tokaudit.report.report import Report
        from tokaudit.model.load import load_model

        options = CompareOptions(
            backends=parse_backend_list(backends),
            pat_str=pat_str,
            corpora=list(corpus or []),
            whole_file=whole_file,
            sample=sample,
            seed=seed,
            builtin=builtin,
            sweep=sweep.value,
            trust_remote_code=trust_remote_code,
            concurrency=within_limit(concurrency, "--concurrency"),
            max_examples=within_limit(examples, "--examples"),
            golden=golden,
            gguf=gguf_option(gguf),
        )
        model = load_model(target, revision)
        with loading_status(quiet), progress_bar(quiet) as bar:
            result, findings = compare_model(model, options, bar)
        emit(Report("compare", [result], findings), fmt, output, fail_on, quiet, color)
