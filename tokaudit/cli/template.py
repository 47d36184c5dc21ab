"""``tokaudit template TARGET``"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

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
    ParsersOpt,
    QuietOpt,
    RevisionOpt,
    SelectOpt,
    StackOpt,
    TargetArg,
    emit,
    handle_errors,
)
from tokaudit.collector import collector_paused


def template(
    target: TargetArg,
    messages: Annotated[
        Path | None,
        typer.Option(
            "--messages",
            help="JSON or JSONL file of OpenAI-style message lists (optionally with tools) "
            "rendered instead of the built-in conversations.",
            dir_okay=False,
        ),
    ] = None,
    tools: Annotated[
        Path | None,
        typer.Option("--tools", help="JSON list of tool definitions offered to every conversation.", dir_okay=False),
    ] = None,
    stack: StackOpt = None,
    template_file: Annotated[
        Path | None,
        typer.Option(
            "--template", help="Render this Jinja file instead of the target's chat template.", dir_okay=False
        ),
    ] = None,
    tool_parser: Annotated[
        str | None,
        typer.Option(
            "--tool-parser",
            help="The deploy's tool-call parser as the stack names it (vLLM "
            "--tool-call-parser, SGLang --tool-call-parser): its failures are errors.",
        ),
    ] = None,
    reasoning_parser: Annotated[
        str | None, typer.Option("--reasoning-parser", help="The deploy's reasoning parser as the stack names it.")
    ] = None,
    chat_template_kwargs: Annotated[
        str | None,
        typer.Option(
            "--chat-template-kwargs",
            help="The request's chat_template_kwargs as a JSON object, e.g. "
            "'{\"thinking\": true}' (the round trip renders and parses with them).",
        ),
    ] = None,
    parsers: ParsersOpt = None,
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
    """Render the chat template the way each serving stack does (vLLM, SGLang, smg, TGI, mistral.rs, Dynamo...),
    then tokenize what they render.

    \b
    Examples:
      tokaudit template models/qwen3
      tokaudit template models/qwen3 --stack vllm,tgi --messages chat.json
      tokaudit template models/qwen3 --stack vllm --tool-parser hermes
      tokaudit template models/qwen3 --stack vllm --parsers installed
    """
    with handle_errors(debug):
        from tokaudit.config import load_config
        from tokaudit.report.finding import catalog_codes
        from tokaudit.report.policy import Selection, split_selectors, validate
        from tokaudit.report.report import Report
        from tokaudit.roundtrip.analysis import add_round_trip
        from tokaudit.roundtrip.choice import CODES as PARSER_CODES
        from tokaudit.roundtrip.choice import ParserChoice, check_choice, parse_kwargs, parsers_mode, resolve_parsers
        from tokaudit.model.load import load_model
        from tokaudit.template.common import CODES
        from tokaudit.template.run import TemplateOptions, template_model, templates_of
        from tokaudit.template.stacks import STACK_NAMES, parse_stacks

        config = load_config()
        where = "--stack" if stack else "tool.tokaudit.stacks"
        stacks = parse_stacks(stack) if stack else parse_stacks(config.stacks or None, where, config.name)
        choice = ParserChoice(
            stacks if (stack or config.stacks) else None,
            tool_parser or config.tool_parser,
            reasoning_parser or config.reasoning_parser,
            parse_kwargs(chat_template_kwargs),
            parsers_mode(parsers, config.parsers),
        )
        check_choice(choice, where, STACK_NAMES)
        known = [(code, meta.name) for code, meta in {**CODES, **PARSER_CODES}.items()] + [
            (c.code, c.name) for c in catalog_codes("TA808")
        ]
        cli_select, cli_ignore = split_selectors(select), split_selectors(ignore)
        validate(cli_select, known, "--select")
        validate(cli_ignore, known, "--ignore")
        selection = Selection(cli_select, cli_ignore)
        options = TemplateOptions(stacks=stacks, messages=messages, tools=tools, template=template_file)
        # parsing a large tokenizer.json: see tokaudit.collector (frozen after: the model lives to the end)
        with collector_paused(freeze=True):
            model = load_model(target, revision)
            choice = resolve_parsers(choice)
            result, findings = template_model(model, options)
            round_trip: dict[str, Any] = {}
            findings += add_round_trip(model, templates_of(model, options), choice, round_trip)
            result = replace(result, round_trip=round_trip)
        findings = [f for f in findings if selection.chosen(f.code, f.name)]
        emit(Report("template", [result], findings), fmt, output, fail_on, quiet, color)
