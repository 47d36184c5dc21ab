"""Template compilation and rendering in a bounded worker process (issue 34): what a hostile chat template can
make an engine do (Jinja2 folding a huge constant while compiling, one filter call allocating gigabytes, MiniJinja
aborting the process when an allocation fails) happens in a child with an address-space limit, a CPU-time limit
and a wall deadline (:mod:`tokaudit.worker`), and comes back as an error of that render, not a hang, a
``MemoryError`` or exit 134 of tokaudit.

The parent sends plain data (an :class:`~tokaudit.template.renders.EngineConfig`, the template text, a JSON
context, a :class:`~tokaudit.template.renders.Budget`) and gets plain data back. The child keeps the templates
it compiled last, so a template is compiled once per engine configuration, not once per render. What a
template reads (its :class:`~tokaudit.template.stacks.facts.TemplateFacts`) is worked out in the child too:
Jinja2's analysis of a template generates its code, and so folds its constants.

A template longer than :data:`MAX_TEMPLATE_CHARS` is not compiled at all (every render reports it).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any

from tokaudit.template.renders import Budget, EngineConfig, Prepared, Render
from tokaudit.template.stacks.facts import TemplateFacts
from tokaudit.worker import Limits, Worker, shared_worker

#: The longest template compiled: 15x the longest of llama.cpp's 70 real templates (gpt-oss, 16.7 KB). A 50 MB
#: template took 259 s and 7.6 GB to compile.
MAX_TEMPLATE_CHARS = 256 * 1024

#: The worker's limits: 1 GiB of address space (a render of a real template needs a few MB; the child starts at
#: ~60 MB resident); per call, see _limits.
LIMITS = Limits(memory_bytes=1024**3, cpu_seconds=30, wall_seconds=30.0)

#: A fresh child imports Jinja2, MiniJinja and the engines before its first render (under load: seconds).
STARTUP_SECONDS = 30.0

#: Compiled templates the child keeps (the renders of one template come together, across its configurations).
KEPT = 16


def too_long(text: str) -> str | None:
    """Why a template is not compiled, or None."""
    if len(text) <= MAX_TEMPLATE_CHARS:
        return None
    return f"the template is {len(text):,} characters long, over the {MAX_TEMPLATE_CHARS:,} tokaudit compiles"


def _worker() -> Worker:
    worker = shared_worker("templates", LIMITS)
    if not worker.running:
        worker.call(f"{__name__}:ready", wall_seconds=STARTUP_SECONDS)
    return worker


def start() -> None:
    """Start the worker if it is not running (its start-up is not a template's cost: a run that renders in less
    than a second is cached); a worker that cannot start is reported by the renders."""
    from tokaudit.worker import WorkerFailure

    try:
        _worker()
    except WorkerFailure:
        pass


def _limits(budget: Budget) -> dict[str, Any]:
    """One call's limits: CPU time for the render's budget and as long again to compile the template (a CPU-time
    limit is whole seconds, and does not fire early on a busy machine), and a wall deadline well past it."""
    return {"cpu_seconds": math.ceil(2 * budget.seconds), "wall_seconds": 5 * budget.seconds + 1}


def facts(text: str, budget: Budget) -> TemplateFacts:
    """The template's facts, worked out in the worker; raises :class:`~tokaudit.worker.WorkerFailure` when the
    worker died or ran past a limit (Jinja2 lists a template's variables by generating its code, which folds
    its constants as compiling does)."""
    vllm, sglang, variables = _worker().call(f"{__name__}:child_facts", text, **_limits(budget))
    return TemplateFacts(vllm, sglang, None if variables is None else frozenset(variables))


def render(config: EngineConfig, text: str, context: dict[str, Any], budget: Budget) -> Render:
    """One render in the worker; raises :class:`~tokaudit.worker.WorkerFailure` when the worker died or ran
    past a limit."""
    return Render(*_worker().call(f"{__name__}:child_render", config, text, context, budget, **_limits(budget)))


# -- the child's side ----------------------------------------------------------------------------------------

_compiled: OrderedDict[tuple[str, str, str], Prepared] = OrderedDict()


def ready() -> bool:
    """Imports what a render needs (a fresh child's first call, with a start-up allowance)."""
    import jinja2  # noqa: F401 - imported for its start-up cost, paid here
    import minijinja  # noqa: F401 - as above

    import tokaudit.template.engines  # noqa: F401 - as above

    return True


def child_facts(text: str) -> list[Any]:
    from tokaudit.template.stacks.facts import template_facts

    f = template_facts(text)
    return [f.vllm_format, f.sglang_format, None if f.variables is None else sorted(f.variables)]


def child_render(config: EngineConfig, text: str, context: dict[str, Any], budget: Budget) -> list[Any]:
    import resource

    from tokaudit.template.engines import prepare

    key = (config.key(), repr(budget), text)
    prepared = _compiled.get(key)
    if prepared is None:
        prepared = _compiled[key] = prepare(config, text, budget)
        while len(_compiled) > KEPT:
            _compiled.popitem(last=False)
    else:
        _compiled.move_to_end(key)
    out = prepared.render(context)
    if out.error == "out of memory" or out.error is not None and out.error.startswith("MemoryError"):
        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
        out = Render(
            out.engine, None, f"out of memory (the render worker's {limit >> 20} MiB address-space limit)", "budget"
        )
    return out.to_json()
