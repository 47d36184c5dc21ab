"""``tokaudit template TARGET``"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tokaudit.cli.common import (
    Color,
    ColorOpt,
    DebugOpt,
    FailOn,
    FailOnOpt,
    FormatOpt,
    IgnoreOpt,
    OutputFormat,
    OutputOpt,
    QuietOpt,
    RevisionOpt,
    SelectOpt,
    TargetArg,
    emit,
    handle_errors,
)
from tokaudit.collector import collector_paused


def template(
    target: TargetArg,
    messages: Annotated[
        Path | None,
        typer.Option("--messages", help="JSON or JSONL file of OpenAI-style message lists (optionally with tools) "
                     "rendered instead of the built-in conversations.", dir_okay=False),
    ] = None,
    tools: Annotated[Path | None, typer.Option("--tools", help="JSON list of tool definitions offered to every conversation.", dir_okay=False)] = None,
    engine: Annotated[str | None, typer.Option("--engine", help="Comma-separated engines: jinja2, minijinja (default: both).")] = None,
    template_file: Annotated[
        Path | None, typer.Option("--template", help="Render this Jinja file instead of the target's chat template.", dir_okay=False)
    ] = None,
    stack: Annotated[
        str | None, typer.Option("--stack", help="Comma-separated stacks for the parser round trip: vllm, sglang, llama.cpp "
                                 "(default: [tool.tokaudit] stacks, else all).")
    ] = None,
    tool_parser: Annotated[
        str | None, typer.Option("--tool-parser", help="The deploy's tool-call parser as the stack names it (vLLM "
                                 "--tool-call-parser, SGLang --tool-call-parser): its failures are errors.")
    ] = None,
    reasoning_parser: Annotated[
        str | None, typer.Option("--reasoning-parser", help="The deploy's reasoning parser as the stack names it.")
    ] = None,
    chat_template_kwargs: Annotated[
        str | None, typer.Option("--chat-template-kwargs", help="The request's chat_template_kwargs as a JSON object, e.g. "
                                 "'{\"thinking\": true}' (the round trip renders and parses with them).")
    ] = None,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    revision: RevisionOpt = None,
    fmt: FormatOpt = OutputFormat.rich,
    output: OutputOpt = None,
    fail_on: FailOnOpt = FailOn.error,
    debug: DebugOpt = False,
    quiet: QuietOpt = False,
    color: ColorOpt = Color.auto,
) -> None:
    """Render the chat template with Jinja2 (transformers, vLLM) and MiniJinja (Rust gateways), then tokenize what they render."""
    with handle_errors(debug):
        from tokaudit.config import load_config
        from tokaudit.report.policy import Selection, split_selectors, validate
        from tokaudit.report.report import Report
        from tokaudit.roundtrip.choice import CODES as PARSER_CODES
        from tokaudit.roundtrip.analysis import add_round_trip
        from tokaudit.roundtrip.choice import ParserChoice, check_choice, parse_kwargs
        from tokaudit.scan import load_model
        from tokaudit.template.analysis import CODES
        from tokaudit.template.run import TemplateOptions, parse_engine_list, template_model, templates_of

        config = load_config()
        stacks = tuple(s.strip() for s in stack.split(",") if s.strip()) if stack else config.stacks
        choice = ParserChoice(stacks or None, tool_parser or config.tool_parser, reasoning_parser or config.reasoning_parser,
                              parse_kwargs(chat_template_kwargs))
        check_choice(choice, "--stack" if stack else "tool.tokaudit.stacks")
        known = [(code, meta.name) for code, meta in {**CODES, **PARSER_CODES}.items()]
        cli_select, cli_ignore = split_selectors(select), split_selectors(ignore)
        validate(cli_select, known, "--select")
        validate(cli_ignore, known, "--ignore")
        selection = Selection(cli_select, cli_ignore)
        options = TemplateOptions(engines=parse_engine_list(engine), messages=messages, tools=tools, template=template_file)
        # parsing a large tokenizer.json: see tokaudit.collector (frozen after: the model lives to the end)
        with collector_paused(freeze=True):
            model = load_model(target, revision)
            result, findings = template_model(model, options)
            findings += add_round_trip(model, templates_of(model, options), choice, result.data)
        findings = [f for f in findings if selection.chosen(f.code, f.name)]
        emit(Report("template", [result], findings), fmt, output, fail_on, quiet, color)
