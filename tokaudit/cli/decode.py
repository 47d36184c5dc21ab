"""``tokaudit decode TARGET IDS...`` and ``tokaudit encode TARGET TEXT``"""

from __future__ import annotations

from typing import Annotated

import typer

from tokaudit.artifacts.kinds import names_of_rank_files
from tokaudit.backends.kinds import names_help
from tokaudit.cli.common import (
    Color,
    ColorOpt,
    DebugOpt,
    FailOn,
    FailOnOpt,
    FormatOpt,
    GgufOpt,
    MAX_DECODE_IDS,
    OutputFormat,
    OutputOpt,
    QuietOpt,
    RevisionOpt,
    SkipSpecialOpt,
    TargetArg,
    emit,
    handle_errors,
    read_text_arg,
)
from tokaudit.cli.replay import StreamFormat
from tokaudit.errors import InputError

BackendOpt = Annotated[
    str | None,
    typer.Option(
        "--backend",
        help=f"{names_help(last=' or ', decode_only=True)}. "
        "Default: what a files-only gateway (smg, Dynamo) uses: hf (tokenizers) when there is a tokenizer.json, "
        f"else tiktoken for a rank file ({names_of_rank_files()}).",
    ),
]


def _read_ids(args: list[str], fmt: StreamFormat | None) -> tuple[list[int], str]:
    from tokaudit.artifacts.safe_files import is_existing_file
    from tokaudit.stream.readers import parse_stream, read_stream

    value = fmt.value if fmt else None
    # one argument that is "-", a file, or does not start like ids ("12", "[12", "+12") is a stream to read
    if len(args) == 1 and (
        args[0] == "-" or is_existing_file(args[0]) or args[0].lstrip()[:1] not in tuple("0123456789[+")
    ):
        stream = read_stream(args[0], value)
        return list(stream.ids), "<stdin>" if args[0] == "-" else args[0]
    return list(parse_stream(" ".join(args), "<arguments>", value).ids), "<arguments>"


def decode(
    target: TargetArg,
    ids: Annotated[
        list[str],
        typer.Argument(
            metavar="IDS...",
            help="Ids as arguments ('1 2 3', '1,2,3', '[1, 2, 3]'), a file of ids, or - for stdin "
            "(the formats of replay: JSON array, ids, JSON Lines steps, SSE capture).",
            show_default=False,
        ),
    ],
    backend: BackendOpt = None,
    gguf: GgufOpt = None,
    skip_special_tokens: SkipSpecialOpt = True,
    stream_format: Annotated[
        StreamFormat | None,
        typer.Option("--stream-format", help="Force the format of the ids (default: detected).", case_sensitive=False),
    ] = None,
    revision: RevisionOpt = None,
    fmt: FormatOpt = OutputFormat.rich,
    output: OutputOpt = None,
    fail_on: FailOnOpt = FailOn.error,
    debug: DebugOpt = False,
    quiet: QuietOpt = False,
    color: ColorOpt = Color.auto,
) -> None:
    """Decode ids with one backend, showing each token's boundaries and id.

    \b
    Examples:
      tokaudit decode models/kimi-k2.5 163585,163586
      tokaudit decode models/llama3 128000 9906 1917 --backend tiktoken
      jq -c .ids response.json | tokaudit decode models/llama3 -
    """
    with handle_errors(debug):
        from tokaudit.backends.registry import gguf_option
        from tokaudit.oncall.codec import decode_ids, pick_backend
        from tokaudit.report.report import Report
        from tokaudit.model.load import load_model

        token_ids, source = _read_ids(ids, stream_format)
        if len(token_ids) > MAX_DECODE_IDS:
            raise InputError(
                f"{len(token_ids)} ids from {source}: decode shows one row per id, at most {MAX_DECODE_IDS} "
                "(replay takes longer streams)",
                key="IDS",
            )
        model = load_model(target, revision)
        lb = pick_backend(model, backend, encode=False, ids=token_ids, gguf=gguf_option(gguf))
        result, findings = decode_ids(model, lb, token_ids, skip_special_tokens, source)
        emit(Report("decode", [result], findings, reports_only=True), fmt, output, fail_on, quiet, color)


def encode(
    target: TargetArg,
    text: Annotated[str, typer.Argument(help="The text to encode, or - to read it from stdin.", show_default=False)],
    backend: BackendOpt = None,
    gguf: GgufOpt = None,
    pat_str: Annotated[
        str | None, typer.Option("--pat-str", help="Pre-tokenizer regex, when the model declares none.")
    ] = None,
    revision: RevisionOpt = None,
    fmt: FormatOpt = OutputFormat.rich,
    output: OutputOpt = None,
    fail_on: FailOnOpt = FailOn.error,
    debug: DebugOpt = False,
    quiet: QuietOpt = False,
    color: ColorOpt = Color.auto,
) -> None:
    """Encode text with one backend (special-token strings become their ids), showing each token.

    \b
    Examples:
      tokaudit encode models/llama3 'Hello, world!'
      tokaudit encode models/kimi-k2.5 '<|im_end|>' --backend tiktoken
      tokaudit encode models/llama3 - < prompt.txt --format json
    """
    with handle_errors(debug):
        from tokaudit.backends.registry import gguf_option
        from tokaudit.oncall.codec import encode_text, pick_backend
        from tokaudit.report.report import Report
        from tokaudit.model.load import load_model

        text = read_text_arg(text)
        model = load_model(target, revision)
        lb = pick_backend(model, backend, encode=True, pat_str=pat_str, text=text, gguf=gguf_option(gguf))
        result, findings = encode_text(model, lb, text)
        emit(Report("encode", [result], findings, reports_only=True), fmt, output, fail_on, quiet, color)
