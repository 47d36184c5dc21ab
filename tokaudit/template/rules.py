"""The TA8xx rules inside ``scan`` (and TA205): the built-in requests for every selected stack profile, a
tighter budget, and TA808 (the template's sources).

The rules share one analysis per model (rendering is the cost, not the rules), computed by the first of them
that runs and kept for that model object. ``--stack`` / ``stacks = [...]`` reach them through
:data:`SELECTED_STACKS` (a context variable the command sets).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextvars import ContextVar
from threading import Lock
from typing import Any

from tokaudit.checks.common import template_markers
from tokaudit.checks.literals import LiteralClassifier
from tokaudit.checks.registry import rule
from tokaudit.ids import IdRanges
from tokaudit.model.memo import ModelMemo
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Finding, catalog_code
from tokaudit.report.report import installed_version
from tokaudit.result_cache import cache_key, conforms, load, store
from tokaudit.template.analysis import analyse
from tokaudit.template.common import CODES, concerns, ordered
from tokaudit.template.rendering import TemplateRun, render_template
from tokaudit.template.run_json import run_from_json, run_to_json
from tokaudit.template.renders import Budget
from tokaudit.template.requests import builtin_requests
from tokaudit.template.source import TemplateSource, model_templates, source_disagreements, special_token_context
from tokaudit.template.stacks import STACK_NAMES, profile

#: Inside scan a hostile template costs at most about a second per engine configuration.
SCAN_BUDGET = Budget(seconds=1.0, fuel=10_000_000, total_seconds=5.0)

#: The stacks ``scan`` checks (``--stack`` / ``[tool.tokaudit] stacks``); every profile by default.
SELECTED_STACKS: ContextVar[tuple[str, ...]] = ContextVar("tokaudit_selected_stacks", default=STACK_NAMES)

#: The five rules share one run per live model and stack selection (a fleet scan kept 16 models alive: ~300 MB).
_memo: ModelMemo[dict[tuple[str, ...], tuple[list[Finding], list[TemplateRun]]]] = ModelMemo()
_lock = Lock()


def template_analysis(model: TokenizerModel) -> tuple[list[Finding], list[TemplateRun]]:
    """Every TA8xx finding of a model's own templates for the selected stacks, and the runs (computed once per live
    model object and stack selection)."""
    stacks = SELECTED_STACKS.get()
    per_selection = _memo.get(model, dict)
    with _lock:
        hit = per_selection.get(stacks)
    if hit is None:
        hit = _template_analysis(model, stacks)
        with _lock:
            per_selection[stacks] = hit
    return hit


def _template_analysis(model: TokenizerModel, stacks: tuple[str, ...]) -> tuple[list[Finding], list[TemplateRun]]:
    templates = model_templates(model)
    found: list[Finding] = []
    runs: list[TemplateRun] = []
    if templates:
        special = special_token_context(model)
        runs = [_render(t, special, stacks) for t in templates]
        # no full-prompt tokenization inside scan (loading tokenizer.json again costs more than the whole family):
        # TA802 stays an error without comparing ids, TA803 reads the post-processor statically
        found = [f for f in analyse(model, runs, None, LiteralClassifier(model)) if concerns(f, stacks)]
    return found, runs


def _render(template: TemplateSource, special: dict[str, str], stacks: tuple[str, ...]) -> TemplateRun:
    """The built-in requests rendered for the selected stacks: from the result cache when this template, these
    special tokens, these stacks and these engine versions were rendered before, else rendered (and kept when no
    render ran into a bound: Jinja2's bound is a clock, so what it cut short on a loaded machine may render whole
    on the next run; a render that completed is the same however long it took)."""
    inputs = {
        "template": template.text,
        "name": template.name,
        "special": special,
        "budget": repr(SCAN_BUDGET),
        "stacks": stacks,
        "versions": {name: installed_version(name) for name in ("jinja2", "minijinja")},
        "llama.cpp": _driver_digest(),
    }
    key = cache_key("template-render", inputs, _MODULES)
    requests = builtin_requests(template.text, template.name)
    hit = run_from_json(template, requests, load(key, _conforms))
    if hit is not None:
        return hit
    from tokaudit.template import isolated  # only on a miss: it starts the render worker

    isolated.start()
    run = render_template(template, requests, [profile(s) for s in stacks], special, SCAN_BUDGET)
    if not _ran_into_a_bound(run):
        store(key, run_to_json(run))
    return run


#: Render kinds that depend on the machine's load: a bound ran out (time, steps, size), or a render was skipped
#: because an earlier one exhausted the template's budget.
_BOUNDED = ("budget", "skipped")


def _ran_into_a_bound(run: TemplateRun) -> bool:
    return any(
        r is not None and r.kind in _BOUNDED
        for request in run.requests
        for stack in request.stacks.values()
        for r in (stack.render, stack.reference)
    )


#: The modules whose code decides a template run (a change to any of them misses the cache).
_MODULES = (
    "tokaudit.jinja_generation",
    "tokaudit.template.engines",
    "tokaudit.template.engine_base",
    "tokaudit.template.engine_jinja2",
    "tokaudit.template.engine_minijinja",
    "tokaudit.template.tojson",
    "tokaudit.template.isolated",
    "tokaudit.template.renders",
    "tokaudit.template.rendering",
    "tokaudit.template.requests",
    "tokaudit.template.prefill",
    "tokaudit.template.source",
    "tokaudit.template",
    "tokaudit.template.stacks",
    "tokaudit.template.stacks.context",
    "tokaudit.template.stacks.facts",
    "tokaudit.template.stacks.rewrites",
    "tokaudit.template.stacks.profile",
    "tokaudit.template.stacks.engines",
    "tokaudit.parsers.families",
    "tokaudit.parsers.reasoning_table",
    "tokaudit.parsers.tool_table",
    "tokaudit.worker",
    "tokaudit.template.llamacpp_engine",
    "tokaudit.template.llamacpp_build",
    *(
        f"tokaudit.template.stacks.{m}"
        for m in ("transformers", "vllm", "sglang", "smg", "tgi", "mistralrs", "llamacpp", "dynamo")
    ),
    __name__,
)


def _driver_digest() -> str:
    """llama.cpp's engine is built from the pinned sdist and tokaudit's driver: the driver's source decides renders
    too."""
    import hashlib

    from tokaudit.template.llamacpp_build import DRIVER

    return hashlib.blake2b(DRIVER.read_bytes(), digest_size=16).hexdigest()


def template_findings(model: TokenizerModel) -> list[Finding]:
    return template_analysis(model)[0]


_TEXT = {str, None}
#: A cached run (rendering.run_to_json): each distinct render once, requests and headers refer to them by index.
_RUN = {
    "stacks": [str],
    "skipped": {str: str},
    "distinct": int,
    "offers_tools": bool,
    "requests": [(str, {str: (int, {int, None}, [str])})],
    "renders": [(str, _TEXT, _TEXT, _TEXT)],
    "headers": {str: [(str, _TEXT, _TEXT, _TEXT)]},
    "prefixes": [(str, str, int, _TEXT, _TEXT, _TEXT)],
}


def _conforms(value: Any) -> bool:
    """A cached run has the shape of one and every render index it holds is one of its renders."""
    if not conforms(value, _RUN):
        return False
    count = len(value["renders"])
    return all(
        0 <= i < count for _, stacks in value["requests"] for row in stacks.values() for i in row[:2] if i is not None
    )


def _register(code: str) -> None:
    def check(model: TokenizerModel) -> Iterator[Finding]:
        yield from (f for f in template_findings(model) if f.code == code)

    check.__name__ = CODES[code].name.replace("-", "_")
    rule(code)(check)


for _code in CODES:
    _register(_code)


@rule("TA205")
def template_token_unregistered(model: TokenizerModel) -> Iterator[Finding]:
    """The static half of the template family's literal check (TA804 checks rendered prompts with the same
    classifier, so the two never disagree): bare tags no file registers are prose, not control tokens; and a
    literal only counts when it reaches a rendered prompt (functionary's ``<|NONE|>`` is a value its macros
    compare, never output)."""
    markers = template_markers(model)
    if not markers:
        return
    classifier = LiteralClassifier(model)
    bad = [(m, v) for m in markers if (v := classifier.verdict(m.text)).control and not v.ok]
    if not bad:
        return
    _, runs = template_analysis(model)
    texts: dict[str, set[str]] = {}
    for trun in runs:
        for rrun in trun.requests:
            for stack, sr in rrun.stacks.items():
                if sr.render.text is not None:
                    for marker, _ in bad:
                        if marker.text in sr.render.text:
                            texts.setdefault(marker.text, set()).add(stack)
    for marker, v in bad:
        stacks = ordered(texts.get(marker.text, ()))
        if not stacks and runs:
            continue
        yield template_token_unregistered.finding(
            f"the chat template writes {marker.text}, but {v.why()}{v.encodes()}: the model never sees the control "
            "token it was trained with.",
            location=marker.source,
            ids=IdRanges.from_ids([v.token_id]) if v.token_id is not None else None,
            details={
                "subject": marker.text,
                "token": marker.text,
                "registered_by": v.registered_by,
                "encoded_ids": v.encoded_ids,
                "encoder": v.encoder,
                "stacks": stacks,
            },
        )


_TA808 = catalog_code("TA808")


@rule("TA808")
def template_source_disagreement(model: TokenizerModel) -> Iterator[Finding]:
    """The template files a target ships disagree: each loader reads another one."""
    for d in source_disagreements(model):
        yield _TA808.finding(d.message, location=d.location, details=d.details)
