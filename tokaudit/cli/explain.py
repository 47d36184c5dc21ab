"""``tokaudit explain TARGET ID|TEXT...``"""

from __future__ import annotations

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
    GgufOpt,
    OutputFormat,
    OutputOpt,
    QuietOpt,
    RevisionOpt,
    TargetArg,
    emit,
    handle_errors,
)
from tokaudit.cli.progress import loading_status

BackendsOpt = Annotated[
    str | None,
    typer.Option(
        "--backends",
        help=f"Comma-separated: {names_help()} "
        "(default: every backend the model supports; explain leaves fastokens and the transformers ones out, see "
        "--all-backends).",
    ),
]
PatStrOpt = Annotated[str | None, typer.Option("--pat-str", help="Pre-tokenizer regex, when the model declares none.")]
TrustOpt = Annotated[
    bool,
    typer.Option(
        "--trust-remote-code", help="Let the transformers backends run the model's own code (never by default)."
    ),
]


def explain(
    target: TargetArg,
    queries: Annotated[
        list[str],
        typer.Argument(
            metavar="ID|TEXT...",
            help="Token ids, or a token's exact text (e.g. '<|im_end|>'): every id with that token.",
            show_default=False,
        ),
    ],
    backends: BackendsOpt = None,
    all_backends: Annotated[
        bool,
        typer.Option(
            "--all-backends", help="Every backend, fastokens and the transformers ones too (default: all but those)."
        ),
    ] = False,
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
    """What an id is: declared range, which profile and file map it, its bytes, what each backend does with it.

    \b
    Examples:
      tokaudit explain models/kimi-k2.5 163600
      tokaudit explain models/kimi-k2.5 '<|im_end|>'
      tokaudit explain models/kimi-k2.5 163600 --all-backends --format json
    """
    with handle_errors(debug):
        from tokaudit.backends.registry import gguf_option, load_backends
        from tokaudit.oncall.explain import backend_names, resolve
        from tokaudit.oncall.explain import explain as explain_ids
        from tokaudit.report.report import Report
        from tokaudit.model.load import load_model

        names = backend_names(backends, all_backends)
        model = load_model(target, revision)
        pairs = resolve(model, queries)
        # explain only decodes these ids: backends rebuilt from ranks skip the merges (decode never reads
        # them) and hold only the entries these ids read (the same answers, in milliseconds)
        with loading_status(quiet):
            loaded = load_backends(
                model,
                names,
                pat_str,
                trust_remote_code=trust_remote_code,
                decode_only=True,
                for_ids=[i for _, i in pairs],
                gguf=gguf_option(gguf),
            )
        emit(
            Report("explain", [explain_ids(model, loaded, pairs)], [], reports_only=True),
            fmt,
            output,
            fail_on,
            quiet,
            color,
        )
