"""``tokaudit fuzz TARGET``"""

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
    GgufOpt,
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
from tokaudit.cli.explain import BackendsOpt, PatStrOpt, TrustOpt


def fuzz(
    target: TargetArg,
    backends: BackendsOpt = None,
    iterations: Annotated[
        int, typer.Option("--iterations", "-n", help="Id sequences each backend decodes.", min=1)
    ] = 2000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the sequences (the same seed gives the same run).")] = 0,
    max_length: Annotated[int, typer.Option("--max-length", help="Longest sequence, in ids.", min=1)] = 8,
    pat_str: PatStrOpt = None,
    trust_remote_code: TrustOpt = False,
    gguf: GgufOpt = None,
    revision: RevisionOpt = None,
    fmt: FormatOpt = OutputFormat.rich,
    output: OutputOpt = None,
    fail_on: FailOnOpt = FailOn.error,
    debug: DebugOpt = False,
    quiet: QuietOpt = False,
    color: ColorOpt = Color.auto,
) -> None:
    """Decode seeded random id sequences, weighted toward edge ids, with every backend; shrink each crash.

    \b
    Examples:
      tokaudit fuzz models/kimi-k2.5
      tokaudit fuzz models/kimi-k2.5 --iterations 10000 --seed 7
      tokaudit fuzz models/llama3 --backends hf,tiktoken --format json
    """
    with handle_errors(debug):
        from tokaudit.backends.registry import gguf_option, load_backends, parse_backend_list
        from tokaudit.oncall.fuzz import FuzzOptions
        from tokaudit.oncall.fuzz import fuzz as run_fuzz
        from tokaudit.report.report import Report
        from tokaudit.model.load import load_model

        within_limit(max_length, "--max-length")
        within_limit(iterations, "--iterations")
        names = parse_backend_list(backends)
        model = load_model(target, revision)
        with loading_status(quiet):
            loaded = load_backends(
                model,
                names,
                pat_str,
                trust_remote_code=trust_remote_code,
                decode_only=True,  # fuzz only decodes
                gguf=gguf_option(gguf),
            )
        with progress_bar(quiet) as bar:
            result, findings = run_fuzz(model, loaded, FuzzOptions(iterations, seed, max_length), bar)
        emit(Report("fuzz", [result], findings), fmt, output, fail_on, quiet, color)
