"""The parser round trip of a model's chat templates and its findings (TA820-TA825).

For each template that teaches a tool call: the assistant turn (:mod:`tokaudit.template.turn`), cut and
tokenized (:mod:`tokaudit.roundtrip.case`), decoded and parsed by every parser of every stack
(:mod:`tokaudit.roundtrip.run`). With a named parser (``--tool-parser`` / ``--reasoning-parser``, or the same keys
in ``[tool.tokaudit]``) its failures are errors; without one, a note says which parsers recover the calls.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from tokaudit.errors import InputError
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.parsers.reasoning_table import reasoning_parsers
from tokaudit.parsers.tool_table import tool_parsers
from tokaudit.parsers.parse import template_state
from tokaudit.report.finding import Finding, Severity
from tokaudit.roundtrip.case import Case, build_case
from tokaudit.roundtrip.choice import CODES, ParserChoice
from tokaudit.roundtrip.run import Decoder, Row, evaluate_stack
from tokaudit.template.renders import Budget
from tokaudit.template.source import TemplateSource, special_token_context
from tokaudit.template.stacks import profile as stack_profile
from tokaudit.template.stacks.profile import StackProfile
from tokaudit.template.turn import SENTINEL_REASONING, RenderRequest, Turn, generation_suffix, render_turn, renders_call

(TOOL_CALL, REASONING, STARTUP, STREAM, MARKER_IN_PROMPT, PREFILL) = CODES.values()

#: The chat-template kwargs tried to find the one that turns a reasoning prefill off.
TOGGLES = ("enable_thinking", "thinking", "reasoning")


@dataclass
class ParserRun:
    """One template's round trip: the case, the rows, and what its generation prompt does to reasoning."""

    template: TemplateSource
    case: Case | None = None
    error: str | None = None
    rows: list[Row] = field(default_factory=list)
    #: the text add_generation_prompt adds, and what it does to reasoning ("open", "closed", None)
    generation: str = ""
    state: str | None = None
    #: the chat-template kwarg whose false value changes what the generation prompt does to reasoning
    toggle: str | None = None
    #: per stack whose turn is not the run's case: why it renders none, or its own turn
    renders: dict[str, str] = field(default_factory=dict)

    @property
    def calls_rendered(self) -> bool:
        return self.case is not None and renders_call(self.case.text)

    @property
    def reasoning_rendered(self) -> bool:
        return self.case is not None and SENTINEL_REASONING in self.case.text

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per stack: the tool parsers that recover the calls, the reasoning parsers that recover the reasoning with
        one of them, and the pairs that do both."""
        out: dict[str, dict[str, Any]] = {}
        for row in self.rows:
            s = out.setdefault(row.stack, {"tool_parsers": [], "reasoning_parsers": [], "pairs": []})
            if row.tool_calls == "constrained":
                s["constrained"] = row.tool_parser
            if row.tool_calls == "ok" and row.tool_parser not in s["tool_parsers"]:
                s["tool_parsers"].append(row.tool_parser)
            if (
                row.reasoning == "ok"
                and row.reasoning_parser not in s["reasoning_parsers"]
                and row.tool_calls in ("ok", None)
            ):
                s["reasoning_parsers"].append(row.reasoning_parser)
            if row.tool_calls == "ok" and row.reasoning == "ok" and row.reasoning_parser is not None:
                s["pairs"].append(f"{row.tool_parser}+{row.reasoning_parser}")
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "template": self.template.to_json(),
            "error": self.error,
            "tokenizer": None if self.case is None else self.case.tokenizer_note,
            "output": None if self.case is None else self.case.text,
            "output_ids": None if self.case is None else self.case.output_ids,
            "calls_rendered": self.calls_rendered,
            "reasoning_rendered": self.reasoning_rendered,
            "generation_prompt": {"text": self.generation, "reasoning": self.state, "toggle": self.toggle},
            "summary": self.summary(),
            "stack_renders": self.renders,
        }


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


def _where(run: ParserRun) -> dict[str, Any]:
    return {"location": run.template.location}


def _pair(row: Row) -> str:
    return "+".join(n for n in (row.tool_parser, row.reasoning_parser) if n) or "no parser"


_STAGES = {
    "format": "the parser does not read the format the template teaches",
    "skip_special_tokens": "skip_special_tokens deleted the call's special markers before the parser ran",
    "marker-not-one-token": "a marker the parser finds by token id is not one token of this tokenizer",
    "arguments": "the call is found but its arguments do not come back as the same JSON value",
    "reasoning": "the reasoning parser took the call into reasoning",
}


def named_findings(run: ParserRun, choice: ParserChoice) -> list[Finding]:
    """A named parser (pair) on each stack that offers it: its refusal, lost call, misplaced reasoning, divergence."""
    out: list[Finding] = []
    name = run.template.file
    for row in run.rows:
        details = {
            "stacks": [row.stack],
            "tool_parser": row.tool_parser,
            "reasoning_parser": row.reasoning_parser,
            "template": run.template.name,
            "stage": row.stage,
            "skip_special_tokens": row.skip_special_tokens,
        }
        pair = f"{row.stack} {_pair(row)}"
        if row.stage == "startup":
            out.append(STARTUP.finding(f"{row.reason}", details=details, **_where(run)))
            continue
        if row.tool_calls == "lost":
            out.append(
                TOOL_CALL.finding(
                    f"{pair}: the tool call {name} teaches does not come back: "
                    f"{_STAGES.get(row.stage or '', row.stage)}",
                    details={**details, "parsed": row.to_json().get("parsed")},
                    **_where(run),
                )
            )
        elif row.tool_calls == "ok" and row.without_tools == "lost":
            out.append(
                TOOL_CALL.finding(
                    f"{pair}: the call comes back only because the request carries tools; a request without "
                    "tools keeps skip_special_tokens on and loses its markers",
                    severity=Severity.NOTE,
                    details={**details, "stage": "skip_special_tokens"},
                    **_where(run),
                )
            )
        if row.reasoning in ("overran", "leaked") and (
            row.reasoning_parser is not None or choice.reasoning_parser is None and run.reasoning_rendered
        ):
            what = (
                "the call or content went into reasoning"
                if row.reasoning == "overran"
                else "reasoning went into content"
            )
            out.append(
                REASONING.finding(f"{pair}: {what}", details={**details, "reasoning": row.reasoning}, **_where(run))
            )
        if row.stream_differs:
            out.append(
                STREAM.finding(
                    f"{pair}: the streamed parse differs from the whole one (steps of "
                    f"{', '.join(map(str, row.stream_differs))} ids)",
                    details={
                        **details,
                        "steps": row.stream_differs,
                        "streamed": row.details.get("streamed"),
                        "whole": row.to_json().get("parsed"),
                    },
                    **_where(run),
                )
            )
    return out


def verdict(run: ParserRun) -> str:
    """One line: per stack, the tool parsers (and pairs) that recover this template's calls and reasoning."""
    parts = []
    for stack, s in run.summary().items():
        tools = ", ".join(s["tool_parsers"]) or (
            "its own JSON grammar, not the template's format" if s.get("constrained") else "none"
        )
        pairs = (
            f" (with reasoning: {', '.join(s['pairs'][:4])}{', ...' if len(s['pairs']) > 4 else ''})"
            if s["pairs"] and run.reasoning_rendered
            else ""
        )
        parts.append(f"{stack}: {tools}{pairs}")
    return "; ".join(parts)


def unnamed_findings(run: ParserRun) -> list[Finding]:
    """No parser named: a note with the verdict, and a warning for each recovering pair whose streamed parse differs."""
    out: list[Finding] = []
    if not run.calls_rendered:
        return out
    summary = run.summary()
    lost = [s for s, v in summary.items() if not v["tool_parsers"] and not v.get("constrained")]
    message = f"tool calls of {run.template.file} recovered by {verdict(run)}"
    if lost:
        message = f"no parser of {', '.join(lost)} recovers the tool call {run.template.file} teaches; " + message
    out.append(
        TOOL_CALL.finding(
            message,
            severity=Severity.NOTE,
            details={"stacks": lost, "template": run.template.name, "summary": summary},
            **_where(run),
        )
    )
    for row in run.rows:
        if row.tool_calls == "ok" and row.stream_differs and row.reasoning_parser is None:
            out.append(
                STREAM.finding(
                    f"{row.stack} {row.tool_parser}: recovers the call whole, but not streamed in steps of "
                    f"{', '.join(map(str, row.stream_differs))} ids",
                    details={
                        "stacks": [row.stack],
                        "tool_parser": row.tool_parser,
                        "steps": row.stream_differs,
                        "streamed": row.details.get("streamed"),
                    },
                    **_where(run),
                )
            )
    return out


def prompt_findings(run: ParserRun) -> list[Finding]:
    """What the generation prompt does to reasoning: a closed block (TA824) or an opened one (TA825)."""
    if run.case is None or run.state is None:
        return []
    if run.state == "closed":
        hurt = sorted(
            {
                f"{r.stack} {r.reasoning_parser}"
                for r in run.rows
                if r.reasoning_parser is not None and r.reasoning == "overran"
            }
        )
        stacks = sorted({s.split(" ")[0] for s in hurt})
        tail = f"; parsers that misplace the output: {', '.join(hurt)}" if hurt else ""
        return [
            MARKER_IN_PROMPT.finding(
                f"the generation prompt of {run.template.file} already closes reasoning "
                f"({run.generation.strip()!r}){tail}",
                details={"stacks": stacks, "generation_prompt": run.generation, "parsers": hurt, "toggle": run.toggle},
                **_where(run),
            )
        ]
    toggle = f"; {run.toggle} turns it off" if run.toggle else ""
    return [
        PREFILL.finding(
            f"the generation prompt of {run.template.file} opens reasoning ({run.generation.strip()!r}): output cut by "
            f"max_tokens is reasoning, not content{toggle}",
            details={"stacks": [], "generation_prompt": run.generation, "toggle": run.toggle},
            **_where(run),
        )
    ]


def parser_findings(runs: list[ParserRun], choice: ParserChoice) -> list[Finding]:
    out: list[Finding] = []
    for run in runs:
        out += named_findings(run, choice) if choice.named else unnamed_findings(run)
        out += prompt_findings(run)
    return out


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
