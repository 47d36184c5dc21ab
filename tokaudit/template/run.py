"""``tokaudit template``: choose templates, requests and stacks, render, tokenize, analyse."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokaudit.checks.literals import LiteralClassifier, literals_in
from tokaudit.errors import InputError
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Finding
from tokaudit.report.report import TargetResult
from tokaudit.template.analysis import Tokens, analyse, concerns, excerpt, first_difference, ordered
from tokaudit.template.engines import engine_version
from tokaudit.template.rendering import RequestRun, TemplateRun, render_template
from tokaudit.template.renders import Budget
from tokaudit.template.requests import builtin_requests, load_messages, load_tools, with_tools
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


def template_model(model: TokenizerModel, options: TemplateOptions) -> tuple[TargetResult, list[Finding]]:
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
    return TargetResult(
        model.target, result_data(runs, encoder, tokens, classifier, options.stacks), source=model.source
    ), findings


def result_data(
    runs: list[TemplateRun],
    encoder: ServingEncoder,
    tokens: Tokens,
    classifier: LiteralClassifier,
    stacks: tuple[str, ...],
) -> dict[str, Any]:
    requests = []
    for trun in runs:
        for rrun in trun.requests:
            requests.append(
                {
                    "name": rrun.label,
                    "template": trun.template.name,
                    "origin": rrun.request.origin,
                    "add_generation_prompt": rrun.request.add_generation_prompt,
                    "required": rrun.request.required,
                    "renders": [
                        {
                            "stack": s,
                            "engine": sr.render.engine,
                            "text": sr.render.text,
                            "error": sr.render.error,
                            "error_kind": sr.render.kind,
                            "ids": tokens.of(sr.render.text),
                            "controls": [
                                [m.start(), m.end()]
                                for m in literals_in(sr.render.text or "")
                                if classifier.verdict(m.group()).control
                            ],
                        }
                        for s, sr in ((s, rrun.stacks[s]) for s in ordered(rrun.stacks))
                    ],
                    "divergence": _divergence(rrun, tokens),
                }
            )
    return {
        "template": runs[0].template.to_json(),
        "templates": [t.template.to_json() for t in runs],
        "stacks": [_stack_info(s, runs) for s in stacks],
        "tokenizer": {
            "name": encoder.name,
            "error": encoder.error,
            "prepends": None
            if encoder.prefix is None
            else {"token": encoder.prefix.token, "id": encoder.prefix.token_id, "setting": encoder.prefix.setting},
        },
        "distinct_renders": sum(t.distinct_renders for t in runs),
        "conversations": requests,
    }


def _stack_info(stack: str, runs: list[TemplateRun]) -> dict[str, Any]:
    p = profile(stack)
    skipped = next((t.skipped[stack] for t in runs if stack in t.skipped), None)
    return {
        "id": p.id,
        "title": p.title,
        "version": p.version,
        "source": p.source,
        "engine": {
            "name": p.engine.name,
            "kind": p.engine.kind,
            "pins": p.engine.pins,
            "library": engine_version(p.engine.kind),
        },
        "rendered": skipped is None,
        "skipped": skipped,
    }


def _divergence(rrun: RequestRun, tokens: Tokens) -> dict[str, Any] | None:
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
        sides.append(
            {
                "stacks": groups[text],
                "position": at,
                "token_position": token_at,
                "excerpt": excerpt(text, at),
                "base_excerpt": excerpt(base, at),
            }
        )
    return {"base": groups[base], "groups": [groups[t] for t in texts], "sides": sides}
