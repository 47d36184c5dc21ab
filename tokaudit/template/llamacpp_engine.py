"""llama.cpp's own chat-template engine (``common/jinja`` and ``common/chat.cpp``), run in a child process.

Two operations, both bounded (a wall deadline per call, an address-space limit, an output size):

* ``render(template, context)``: llama.cpp's Jinja engine on a plain JSON context (what ``jinja::global_from_json``
  makes of it), no normalisation: the engine alone, as ``Engine``/``Prepared`` of :mod:`tokaudit.template.renders`.
* ``apply(template, request, bos_token=, eos_token=, server=)``: what llama-server makes of an OpenAI chat request:
  its request checks and message parsing (``common_chat_msgs_parse_oaicompat``), ``common_chat_templates_apply``
  with its content-part normalisation, the developer→system, system-not-supported, null-content and
  string-arguments workarounds, the ``datetime``/``date_string`` context, and the specialised handlers.
  ``server`` holds llama-server's options: ``reasoning_format`` (default ``deepseek``), ``enable_thinking``
  (true), ``chat_template_kwargs``, ``prefill_assistant`` (true), ``add_bos``/``add_eos`` (the GGUF's flags).

The clock a template sees (``strftime_now``, ``datetime``) is ``now`` (seconds since the epoch, UTC), by default
the instant the other engines use (:data:`tokaudit.template.engine_base.FIXED_NOW`). The executable is built from the
pinned llama-cpp-python sdist on first use (:mod:`tokaudit.template.llamacpp_build`).

Render kinds are those of :class:`~tokaudit.template.renders.Render` (``syntax``, ``raise``, ``budget``, ``error``)
plus ``request`` for ``apply``: llama-server refuses the request before rendering (an HTTP 400).
"""

from __future__ import annotations

import json
import os
import select
import signal
import struct
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokaudit.template.llamacpp_build import SDIST_VERSION, BuildUnavailable, ensure_engine
from tokaudit.template.renders import Budget, Render

NAME = "llama.cpp"
#: engine_base.FIXED_NOW (2026-01-15 12:00) read as UTC: every engine's templates see the same instant.
FIXED_NOW_EPOCH = 1768478400
#: The child's address space: a template that asks for more fails as "budget" (out of memory).
MEMORY_LIMIT = 1 << 30


class EngineUnavailable(Exception):
    """llama.cpp's engine cannot run here (no sdist, no compiler, a failed build); the message says why."""


@dataclass(frozen=True)
class Applied:
    """What llama-server made of a request: the prompt (``render.text``) and the chat format it picked."""

    render: Render
    #: ``common_chat_format_name`` of the handler (``peg-native``, ``Content-only``...), None on an error
    format: str | None = None
    generation_prompt: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


class LlamaCppEngine:
    """One child process serving renders in turn (a lock per engine); restarted after it dies or times out."""

    name = NAME

    def __init__(self, executable: Path, budget: Budget | None = None) -> None:
        self.executable = executable
        self.budget = budget or Budget()
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def version(self) -> str:
        return SDIST_VERSION

    # -- the Engine protocol of tokaudit.template.renders
    def prepare(self, template: str) -> _Prepared:
        return _Prepared(self, template)

    def render(self, template: str, context: dict[str, Any], *, now: int | None = FIXED_NOW_EPOCH) -> Render:
        header, text = self._call({"op": "render", "template": template, "context": context, "now": now})
        return self._render(header, text)

    def apply(
        self,
        template: str,
        request: dict[str, Any],
        *,
        bos_token: str = "",
        eos_token: str = "",
        server: dict[str, Any] | None = None,
        now: int | None = FIXED_NOW_EPOCH,
    ) -> Applied:
        header, text = self._call(
            {
                "op": "apply",
                "template": template,
                "request": request,
                "bos_token": bos_token,
                "eos_token": eos_token,
                "server": server or {},
                "now": now,
            }
        )
        render = self._render(header, text)
        if not render.ok:
            return Applied(render)
        return Applied(
            render,
            header.get("format"),
            header.get("generation_prompt"),
            {"supports_thinking": header.get("supports_thinking")},
        )

    def close(self) -> None:
        with self._lock:
            self._stop()

    def __enter__(self) -> LlamaCppEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the child process
    def _render(self, header: dict[str, Any], text: bytes) -> Render:
        if not header.get("ok"):
            return Render(NAME, None, str(header.get("error", "")), str(header.get("kind", "error")))
        decoded = text.decode("utf-8", "replace")
        if len(decoded) > self.budget.max_chars:
            return Render(NAME, None, f"the output exceeds {self.budget.max_chars} characters", "budget")
        return Render(NAME, decoded)

    def _call(self, request: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
        seconds = max(1, int(self.budget.seconds + 0.999))
        request["seconds"] = seconds
        request["max_output"] = self.budget.max_chars * 4
        try:
            body = json.dumps(request, ensure_ascii=False).encode("utf-8")
        except (TypeError, ValueError, UnicodeEncodeError) as exc:
            return {"ok": False, "kind": "error", "error": f"the context is not plain JSON: {exc}"}, b""
        with self._lock:
            proc = self._start()
            try:
                assert proc.stdin is not None
                proc.stdin.write(struct.pack("<I", len(body)) + body)
                proc.stdin.flush()
                deadline = time.monotonic() + seconds + 1.0
                header = json.loads(self._block(proc, deadline))
                return header, self._block(proc, deadline)
            except _Timeout:
                self._stop()
                return {"ok": False, "kind": "budget", "error": f"the render ran past {seconds} s"}, b""
            except (_Died, BrokenPipeError, OSError, ValueError):
                code = self._stop()
                return _death(code, seconds), b""

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen(
                [str(self.executable), str(MEMORY_LIMIT)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env={"TZ": "UTC", "LC_ALL": "C"},
                close_fds=True,
            )
        return self._proc

    def _stop(self) -> int | None:
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.kill()
        for stream in (proc.stdin, proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        return proc.wait()

    @staticmethod
    def _block(proc: subprocess.Popen[bytes], deadline: float) -> bytes:
        size = struct.unpack("<I", _read(proc, 4, deadline))[0]
        return _read(proc, size, deadline)


class _Prepared:
    def __init__(self, engine: LlamaCppEngine, template: str) -> None:
        self.engine = engine
        self.template = template

    def render(self, context: dict[str, Any]) -> Render:
        return self.engine.render(self.template, context)


class _Timeout(Exception):
    pass


class _Died(Exception):
    pass


def _read(proc: subprocess.Popen[bytes], n: int, deadline: float) -> bytes:
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    chunks: list[bytes] = []
    while n > 0:
        left = deadline - time.monotonic()
        if left <= 0:
            raise _Timeout
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            raise _Timeout
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise _Died
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _death(code: int | None, seconds: int) -> dict[str, Any]:
    if code is not None and code < 0:
        sig = -code
        if sig in (signal.SIGALRM, signal.SIGXCPU):
            return {"ok": False, "kind": "budget", "error": f"the render ran past {seconds} s"}
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return {"ok": False, "kind": "error", "error": f"llama.cpp's template engine crashed ({name})"}
    return {"ok": False, "kind": "error", "error": f"llama.cpp's template engine exited (code {code})"}


_engines: dict[Budget, LlamaCppEngine] = {}
_engines_lock = threading.Lock()


def load_engine(budget: Budget | None = None, notify: Callable[[str], None] | None = None) -> LlamaCppEngine:
    """The engine (one per budget and process), building its executable first when needed."""
    key = budget or Budget()
    with _engines_lock:
        engine = _engines.get(key)
        if engine is None:
            try:
                built = ensure_engine(notify)
            except BuildUnavailable as exc:
                raise EngineUnavailable(str(exc)) from None
            engine = _engines[key] = LlamaCppEngine(built.path, key)
        return engine


def engine_unavailable(budget: Budget | None = None, notify: Callable[[str], None] | None = None) -> str | None:
    """Why llama.cpp's engine cannot render here (no sdist, no compiler, a failed build), or None; builds it first
    when this machine has none (once)."""
    try:
        load_engine(budget, notify)
    except EngineUnavailable as exc:
        return str(exc)
    return None


def server_render(
    template: str,
    request: dict[str, Any],
    special: dict[str, str],
    budget: Budget,
    *,
    generation: bool | None = None,
    reply: bool = False,
) -> Render:
    """llama-server's prompt for an OpenAI chat request (:meth:`LlamaCppEngine.apply` with its defaults), as the
    llama.cpp profile's render: ``generation`` overrides the request's add_generation_prompt; ``reply`` renders a
    last assistant message as a finished turn (``prefill_assistant`` off) rather than continued. A request llama-server
    refuses (its HTTP 400) is ``refused``."""
    data = {k: v for k, v in request.items() if k in ("messages", "tools", "chat_template_kwargs")}
    data["add_generation_prompt"] = request.get("add_generation_prompt", True) if generation is None else generation
    # a final assistant message is continued (prefill_assistant, on by default) only when the request asks for it
    prefill = request.get("continue_final_message") and not reply
    server = {"prefill_assistant": False} if not prefill and (reply or not data["add_generation_prompt"]) else {}
    applied = load_engine(budget).apply(
        template,
        data,
        bos_token=special.get("bos_token") or "",
        eos_token=special.get("eos_token") or "",
        server=server,
    )
    r = applied.render
    if r.kind == "request":
        return Render(r.engine, None, f"the stack refuses the request: {r.error}", "refused")
    return r
