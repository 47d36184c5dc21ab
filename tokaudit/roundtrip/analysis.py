"""The parser round trip of a model's chat templates and its findings (TA820-TA825).

For each template that teaches a tool call: the assistant turn (:mod:`tokaudit.template.turn`), cut and
tokenized (:mod:`tokaudit.roundtrip.case`), decoded and parsed by every parser of every stack
(:mod:`tokaudit.roundtrip.run`). With a named parser (``--tool-parser`` / ``--reasoning-parser``, or the same keys
in ``[tool.tokaudit]``) its failures are errors; without one, a note says which parsers recover the calls. The
run's record is :mod:`tokaudit.roundtrip.parser_run`, its findings :mod:`tokaudit.roundtrip.findings`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tokaudit.errors import InputError
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.parsers.reasoning_table import reasoning_parsers
from tokaudit.parsers.tool_table import tool_parsers
from tokaudit.parsers.parse import template_state
from tokaudit.report.finding import Finding
from tokaudit.roundtrip.case import Case, build_case
from tokaudit.roundtrip.choice import ParserChoice
from tokaudit.roundtrip.findings import parser_findings
from tokaudit.roundtrip.parser_run import ParserRun
from tokaudit.roundtrip.run import Decoder, evaluate_stack
from tokaudit.template.renders import Budget
from tokaudit.template.source import TemplateSource, special_token_context
from tokaudit.template.stacks import profile as stack_profile
from tokaudit.template.stacks.profile import StackProfile
from tokaudit.template.turn import SENTINEL_REASONING, RenderRequest, Turn, generation_suffix, render_turn, renders_call


#: The chat-template kwargs tried to find the one that turns a reasoning prefill off.
TOGGLES = ("enable_thinking", "thinking", "reasoning")


def _decoder(case: Case, model: TokenizerModel | None, tokenizer: Any) -> Decoder:
    from tokaudit.roundtrip.decode import model_decoder, text_decoder

    return text_decoder(case) if model is None else model_decoder(case, model, tokenizer)


def _toggle(render: RenderRequest, state: str | None) -> str | None:
    """``kwarg=value`` that changes what the generation prompt does to reasoning, or None."""
    for kwarg in TOGGLES:
        for value in (False, True):
            suffix = generation_suffix(render, {kwarg: value})
            if suffix is not None and template_state(suffix) != state:
                return f"{kwarg}={str(value).lower()}"
    return None


def profile_render(renderer: Any, profile: StackProfile) -> RenderRequest:
    """Renders a probe request as ``profile``'s stack does: its request->context rules and engine configuration (a
    stack whose own engine is not wired, llama.cpp's, renders as transformers does)."""
    if (
        profile.engine.kind == "llama.cpp"
    ):  # the round trip does not render through llama-server: transformers' stands for it
        profile = stack_profile("transformers")
    engine = profile.engine
    as_sent = replace(profile, rules=replace(profile.rules, arguments="as-sent"))
    text = renderer.text_for(profile)

    def render(request: dict[str, Any], as_string: bool) -> Any:
        reply = bool(request["messages"]) and request["messages"][-1].get("role") == "assistant"
        ctx = renderer.context(
            as_sent if as_string else profile, request, request["add_generation_prompt"], reply=reply
        )
        return renderer.render(engine, text, ctx)

    return render


def run_template(
    model: TokenizerModel | None,
    template: TemplateSource,
    choice: ParserChoice,
    *,
    tokenize: bool = True,
    budget: Budget = Budget(),
) -> ParserRun:
    """The round trip of one template (``model`` None or ``tokenize`` False: at text level, markers taken as tokens):
    each stack's assistant turn rendered through its own profile, decoded and parsed by its parsers. Stacks whose
    turns come out the same share one case."""
    from tokaudit.template.rendering import Renderer

    special = special_token_context(model) if model is not None else {}
    renderer = Renderer(template, special, budget)
    run = ParserRun(template)
    kwargs = dict(choice.kwargs)
    stacks = [s for s in choice.chosen_stacks() if not choice.named or _offers(s, choice)]
    encoder = None
    if model is not None and tokenize:
        from tokaudit.template.serving import ServingEncoder

        encoder = ServingEncoder(model)
    decoders: dict[tuple[str, str], Decoder] = {}
    for stack in stacks:
        render = profile_render(renderer, stack_profile(stack))
        turn, why = render_turn(render, kwargs)
        if turn is None:
            assert why is not None  # render_turn gives the reason when there is no turn
            run.renders[stack] = why
            continue
        if run.case is None:  # the first stack that renders the turn: the run's case and generation prompt
            run.generation = generation_suffix(render, kwargs) or ""
            run.state = template_state(run.generation)
            if run.state is not None:
                run.toggle = _toggle(render, run.state)
        key = (turn.prompt, turn.full)
        dec = decoders.get(key)
        if dec is None:
            case = build_case(template.name, turn, model if tokenize else None, encoder, special)
            case.extra["template"] = template.text
            dec = decoders[key] = _case_decoder(case, model if tokenize else None, encoder)
        if run.case is None:
            run.case = dec.case
        elif dec.case is not run.case:
            run.renders[stack] = "its own turn: " + dec.case.text
        parsers = stack_profile(stack).parsers or stack
        if (
            renders_call(dec.case.text)
            or SENTINEL_REASONING in dec.case.text
            or any(p.constrained for p in tool_parsers(parsers))
        ):
            rows = None
            if choice.grammar(stack) != "built-in":
                from tokaudit.roundtrip.installed import stack_rows, tokenizer_dir

                rows = stack_rows(
                    dec,
                    parsers,
                    choice.grammar(stack),
                    tokenizer_dir(model) if model is not None else ".",
                    *_named(choice),
                    strict=choice.parsers == "installed",
                )
            run.rows += evaluate_stack(dec, parsers, *_named(choice)) if rows is None else rows
    if run.case is None:
        run.error = next(iter(run.renders.values()), "no stack renders the turn")
    return run


def _case_decoder(case: Case, model: TokenizerModel | None, encoder: Any) -> Decoder:
    try:
        return _decoder(case, model if case.output_ids is not None else None, encoder and encoder.tokenizer)
    except InputError as exc:  # no tokenizer to decode with (a GGUF replay cannot load): the rendered text
        case.tokenizer_note = f"no decoder: {exc}; the output is the rendered text"
        return _decoder(case, None, None)


def _named(choice: ParserChoice) -> tuple[list[str] | None, list[str] | None]:
    """Named: exactly the deploy's pair (an unnamed kind is no parser); unnamed: every pair."""
    if not choice.named:
        return None, None
    return ([choice.tool_parser] if choice.tool_parser is not None else []), (
        [choice.reasoning_parser] if choice.reasoning_parser is not None else []
    )


def _offers(stack: str, choice: ParserChoice) -> bool:
    return (choice.tool_parser is None or any(p.name == choice.tool_parser for p in tool_parsers(stack))) and (
        choice.reasoning_parser is None or any(p.name == choice.reasoning_parser for p in reasoning_parsers(stack))
    )


def model_templates_runs(
    model: TokenizerModel,
    templates: list[TemplateSource],
    choice: ParserChoice,
    *,
    tokenize: bool = True,
    budget: Budget = Budget(),
) -> list[ParserRun]:
    return [run_template(model, t, choice, tokenize=tokenize, budget=budget) for t in templates]


def rows_json(runs: list[ParserRun]) -> list[dict[str, Any]]:
    """The ``parsers`` array: one entry per (template, stack, tool parser, reasoning parser)."""
    return [{"template": run.template.name, **row.to_json()} for run in runs for row in run.rows]


def turn_of(run: ParserRun) -> Turn | None:
    return None if run.case is None else run.case.turn


def add_round_trip(
    model: TokenizerModel, templates: list[TemplateSource], choice: ParserChoice, data: dict[str, Any]
) -> list[Finding]:
    """The ``template`` command's round trip: ``parser_runs``, ``parsers`` and ``parser_choice`` in its result data,
    and the findings."""
    runs = (
        model_templates_runs(model, templates, choice) if choice.chosen_stacks() else []
    )  # no selected stack has parsers
    data["parser_runs"] = [r.to_json() for r in runs]
    data["parsers"] = rows_json(runs)
    data["parser_choice"] = {
        "stacks": choice.chosen_stacks(),
        "tool_parser": choice.tool_parser,
        "chat_template_kwargs": dict(choice.kwargs),
        "reasoning_parser": choice.reasoning_parser,
        "named": choice.named,
        "parsers": choice.parsers,
        "grammar": {s: choice.grammar(s) for s in choice.chosen_stacks()},
    }
    return [f.with_target(model.target) for f in parser_findings(runs, choice)]
