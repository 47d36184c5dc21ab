"""The two template engines, configured as the serving stacks configure them, with render budgets.

``jinja2``: an ImmutableSandboxedEnvironment set up as transformers 5 (and vLLM, which calls it)
sets it up: trim_blocks, lstrip_blocks, loopcontrols, the ``{% generation %}`` tag, a ``tojson``
that neither escapes HTML nor non-ASCII, ``raise_exception``, ``strftime_now``, a ``dict`` and a
``namespace`` that refuse underscore names.

``minijinja``: the Rust engine's Python binding set up as the Rust gateways (SGLang router / smg,
TGI, mistral.rs) set it up: pycompat methods (``.strip()``, ``.items()``...), trim_blocks,
lstrip_blocks, ``raise_exception``, ``strftime_now``, and MiniJinja's own ``tojson`` (which
escapes ``<``, ``>``, ``&`` and ``'`` as ``\\u003c`` ...; TGI keeps it, smg registers its own).

Nothing a template does reaches files, the network or the clock: no loader is configured (so
``include``/``import`` fail), and ``strftime_now`` formats a fixed instant. Every render is
bounded in time (a watchdog for Jinja2, fuel for MiniJinja) and in output size.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tokaudit.report.report import installed_version
from tokaudit.template.renders import SIZE_BOMB, Budget, Engine, Prepared, Render

#: The instant ``strftime_now`` formats: renders are reproducible and never read the clock.
FIXED_NOW = datetime(2026, 1, 15, 12, 0, 0)


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
    """A template that did not compile: every render reports the same error."""

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
    from jinja2.ext import Extension, loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class Generation(Extension):
        """transformers' ``{% generation %}`` tag (assistant-token tracking): renders its body."""

        tags = {"generation"}

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

        def _body(self, caller: Callable[[], str]) -> str:
            return caller()

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

    def tojson(x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None, sort_keys: bool = False) -> str:
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    class TemplateDict:
        def __call__(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
            return dict(*args, **kwargs)

        def fromkeys(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
            return dict.fromkeys(*args, **kwargs)

    class TemplateNamespace(jinja2.utils.Namespace):
        def __init__(*args: Any, **kwargs: Any) -> None:  # noqa: N805 - Jinja's own signature trick
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
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    env.globals["dict"] = TemplateDict()
    env.globals["namespace"] = TemplateNamespace
    return env


@dataclass
class _JinjaPrepared:
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
            return Render("jinja2", _with_deadline(run, self.budget.seconds))
        except TemplateRaised as exc:
            return Render("jinja2", None, f"raise_exception: {exc}", "raise")
        except BudgetExceeded as exc:
            return Render("jinja2", None, str(exc), "budget")
        except RecursionError:
            return Render("jinja2", None, "recursion too deep", "budget")
        except MemoryError:
            return Render("jinja2", None, "out of memory", "budget")
        except Exception as exc:  # noqa: BLE001 - anything a template can raise is a finding, not a crash
            return Render("jinja2", None, f"{type(exc).__name__}: {_first_line(exc)}", "error")


class Jinja2Engine:
    name = "jinja2"

    def __init__(self, budget: Budget = Budget()) -> None:
        self.budget = budget
        self._env: Any = None

    @property
    def version(self) -> str | None:
        return installed_version("jinja2")

    def prepare(self, template: str) -> Prepared:
        import jinja2

        if self._env is None:
            self._env = _jinja_env(self.budget.max_chars)
        try:
            return _JinjaPrepared(self._env.from_string(template), self.budget)
        except jinja2.TemplateSyntaxError as exc:
            return _Failed(self.name, f"TemplateSyntaxError: line {exc.lineno}: {exc.message}", "syntax")
        except RecursionError:
            return _Failed(self.name, "the template nests too deeply to compile", "budget")
        except Exception as exc:  # noqa: BLE001
            return _Failed(self.name, f"{type(exc).__name__}: {_first_line(exc)}", "syntax")


# --------------------------------------------------------------------------- minijinja


@dataclass
class _MiniPrepared:
    env: Any
    budget: Budget

    def render(self, context: dict[str, Any]) -> Render:
        try:
            text = self.env.render_template("chat", **context)
        except TemplateRaised as exc:
            return Render("minijinja", None, f"raise_exception: {exc}", "raise")
        except Exception as exc:  # noqa: BLE001 - minijinja.TemplateError and Python errors of callbacks
            message = _first_line(exc)
            kind = "budget" if "out of fuel" in message or "recursion limit" in message else "error"
            if "syntax error" in message:
                kind = "syntax"
            return Render("minijinja", None, message, kind)
        if len(text) > self.budget.max_chars:
            return Render("minijinja", None, f"output exceeds {self.budget.max_chars} characters", "budget")
        return Render("minijinja", text)


class MiniJinjaEngine:
    name = "minijinja"

    def __init__(self, budget: Budget = Budget()) -> None:
        self.budget = budget

    @property
    def version(self) -> str | None:
        return installed_version("minijinja")

    def prepare(self, template: str) -> Prepared:
        from minijinja import Environment

        env = Environment()
        env.trim_blocks = True
        env.lstrip_blocks = True
        env.pycompat = True
        env.fuel = self.budget.fuel
        env.add_function("raise_exception", raise_exception)
        env.add_function("strftime_now", strftime_now)
        try:
            env.add_template("chat", template)
        except Exception as exc:  # noqa: BLE001 - minijinja.TemplateError on a syntax error
            return _Failed(self.name, _first_line(exc), "syntax")
        return _MiniPrepared(env, self.budget)


def make_engines(names: list[str], budget: Budget = Budget()) -> list[Engine]:
    factories: dict[str, Callable[[Budget], Engine]] = {"jinja2": Jinja2Engine, "minijinja": MiniJinjaEngine}
    return [factories[n](budget) for n in names]


def engine_info(engine: Engine) -> dict[str, Any]:
    version = engine.version
    return {"name": engine.name, "version": version, "available": version is not None}

