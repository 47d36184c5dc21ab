"""The TA8xx rules inside ``scan``: one engine pair, the built-in conversations, a tighter budget.

The five rules share one analysis per model (rendering is the cost, not the rules), computed by
the first of them that runs and kept for that model object.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from threading import Lock
from typing import Any

from tokaudit.checks.literals import LiteralClassifier
from tokaudit.checks.registry import rule
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Finding
from tokaudit.report.report import installed_version
from tokaudit.result_cache import cache_key, load, store
from tokaudit.template.analysis import CODES, ConversationRun, TemplateRun, analyse, render_template
from tokaudit.template.conversations import Conversation, builtin_conversations
from tokaudit.template.renders import ENGINE_NAMES, Budget, Render
from tokaudit.template.source import TemplateSource, model_templates, special_token_context

#: Inside scan a hostile template costs at most about a second per engine.
SCAN_BUDGET = Budget(seconds=1.0, fuel=10_000_000, total_seconds=5.0)

_lock = Lock()
_cache: dict[int, tuple[TokenizerModel, list[Finding]]] = {}


def template_findings(model: TokenizerModel) -> list[Finding]:
    """Every TA8xx finding of a model's own templates (cached per model object)."""
    key = id(model)
    with _lock:
        hit = _cache.get(key)
        if hit is not None and hit[0] is model:
            return hit[1]
    templates = model_templates(model)
    found: list[Finding] = []
    if templates:
        special = special_token_context(model)
        runs = [_render(t, special) for t in templates]
        # no full-prompt tokenization inside scan (loading tokenizer.json again costs more than the whole family):
        # TA802 stays an error without comparing ids, TA803 reads the post-processor statically
        found = analyse(model, runs, None, LiteralClassifier(model))
    with _lock:
        if len(_cache) > 16:
            _cache.clear()
        _cache[key] = (model, found)
    return found


def _render(template: TemplateSource, special: dict[str, str]) -> TemplateRun:
    """The built-in conversations rendered by both engines: from the result cache when this template, these
    special tokens and these engine versions were rendered before, else rendered (and kept when no render came
    near a time limit: Jinja2's is a clock, MiniJinja's fuel is counted and so part of the result)."""
    inputs = {"template": template.text, "name": template.name, "special": special, "budget": repr(SCAN_BUDGET),
              "versions": {name: installed_version(name) for name in ENGINE_NAMES}}
    key = cache_key("template-render", inputs, _MODULES)
    conversations = builtin_conversations(template.text, template.name)
    hit = _from_json(template, conversations, load(key))
    if hit is not None:
        return hit
    from tokaudit.template.engines import make_engines  # only on a miss: the engines cost ~3 ms to import

    start = time.perf_counter()
    run = render_template(template, conversations, make_engines(list(ENGINE_NAMES), SCAN_BUDGET), special)
    if time.perf_counter() - start < SCAN_BUDGET.seconds:
        store(key, _to_json(run))
    return run


#: The modules whose code decides a template run (a change to any of them misses the cache).
_MODULES = ("tokaudit.template.engines", "tokaudit.template.renders", "tokaudit.template.analysis", "tokaudit.template.conversations",
            __name__)


def _to_json(run: TemplateRun) -> dict[str, Any]:
    return {
        "conversations": [[c.conversation.name, [[r.engine, r.text, r.error, r.kind] for r in c.renders]]
                          for c in run.conversations],
        "headers": {engine: [list(h) for h in rows] for engine, rows in run.headers.items()},
    }


def _from_json(template: TemplateSource, conversations: list[Conversation], data: Any) -> TemplateRun | None:
    """A cached run, or None when ``data`` is not one for these conversations (a corrupted entry)."""
    try:
        rows = data["conversations"]
        if [name for name, _ in rows] != [c.name for c in conversations]:
            return None
        runs = [ConversationRun(c, template, [Render(*r) for r in renders]) for c, (_, renders) in zip(conversations, rows)]
        headers = {engine: [tuple(h) for h in hs] for engine, hs in data["headers"].items()}
        if any(len(h) != 4 for hs in headers.values() for h in hs):
            return None
        return TemplateRun(template, runs, headers)  # type: ignore[arg-type]
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _register(code: str) -> None:
    def check(model: TokenizerModel) -> Iterator[Finding]:
        yield from (f for f in template_findings(model) if f.code == code)

    check.__name__ = CODES[code].name.replace("-", "_")
    rule(code)(check)


for _code in CODES:
    _register(_code)
