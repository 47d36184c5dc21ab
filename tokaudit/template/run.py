"""``tokaudit template``: choose templates, requests and stacks, render, tokenize, analyse."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from tokaudit.checks.literals import LiteralClassifier, literals_in
from tokaudit.errors import InputError
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Finding
from tokaudit.template.analysis import analyse
from tokaudit.template.common import Tokens, concerns, excerpt, first_difference, ordered
from tokaudit.template.engines import engine_version
from tokaudit.template.rendering import RequestRun, TemplateRun, render_template
from tokaudit.template.renders import Budget
from tokaudit.template.requests import builtin_requests, load_messages, load_tools, with_tools
from tokaudit.template.records import (
    Conversation,
    Divergence,
    DivergenceSide,
    EngineInfo,
    Prepend,
    StackInfo,
    StackRender,
    TemplateRef,
    TokenizerInfo,
)
from tokaudit.template.result import TemplateResult
from tokaudit.template.serving import ServingEncoder
from tokaudit.template.source import (
    TemplateSource,
    file_template,
    model_templates,
    source_disagreements,
    special_token_context,
)
from tokaudit.template.stacks import STACK_NAMES, profile


@dataclass
class TemplateOptions:
    stacks: tuple[str, ...] = STACK_NAMES
    messages: Path | None = None
    tools: Path | None = None
    template: Path | None = None
    budget: Budget = Budget()
    #: tokenize every render (the command); the scan tokenizes only what a rule needs
    tokenize: bool = True


def templates_of(model: TokenizerModel, options: TemplateOptions) -> list[TemplateSource]:
    """``--template FILE``, else the target's own templates."""
    return [file_template(options.template)] if options.template is not None else model_templates(model)


def run_templates(model: TokenizerModel, options: TemplateOptions) -> tuple[list[TemplateRun], ServingEncoder]:
    templates = templates_of(model, options)
    special = special_token_context(model)
    # read the files first: a malformed --messages / --tools is exit 2 even without a template
    user_requests = load_messages(options.messages) if options.messages is not None else None
    tools = load_tools(options.tools) if options.tools is not None else None
    profiles = [profile(s) for s in options.stacks]
    runs = []
    for t in templates:
        requests = user_requests if user_requests is not None else builtin_requests(t.text, t.name)
        if tools is not None:
            requests = with_tools(requests, tools)
        runs.append(render_template(t, requests, profiles, special, options.budget, probes=user_requests is None))
    return runs, ServingEncoder(model)


def template_model(model: TokenizerModel, options: TemplateOptions) -> tuple[TemplateResult, list[Finding]]:
    """The ``template`` command on one model: every render, its ids, and the TA8xx findings for the stacks chosen."""
    runs, encoder = run_templates(model, options)
    if not runs:
        raise InputError(
            "no chat template: the target has neither chat_template.jinja nor a chat_template in "
            "tokenizer_config.json (pass --template FILE)",
            file=model.target,
        )
    classifier = LiteralClassifier(model)
    tokens = Tokens(encoder, classifier)
    if options.tokenize:
        for trun in runs:
            for rrun in trun.requests:
                for sr in rrun.stacks.values():
                    tokens.of(sr.render.text)
    found = analyse(model, runs, encoder, classifier)
    if options.template is None:
        from tokaudit.report.finding import catalog_code

        code = catalog_code("TA808")
        found += [code.finding(d.message, location=d.location, details=d.details) for d in source_disagreements(model)]
    findings = [f.with_target(model.target) for f in found if concerns(f, options.stacks)]
    return template_result(model, runs, encoder, tokens, classifier, options.stacks), findings


def template_result(
    model: TokenizerModel,
    runs: list[TemplateRun],
    encoder: ServingEncoder,
    tokens: Tokens,
    classifier: LiteralClassifier,
    stacks: tuple[str, ...],
) -> TemplateResult:
    conversations = []
    for trun in runs:
        for rrun in trun.requests:
            conversations.append(
                Conversation(
                    name=rrun.label,
                    template=trun.template.name,
                    origin=rrun.request.origin,
                    add_generation_prompt=rrun.request.add_generation_prompt,
                    required=rrun.request.required,
                    renders=tuple(
                        StackRender(
                            stack=s,
                            engine=sr.render.engine,
                            text=sr.render.text,
                            error=sr.render.error,
                            error_kind=sr.render.kind,
                            ids=tokens.of(sr.render.text),
                            controls=tuple(
                                (m.start(), m.end())
                                for m in literals_in(sr.render.text or "")
                                if classifier.verdict(m.group()).control
                            ),
                        )
                        for s, sr in ((s, rrun.stacks[s]) for s in ordered(rrun.stacks))
                    ),
                    divergence=_divergence(rrun, tokens),
                )
            )
    prefix = encoder.prefix
    return TemplateResult(
        model.target,
        model.source,
        templates=tuple(_ref(t.template) for t in runs),
        stacks=tuple(_stack_info(s, runs) for s in stacks),
        tokenizer=TokenizerInfo(
            encoder.name,
            encoder.error,
            None if prefix is None else Prepend(prefix.token, prefix.token_id, prefix.setting),
        ),
        distinct_renders=sum(t.distinct_renders for t in runs),
        conversations=tuple(conversations),
    )


def _ref(template: TemplateSource) -> TemplateRef:
    return TemplateRef(template.name, str(template.location))


def _stack_info(stack: str, runs: list[TemplateRun]) -> StackInfo:
    p = profile(stack)
    skipped = next((t.skipped[stack] for t in runs if stack in t.skipped), None)
    return StackInfo(
        id=p.id,
        title=p.title,
        version=p.version,
        source=p.source,
        engine=EngineInfo(p.engine.name, p.engine.kind, p.engine.pins, engine_version(p.engine.kind)),
        skipped=skipped,
    )


def _divergence(rrun: RequestRun, tokens: Tokens) -> Divergence | None:
    """Where the stacks' prompts differ: the stacks grouped by identical text, and for each group after the first
    the first differing character (and token) against the first group, with an excerpt of each side."""
    groups: dict[str, list[str]] = {}
    for stack in ordered(rrun.stacks):
        text = rrun.stacks[stack].render.text
        if text is not None:
            groups.setdefault(text, []).append(stack)
    if len(groups) < 2:
        return None
    texts = list(groups)
    base = texts[0]
    sides = []
    for text in texts[1:]:
        at = first_difference(base, text)
        ids_a, ids_b = tokens.of(base), tokens.of(text)
        token_at = None
        if ids_a is not None and ids_b is not None and ids_a != ids_b:
            token_at = next((i for i, (x, y) in enumerate(zip(ids_a, ids_b)) if x != y), min(len(ids_a), len(ids_b)))
        sides.append(DivergenceSide(tuple(groups[text]), at, token_at, excerpt(text, at), excerpt(base, at)))
    return Divergence(tuple(groups[base]), tuple(tuple(groups[t]) for t in texts), tuple(sides))
