"""Jinja2 as transformers 5 sets it up (an ImmutableSandboxedEnvironment with loop controls), bounded in time by one
watchdog thread and in output size (:mod:`tokaudit.template.engines` describes both engines)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tokaudit.template.engine_base import (
    BudgetExceeded,
    Failed,
    TemplateRaised,
    first_line,
    raise_exception,
    strftime_now,
)
from tokaudit.template.renders import SIZE_BOMB, Budget, EngineConfig, Prepared, Render
from tokaudit.template.tojson import tojson_python


class _Timeout(BaseException):
    """Injected into the rendering thread by the watchdog (a BaseException: templates cannot catch it)."""


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
            return Render(self.name, None, f"{type(exc).__name__}: {first_line(exc)}", "error")


_jinja_envs: dict[int, Any] = {}


def jinja_environment(max_chars: int = Budget().max_chars) -> Any:
    env = _jinja_envs.get(max_chars)
    if env is None:
        env = _jinja_envs[max_chars] = _jinja_env(max_chars)
    return env


def jinja_parse(template: str) -> Any:
    """The template's AST as transformers' environment parses it (raises Jinja2's errors)."""
    return jinja_environment().parse(template)


def prepare_jinja(config: EngineConfig, template: str, budget: Budget, ast: Any = None) -> Prepared:
    """Compiled from ``ast`` when the caller parsed the text already (parsing is half of compiling)."""
    import jinja2

    env = jinja_environment(budget.max_chars)
    try:
        if ast is None:
            return _JinjaPrepared(config.name, env.from_string(template), budget)
        code = env.compile(ast)
        return _JinjaPrepared(config.name, env.template_class.from_code(env, code, env.make_globals(None)), budget)
    except jinja2.TemplateSyntaxError as exc:
        return Failed(config.name, f"TemplateSyntaxError: line {exc.lineno}: {exc.message}", "syntax")
    except RecursionError:
        return Failed(config.name, "the template nests too deeply to compile", "budget")
    except Exception as exc:  # noqa: BLE001 - whatever the compiler raises on the template is its syntax finding
        return Failed(config.name, f"{type(exc).__name__}: {first_line(exc)}", "syntax")
