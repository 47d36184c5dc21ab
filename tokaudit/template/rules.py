"""The TA8xx rules inside ``scan``: one engine pair, the built-in conversations, a tighter budget.

The five rules share one analysis per model (rendering is the cost, not the rules), computed by
the first of them that runs and kept for that model object.
"""

from __future__ import annotations

from collections.abc import Iterator
from threading import Lock

from tokaudit.checks.literals import LiteralClassifier
from tokaudit.checks.registry import rule
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Finding
from tokaudit.template.analysis import CODES, analyse, render_template
from tokaudit.template.conversations import builtin_conversations
from tokaudit.template.engines import ENGINE_NAMES, Budget, make_engines
from tokaudit.template.source import model_templates, special_token_context

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
        engines = make_engines(list(ENGINE_NAMES), SCAN_BUDGET)
        special = special_token_context(model)
        runs = [render_template(t, builtin_conversations(t.text, t.name), engines, special) for t in templates]
        # no full-prompt tokenization inside scan (loading tokenizer.json again costs more than the whole family):
        # TA802 stays an error without comparing ids, TA803 reads the post-processor statically
        found = analyse(model, runs, None, LiteralClassifier(model))
    with _lock:
        if len(_cache) > 16:
            _cache.clear()
        _cache[key] = (model, found)
    return found


def _register(code: str) -> None:
    def check(model: TokenizerModel) -> Iterator[Finding]:
        yield from (f for f in template_findings(model) if f.code == code)

    check.__name__ = CODES[code].name.replace("-", "_")
    rule(code)(check)


for _code in CODES:
    _register(_code)
