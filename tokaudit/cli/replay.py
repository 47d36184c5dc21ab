"""``tokaudit replay TARGET STREAM``"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from collections.abc import Sequence
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
    RevisionOpt,
    SkipSpecialOpt,
    TargetArg,
    emit,
    handle_errors,
)


class StreamFormat(str, Enum):
    json = "json"
    ids = "ids"
    jsonl = "jsonl"
    sse = "sse"


def replay(
    target: TargetArg,
    stream: Annotated[
        str,
        typer.Argument(
            help="The token ids the server produced: a file, or - for stdin (JSON array, ids, JSON Lines steps, SSE "
            "capture).",
            show_default=False,
        ),
    ],
    stream_format: Annotated[
        StreamFormat | None,
        typer.Option("--stream-format", help="Force the stream format (default: detected).", case_sensitive=False),
    ] = None,
    detokenizers: Annotated[
        str | None,
        typer.Option(
            "--detokenizers",
            help="Comma-separated: full,offsets,decodestream,bytes,naive,llama.cpp-server (default: all; "
            "llama.cpp-server when there is a GGUF).",
        ),
    ] = None,
    prompt: Annotated[
        str | None,
        typer.Option("--prompt", help='Prompt ids that prime the detokenizers: ids inline ("1 2 3") or a file.'),
    ] = None,
    stop: Annotated[list[str] | None, typer.Option("--stop", help="A stop string (repeatable).")] = None,
    stop_id: Annotated[list[int] | None, typer.Option("--stop-id", help="A stop token id (repeatable).", min=0)] = None,
    gguf: Annotated[
        Path | None,
        typer.Option(
            "--gguf",
            help="A GGUF of the model: the llama.cpp-server detokenizer streams as llama.cpp's server does with it.",
        ),
    ] = None,
    skip_special_tokens: SkipSpecialOpt = True,
    stack: Annotated[
        str | None,
        typer.Option(
            "--stack",
            help="Parse the stream as this stack does (vllm, sglang, llama.cpp; with "
            "--tool-parser / --reasoning-parser; default vllm).",
        ),
    ] = None,
    tool_parser: Annotated[
        str | None,
        typer.Option("--tool-parser", help="The stack's tool-call parser to run on the stream, chunked as captured."),
    ] = None,
    reasoning_parser: Annotated[
        str | None, typer.Option("--reasoning-parser", help="The stack's reasoning parser.")
    ] = None,
    chunk_invariance: Annotated[
        bool,
        typer.Option(
            "--chunk-invariance/--no-chunk-invariance",
            help="Re-chunk the ids into steps of 1..8 and compare (streams of 4,096+ tokens: in windows around "
            "multi-byte, special and unmapped tokens).",
        ),
    ] = True,
    steps: Annotated[
        str | None,
        typer.Option(
            "--steps",
            help="Timeline rows to show: 'all', or a range FIRST:END of step numbers (e.g. 100:200). "
            "Default: every step of a short stream, else the steps around each finding.",
        ),
    ] = None,
    revision: RevisionOpt = None,
    fmt: FormatOpt = OutputFormat.rich,
    output: OutputOpt = None,
    fail_on: FailOnOpt = FailOn.error,
    debug: DebugOpt = False,
    quiet: QuietOpt = False,
    color: ColorOpt = Color.auto,
) -> None:
    """Replay recorded token ids through incremental detokenizers and show where each one breaks.

    \b
    Examples:
      tokaudit replay models/kimi-k2.5 ids.json
      tokaudit replay models/kimi-k2.5 capture.sse --stop "</answer>"
      tokaudit replay models/kimi ids.jsonl --detokenizers offsets,decodestream
    """
    with handle_errors(debug):
        from tokaudit.artifacts.safe_files import is_existing_file
        from tokaudit.backends.registry import gguf_option
        from tokaudit.report.report import Report
        from tokaudit.model.load import load_model
        from tokaudit.stream.detokenizers import parse_detokenizer_list
        from tokaudit.stream.readers import parse_stream, read_stream
        from tokaudit.stream.replay import ReplayOptions, replay_result
        from tokaudit.stream.timeline import parse_steps

        names = parse_detokenizer_list(detokenizers)
        if tool_parser or reasoning_parser or stack:
            from tokaudit.roundtrip.choice import ParserChoice, check_choice

            check_choice(ParserChoice((stack or "vllm",), tool_parser, reasoning_parser))
        tokens = read_stream(stream, stream_format.value if stream_format else None)
        prompt_ids: Sequence[int] = ()
        if prompt:
            source = read_stream(prompt) if is_existing_file(prompt) else parse_stream(prompt, "--prompt")
            prompt_ids = source.ids
        options = ReplayOptions(
            names,
            prompt_ids,
            tuple(stop or ()),
            tuple(stop_id or ()),
            skip_special_tokens,
            chunk_invariance,
            steps=parse_steps(steps),
            gguf=gguf_option(gguf),
            stack=(stack or "vllm") if tool_parser or reasoning_parser else None,
            tool_parser=tool_parser,
            reasoning_parser=reasoning_parser,
        )
        result, findings = replay_result(load_model(target, revision), tokens, options)
        emit(Report("replay", [result], findings), fmt, output, fail_on, quiet, color)
