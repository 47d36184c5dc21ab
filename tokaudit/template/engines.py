"""Template engines built from an :class:`~tokaudit.template.renders.EngineConfig`, with render budgets.

``jinja2``: an ImmutableSandboxedEnvironment set up as transformers 5 (and so vLLM and SGLang, which call it)
sets it up: trim_blocks, lstrip_blocks, loopcontrols, the ``{% generation %}`` tag, a ``tojson`` that neither
escapes HTML nor non-ASCII, ``raise_exception``, ``strftime_now``, a ``dict`` and a ``namespace`` that refuse
underscore names.

``minijinja``: the Rust engine's Python binding (3.x) set up as the configuration says, and patched where a
stack's pinned 2.x behaves otherwise in a way that changes a prompt or an error:

* ``tojson`` flavours (:data:`~tokaudit.template.renders.TOJSON_FLAVOURS`) as Python filters;
* ``loop_controls=False``: a template with ``{% break %}`` or ``{% continue %}`` does not compile;
* ``get_default=False``: ``x.get(key, default)`` fails as pycompat < 2.15 fails it (too many arguments), by
  renaming the two-argument calls to a method no map has before compiling;
* ``sorted_maps``: every map of the context is passed in key order (MiniJinja without ``preserve_order``);
* the context is passed as MiniJinja holds values: lists and dicts whose Python methods that change them are
  not callable (the binding calls a Python object's methods; pycompat's reading ones stay);
* ``length_of_none_is_zero``: Dynamo's ``length`` filter;
* ``generation_tag``: MiniJinja has no such tag either way (a stack that strips it does so in the text).

Not emulated (stated in the profiles): 2.x prints none / true / false and sequences with double-quoted strings
where the binding prints None / True / False and Python reprs (2.22 #913, 3.0 #785: a finalizer cannot tell
none from undefined in the binding, so printing is left as 3.x prints it); loop-local assignments leaking into
later iterations (< 2.22); chained comparisons (< 2.20); dotted integer lookups and unknown string escapes
(< 2.18); tuple unpacking in ``{% set %}`` (< 2.14).

Nothing a template does reaches files, the network or the clock: no loader is configured (so
``include``/``import`` fail), and ``strftime_now`` formats a fixed instant. Every render is bounded in time
(a watchdog for Jinja2, fuel for MiniJinja) and in output size.
"""

from __future__ import annotations

from typing import Any

from tokaudit.report.report import installed_version
from tokaudit.template.engine_base import Failed
from tokaudit.template.engine_jinja2 import prepare_jinja
from tokaudit.template.engine_minijinja import prepare_minijinja
from tokaudit.template.renders import Budget, EngineConfig, Prepared, Render


def prepare(config: EngineConfig, template: str, budget: Budget = Budget(), ast: Any = None) -> Prepared:
    """A template compiled by the engine ``config`` describes (or the compile error every render reports);
    ``ast``: Jinja2's parse of ``template``, when the caller has it."""
    if config.kind == "jinja2":
        return prepare_jinja(config, template, budget, ast)
    if config.kind == "minijinja":
        return prepare_minijinja(config, template, budget)
    return Failed(
        config.name, f"{config.pins} is not available to tokaudit: its renders are not checked", "unavailable"
    )


def render(config: EngineConfig, template: str, context: dict[str, Any], budget: Budget = Budget()) -> Render:
    """One render from plain data (a worker process needs nothing else): compile and render once."""
    return prepare(config, template, budget).render(context)


def engine_version(kind: str) -> str | None:
    """The installed version of the library an engine kind renders with (None: not installed)."""
    if kind == "llama.cpp":
        from tokaudit.template.llamacpp_build import SDIST_VERSION

        return SDIST_VERSION
    return {"jinja2": installed_version("jinja2"), "minijinja": installed_version("minijinja")}.get(kind)
