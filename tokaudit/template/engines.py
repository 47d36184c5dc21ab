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

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tokaudit.report.report import installed_version
from tokaudit.template.renders import SIZE_BOMB, Budget, EngineConfig, Prepared, Render

#: The instant ``strftime_now`` formats: renders are reproducible and never read the clock.
FIXED_NOW = datetime(2026, 1, 15, 12, 0, 0)

#: What a two-argument ``.get(`` is renamed to when the pinned pycompat takes one argument.
_GET_WITH_DEFAULT = "get_with_default_needs_minijinja_2_15"


class TemplateRaised(Exception):
    """The template called ``raise_exception(message)``."""


class BudgetExceeded(Exception):
    """A render ran out of time, steps or output size."""


class _Timeout(BaseException):
    """Injected into the rendering thread by the watchdog (a BaseException: templates cannot catch it)."""


def raise_exception(message: Any = "") -> None:
    raise TemplateRaised(str(message))


def strftime_now(fmt: str) -> str:
    return FIXED_NOW.strftime(str(fmt))


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:300] if lines else type(exc).__name__


@dataclass(frozen=True)
class _Failed:
    """A template that did not compile (or an engine that is not available): every render reports it."""

    engine: str
    error: str
    kind: str

    def render(self, context: dict[str, Any]) -> Render:
        return Render(self.engine, None, self.error, self.kind)


# --------------------------------------------------------------------------- jinja2


class _Watchdog:
    """One daemon thread for every render of the process: it raises ``_Timeout`` inside each rendering
    thread whose deadline passed (a ``threading.Timer`` per render started a thread 20 times per template)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._armed: dict[int, tuple[float, dict[str, Any]]] = {}
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float) -> dict[str, Any]:
        import ctypes  # only when Jinja2 renders (a scan with its renders cached never does)

        state: dict[str, Any] = {"tid": ctypes.c_ulong(threading.get_ident()), "fired": False}
        with self._cond:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="tokaudit-render-watchdog", daemon=True)
                self._thread.start()
            self._armed[id(state)] = (time.monotonic() + seconds, state)
            self._cond.notify()
        return state

    def disarm(self, state: dict[str, Any]) -> None:
        """After this no ``_Timeout`` reaches the thread: one already sent but not yet raised is cleared."""
        import ctypes

        with self._cond:
            self._armed.pop(id(state), None)
            if state["fired"]:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(state["tid"], None)

    def _run(self) -> None:
        import ctypes

        with self._cond:
            while True:
                now = time.monotonic()
                for key, (deadline, state) in list(self._armed.items()):
                    if deadline <= now:
                        del self._armed[key]
                        state["fired"] = True
                        ctypes.pythonapi.PyThreadState_SetAsyncExc(state["tid"], ctypes.py_object(_Timeout))
                nearest = min((deadline for deadline, _ in self._armed.values()), default=None)
                self._cond.wait(None if nearest is None else max(nearest - now, 0.0))


_WATCHDOG = _Watchdog()


def _with_deadline(fn: Callable[[], str], seconds: float) -> str:
    """Run ``fn`` in this thread; after ``seconds`` the watchdog raises ``_Timeout`` inside it.

    Jinja2 templates compile to Python code, so an asynchronous exception stops any loop at its
    next bytecode. A pending exception that arrives after ``fn`` returned is cleared.
    """
    state = _WATCHDOG.arm(seconds)
    try:
        try:
            return fn()
        finally:
            _WATCHDOG.disarm(state)
    except _Timeout:
        raise BudgetExceeded(f"render took longer than {seconds:g} s") from None


def _jinja_env(max_chars: int) -> Any:
    import jinja2
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    from tokaudit.jinja_generation import Generation

    class Sandbox(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**"})

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            if operator == "*":
                for seq, n in ((left, right), (right, left)):
                    if isinstance(seq, (str, list, tuple)) and isinstance(n, int) and len(seq) * n > max_chars:
                        raise BudgetExceeded(f"{SIZE_BOMB} {len(seq) * n} items exceeds the output bound {max_chars}")
            if operator == "**" and isinstance(right, int) and isinstance(left, int) and abs(left) > 1 and right > 4096:
                raise BudgetExceeded(f"{SIZE_BOMB} {left} ** {right}: too large")
            return super().call_binop(context, operator, left, right)

    class TemplateDict:
        def __call__(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
            return dict(*args, **kwargs)

        def fromkeys(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
            return dict.fromkeys(*args, **kwargs)

    class TemplateNamespace(jinja2.utils.Namespace):
        # no `self` parameter: Jinja's own signature trick (a keyword argument may be named "self")
        def __init__(*args: Any, **kwargs: Any) -> None:
            self, rest = args[0], args[1:]
            attrs = dict(*rest, **kwargs)
            for key in attrs:
                TemplateNamespace._check(key)
            jinja2.utils.Namespace.__init__(self, attrs)

        def __setitem__(self, key: str, value: Any) -> None:
            TemplateNamespace._check(key)
            jinja2.utils.Namespace.__setitem__(self, key, value)

        @staticmethod
        def _check(key: Any) -> None:
            if isinstance(key, str) and key.startswith("_"):
                raise jinja2.exceptions.SecurityError(f"namespace attribute {key!r} starts with an underscore")

    env = Sandbox(trim_blocks=True, lstrip_blocks=True, extensions=[Generation, loopcontrols])
    env.filters["tojson"] = tojson_python
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    env.globals["dict"] = TemplateDict()
    env.globals["namespace"] = TemplateNamespace
    return env


@dataclass
class _JinjaPrepared:
    name: str
    template: Any
    budget: Budget

    def render(self, context: dict[str, Any]) -> Render:
        max_chars = self.budget.max_chars

        def run() -> str:
            parts: list[str] = []
            size = 0
            for chunk in self.template.generate(**context):
                size += len(chunk)
                if size > max_chars:
                    raise BudgetExceeded(f"output exceeds {max_chars} characters")
                parts.append(chunk)
            return "".join(parts)

        try:
            return Render(self.name, _with_deadline(run, self.budget.seconds))
        except TemplateRaised as exc:
            return Render(self.name, None, f"raise_exception: {exc}", "raise")
        except BudgetExceeded as exc:
            return Render(self.name, None, str(exc), "budget")
        except RecursionError:
            return Render(self.name, None, "recursion too deep", "budget")
        except MemoryError:
            return Render(self.name, None, "out of memory", "budget")
        except Exception as exc:  # noqa: BLE001 - anything a template can raise is a finding, not a crash
            return Render(self.name, None, f"{type(exc).__name__}: {_first_line(exc)}", "error")


_jinja_envs: dict[int, Any] = {}


def jinja_environment(max_chars: int = Budget().max_chars) -> Any:
    env = _jinja_envs.get(max_chars)
    if env is None:
        env = _jinja_envs[max_chars] = _jinja_env(max_chars)
    return env


def jinja_parse(template: str) -> Any:
    """The template's AST as transformers' environment parses it (raises Jinja2's errors)."""
    return jinja_environment().parse(template)


def _prepare_jinja(config: EngineConfig, template: str, budget: Budget, ast: Any = None) -> Prepared:
    """Compiled from ``ast`` when the caller parsed the text already (parsing is half of compiling)."""
    import jinja2

    env = jinja_environment(budget.max_chars)
    try:
        if ast is None:
            return _JinjaPrepared(config.name, env.from_string(template), budget)
        code = env.compile(ast)
        return _JinjaPrepared(config.name, env.template_class.from_code(env, code, env.make_globals(None)), budget)
    except jinja2.TemplateSyntaxError as exc:
        return _Failed(config.name, f"TemplateSyntaxError: line {exc.lineno}: {exc.message}", "syntax")
    except RecursionError:
        return _Failed(config.name, "the template nests too deeply to compile", "budget")
    except Exception as exc:  # noqa: BLE001 - whatever the compiler raises on the template is its syntax finding
        return _Failed(config.name, f"{type(exc).__name__}: {_first_line(exc)}", "syntax")


# --------------------------------------------------------------------------- tojson flavours


def tojson_python(
    x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None, sort_keys: bool = False
) -> str:
    """transformers' (and smg's) ``tojson``: ``json.dumps`` with its keyword arguments, no HTML escaping."""
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


_HTML_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "'": "\\u0027"})


def _serde(x: Any, indent: Any) -> str:
    """serde_json: compact ``{"a":1}``, or pretty with ``indent`` spaces (its PrettyFormatter)."""
    if indent is None or indent is False:
        return json.dumps(x, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(x, ensure_ascii=False, indent=2 if indent is True else int(indent))


class _FilterError(Exception):
    """A filter called with arguments the pinned engine refuses (the message is MiniJinja's)."""


def tojson_minijinja2(x: Any, *args: Any, **kwargs: Any) -> str:
    """MiniJinja 2.x's builtin: an optional ``indent``; any other keyword argument is an error."""
    indent = args[0] if args else kwargs.pop("indent", None)
    for key in kwargs:
        raise _FilterError(f"too many arguments: unknown keyword argument '{key}'")
    return _serde(x, indent).translate(_HTML_SAFE)


def tojson_serde_escaped(x: Any, *args: Any, **kwargs: Any) -> str:
    """Dynamo's ``tojson`` (tokcfg.rs): reads ``indent`` only, ignores other keyword arguments, escapes."""
    return _serde(x, kwargs.get("indent")).translate(_HTML_SAFE)


def tojson_python_spacing(x: Any, *args: Any, **kwargs: Any) -> str:
    """mistral.rs' ``tojson``: Python's separators without ``indent``, serde's pretty form with it, no escaping."""
    indent = kwargs.get("indent")
    if indent is not None:
        return _serde(x, indent)
    return json.dumps(x, ensure_ascii=False)


_TOJSON: dict[str, Callable[..., str]] = {
    "python": tojson_python,
    "minijinja-2": tojson_minijinja2,
    "serde-escaped": tojson_serde_escaped,
    "python-spacing": tojson_python_spacing,
}


# --------------------------------------------------------------------------- minijinja


def length_or_zero(value: Any) -> int:
    """Dynamo's ``length``: 0 for none and undefined, else the length (0 when it has none)."""
    try:
        return len(value) if value is not None else 0
    except TypeError:
        return 0


_LOOP_CONTROL = r"\{%[-+]?\s*(break|continue)\s*[-+]?%\}"  # compiled on first use


def rename_get_with_default(template: str) -> str:
    """``x.get(key, default)`` inside ``{{ }}`` / ``{% %}`` renamed to a method no map has, so the render fails
    where MiniJinja-contrib < 2.15 fails (its ``get`` takes one argument). Bounded: one pass over the text."""
    out: list[str] = []
    i, n = 0, len(template)
    while i < n:
        start = template.find("{", i)
        if start < 0 or start + 1 >= n:
            out.append(template[i:])
            break
        closer = {"{": "}}", "%": "%}"}.get(template[start + 1])
        if closer is None:
            out.append(template[i : start + 1])
            i = start + 1
            continue
        end = _tag_end(template, start + 2, closer)
        out.append(template[i:start])
        out.append(_rename_in_tag(template[start:end]))
        i = end
    return "".join(out)


def _tag_end(text: str, i: int, closer: str) -> int:
    """The index just past ``closer``, skipping string literals; the text's end when it never closes."""
    n = len(text)
    while i < n:
        c = text[i]
        if c in "'\"":
            i = _string_end(text, i)
            continue
        if text.startswith(closer, i):
            return i + len(closer)
        i += 1
    return n


def _string_end(text: str, i: int) -> int:
    quote, i, n = text[i], i + 1, len(text)
    while i < n and text[i] != quote:
        i += 2 if text[i] == "\\" else 1
    return min(i + 1, n)


def _rename_in_tag(tag: str) -> str:
    out, i, n = [], 0, len(tag)
    while i < n:
        c = tag[i]
        if c in "'\"":
            j = _string_end(tag, i)
            out.append(tag[i:j])
            i = j
            continue
        if tag.startswith(".get(", i) and _top_level_commas(tag, i + 5) > 0:
            out.append(f".{_GET_WITH_DEFAULT}(")
            i += 5
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _top_level_commas(tag: str, i: int) -> int:
    """Commas at depth 0 between ``i`` (just past an opening parenthesis) and its closing one."""
    depth, commas, n = 0, 0, len(tag)
    while i < n:
        c = tag[i]
        if c in "'\"":
            i = _string_end(tag, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return commas
            depth -= 1
        elif c == "," and depth == 0:
            commas += 1
        i += 1
    return commas


def _no_attribute(kind: type, what: str, name: str) -> AttributeError:
    """The error of a method a context value does not offer: MiniJinja's words for one the Python type has
    (a template calling it would change the context), Python's for one it has not (as before the copy)."""
    if hasattr(kind, name):
        return AttributeError(f"unknown method: {what} has no method named {name}")
    return AttributeError(f"'{kind.__name__}' object has no attribute '{name}'")


class _Sequence(list):
    """A list of the context as MiniJinja holds a sequence: no Python method a template could call to change it
    (the binding calls a Python object's methods: ``messages.extend(messages)`` doubled a list 40 times)."""

    __slots__ = ()
    _METHODS = frozenset({"count", "index"})

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("__") or name in _Sequence._METHODS:
            return list.__getattribute__(self, name)
        raise _no_attribute(list, "sequence", name)


class _Map(dict):
    """A dict of the context as MiniJinja holds a map: only pycompat's reading methods."""

    __slots__ = ()
    _METHODS = frozenset({"get", "keys", "values", "items"})

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("__") or name in _Map._METHODS:
            return dict.__getattribute__(self, name)
        raise _no_attribute(dict, "map", name)


def plain_copy(value: Any, sort: bool = False) -> Any:
    """The context as MiniJinja values: lists and dicts without methods that change them, recursively; ``sort``:
    every map in key order (a MiniJinja built without ``preserve_order`` iterates so)."""
    if isinstance(value, dict):
        keys = sorted(value, key=str) if sort else value
        return _Map((k, plain_copy(value[k], sort)) for k in keys)
    if isinstance(value, list):
        return _Sequence(plain_copy(v, sort) for v in value)
    return value


@dataclass
class _MiniPrepared:
    config: EngineConfig
    env: Any
    budget: Budget

    def render(self, context: dict[str, Any]) -> Render:
        name = self.config.name
        context = plain_copy(context, self.config.sorted_maps)
        try:
            text = self.env.render_template("chat", **context)
        except TemplateRaised as exc:
            return Render(name, None, f"raise_exception: {exc}", "raise")
        except Exception as exc:  # noqa: BLE001 - minijinja.TemplateError and Python errors of callbacks
            message = _first_line(exc)
            if _GET_WITH_DEFAULT in message:
                message = (
                    "too many arguments: dict.get(key, default) takes one argument in MiniJinja-contrib's pycompat "
                    f"before 2.15 ({self.config.pins})"
                )
            kind = "budget" if "out of fuel" in message or "recursion limit" in message else "error"
            if "syntax error" in message:
                kind = "syntax"
            return Render(name, None, message, kind)
        if len(text) > self.budget.max_chars:
            return Render(name, None, f"output exceeds {self.budget.max_chars} characters", "budget")
        return Render(name, text)


def _prepare_minijinja(config: EngineConfig, template: str, budget: Budget) -> Prepared:
    from minijinja import Environment

    if not config.loop_controls:
        m = re.search(_LOOP_CONTROL, template)
        if m is not None:
            line = template.count("\n", 0, m.start()) + 1
            return _Failed(
                config.name,
                f"syntax error: unknown statement {m.group(1)} (in chat:{line}); "
                f"{config.pins} is built without the loop_controls feature",
                "syntax",
            )
    if not config.get_default and ".get(" in template:
        template = rename_get_with_default(template)
    env = Environment()
    env.trim_blocks = config.trim_blocks
    env.lstrip_blocks = config.lstrip_blocks
    env.pycompat = True
    env.fuel = budget.fuel
    env.add_function("raise_exception", raise_exception)  # type: ignore[attr-defined]  # not in minijinja's stub
    if config.strftime_now:
        env.add_function("strftime_now", strftime_now)  # type: ignore[attr-defined]  # not in minijinja's stub
    env.add_filter("tojson", _TOJSON[config.tojson])
    if config.length_of_none_is_zero:
        env.add_filter("length", length_or_zero)
    try:
        env.add_template("chat", template)
    except Exception as exc:  # noqa: BLE001 - minijinja.TemplateError on a syntax error
        return _Failed(config.name, _first_line(exc), "syntax")
    return _MiniPrepared(config, env, budget)


def prepare(config: EngineConfig, template: str, budget: Budget = Budget(), ast: Any = None) -> Prepared:
    """A template compiled by the engine ``config`` describes (or the compile error every render reports);
    ``ast``: Jinja2's parse of ``template``, when the caller has it."""
    if config.kind == "jinja2":
        return _prepare_jinja(config, template, budget, ast)
    if config.kind == "minijinja":
        return _prepare_minijinja(config, template, budget)
    return _Failed(
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
