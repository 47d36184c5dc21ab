"""``tokaudit template`` and the scan rule family: choose templates, conversations and engines, render, analyse."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokaudit.checks.literals import LiteralClassifier, literals_in
from tokaudit.errors import InputError
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Finding
from tokaudit.report.report import TargetResult
from tokaudit.template.analysis import ConversationRun, TemplateRun, analyse, excerpt, first_difference, render_template, tokens_of
from tokaudit.template.conversations import builtin_conversations, load_messages, load_tools, with_tools
from tokaudit.template.engines import engine_info, make_engines
from tokaudit.template.renders import ENGINE_NAMES, Budget
from tokaudit.template.serving import ServingEncoder
from tokaudit.template.source import TemplateSource, file_template, model_templates, special_token_context


@dataclass
class TemplateOptions:
    engines: list[str] = field(default_factory=lambda: list(ENGINE_NAMES))
    messages: Path | None = None
    tools: Path | None = None
    template: Path | None = None
    budget: Budget = Budget()
    #: tokenize every render (the command); the scan tokenizes only what a rule needs
    tokenize: bool = True


def parse_engine_list(value: str | None) -> list[str]:
    if not value:
        return list(ENGINE_NAMES)
    names = [n.strip() for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in ENGINE_NAMES]
    if unknown or not names:
        raise InputError(f"unknown engine {unknown[0] if unknown else value!r} (choose from {', '.join(ENGINE_NAMES)})", key="--engine")
    return list(dict.fromkeys(names))


def templates_of(model: TokenizerModel, options: TemplateOptions) -> list[TemplateSource]:
    """``--template FILE``, else the target's own templates."""
    return [file_template(options.template)] if options.template is not None else model_templates(model)


def run_templates(model: TokenizerModel, options: TemplateOptions) -> tuple[list[TemplateRun], ServingEncoder, list[Any]]:
    templates = templates_of(model, options)
    engines = make_engines(options.engines, options.budget)
    special = special_token_context(model)
    # read the files first: a malformed --messages / --tools is exit 2 even without a template
    user_convs = load_messages(options.messages) if options.messages is not None else None
    tools = load_tools(options.tools) if options.tools is not None else None
    runs = []
    for t in templates:
        convs = user_convs if user_convs is not None else builtin_conversations(t.text, t.name)
        if tools is not None:
            convs = with_tools(convs, tools)
        runs.append(render_template(t, convs, engines, special, probe_headers=user_convs is None))
    return runs, ServingEncoder(model), engines


def template_model(model: TokenizerModel, options: TemplateOptions) -> tuple[TargetResult, list[Finding]]:
    """The ``template`` command on one model: every render, its ids, and the TA8xx findings."""
    runs, encoder, engines = run_templates(model, options)
    if not runs:
        raise InputError("no chat template: the target has neither chat_template.jinja nor a chat_template in "
                         "tokenizer_config.json (pass --template FILE)", file=model.target)
    if options.tokenize:
        for trun in runs:
            for crun in trun.conversations:
                for r in crun.renders:
                    tokens_of(crun, r, encoder)
    classifier = LiteralClassifier(model)
    findings = [f.with_target(model.target) for f in analyse(model, runs, encoder, classifier)]
    return TargetResult(model.target, result_data(runs, encoder, engines, classifier)), findings


def result_data(runs: list[TemplateRun], encoder: ServingEncoder, engines: list[Any], classifier: LiteralClassifier) -> dict[str, Any]:
    conversations = []
    for trun in runs:
        for crun in trun.conversations:
            conversations.append({
                "name": crun.label,
                "template": trun.template.name,
                "origin": crun.conversation.origin,
                "add_generation_prompt": crun.conversation.add_generation_prompt,
                "required": crun.conversation.required,
                "renders": [{"engine": r.engine, "text": r.text, "error": r.error, "error_kind": r.kind,
                             "ids": crun.ids.get(r.engine),
                             "controls": [[m.start(), m.end()] for m in literals_in(r.text or "") if classifier.verdict(m.group()).control]} for r in crun.renders],
                "divergence": _divergence(crun),
            })
    return {
        "template": runs[0].template.to_json(),
        "templates": [t.template.to_json() for t in runs],
        "engines": [engine_info(e) for e in engines],
        "tokenizer": {"name": encoder.name, "error": encoder.error,
                      "prepends": None if encoder.prefix is None else {"token": encoder.prefix.token, "id": encoder.prefix.token_id,
                                                                      "setting": encoder.prefix.setting}},
        "conversations": conversations,
    }


def _divergence(crun: ConversationRun) -> dict[str, Any] | None:
    """Where the first two engines' texts (and ids) first differ, with an excerpt of each side."""
    ok = [r for r in crun.renders if r.ok]
    if len(ok) < 2 or ok[0].text == ok[1].text:
        return None
    a, b = ok[0], ok[1]
    assert a.text is not None and b.text is not None
    at = first_difference(a.text, b.text)
    ids_a, ids_b = crun.ids.get(a.engine), crun.ids.get(b.engine)
    token_at = None
    if ids_a is not None and ids_b is not None and ids_a != ids_b:
        token_at = next((i for i, (x, y) in enumerate(zip(ids_a, ids_b)) if x != y), min(len(ids_a), len(ids_b)))
    return {"position": at, "token_position": token_at,
            "sides": [{"engine": r.engine, "excerpt": excerpt(r.text or "", at)} for r in (a, b)]}
