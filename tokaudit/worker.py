"""A bounded worker process: untrusted work (llama.cpp's tokenizer on a GGUF someone else wrote; chat templates)
runs in a child process that may die or run out of a limit without taking tokaudit with it.

* The child is a fresh interpreter (``python -m tokaudit.worker``), started on the first call and reused by the
  next ones (a llama.cpp vocabulary loaded once serves every encode of a run); it is started again after it dies.
* It runs a named, importable function of tokaudit (``"tokaudit.backends.llamacpp_calls:tokenize"``) on plain
  picklable data, and sends back plain data: the parent's unpickler refuses every class, so nothing the child
  sends can run code in tokaudit.
* Limits: an address-space limit (``RLIMIT_AS``) and no core dumps, set by the child on itself before it runs
  anything; a CPU-time limit per call (``RLIMIT_CPU``, raised by the child before each call: the kernel kills it
  with SIGXCPU past it); a wall deadline per call, enforced by the parent (which kills the child past it).
* The child's stdout and stderr go to a pipe the parent drains and keeps the end of (64 KiB): ggml's abort handler
  and a backtrace never reach tokaudit's stdout or stderr; the last line explains a death.

A call that does not come back raises :class:`WorkerFailure` naming what happened (the limit, or the signal and
the child's last line); a function that raises in the child raises :class:`WorkerError` in the parent, or the
same tokaudit exception class when it is one. Callers turn both into findings (a backend crash, a template render
error), never into exit 3 or 134.
"""

from __future__ import annotations

import io
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

#: Largest request or reply (a llama.cpp detokenization of a 2M-id stream is ~10 MB).
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
#: How much of the child's stdout/stderr is kept (its last line explains a death).
MAX_OUTPUT_BYTES = 64 * 1024
_HEADER = struct.Struct("<Q")
_PROTOCOL = 4


@dataclass(frozen=True)
class Limits:
    """The limits of one worker: address space (bytes), CPU seconds per call, wall seconds per call."""

    memory_bytes: int = 2 * 1024**3
    cpu_seconds: int = 30
    wall_seconds: float = 30.0


class WorkerFailure(Exception):
    """A call that did not come back: the child died, or ran past a limit (``limit``: ``memory``, ``cpu time``,
    ``wall time``, or None for a crash); ``detail`` says how (the signal and the child's last line)."""

    def __init__(self, function: str, limit: str | None, detail: str) -> None:
        self.function = function
        self.limit = limit
        self.detail = detail
        what = f"ran out of its {limit} limit" if limit else "died"
        super().__init__(f"the worker process {what}" + (f" ({detail})" if detail else ""))


class WorkerError(Exception):
    """The function raised in the child: ``kind`` is the exception's class name."""

    def __init__(self, kind: str, message: str) -> None:
        self.kind = kind
        super().__init__(message)


class _PlainData(pickle.Unpickler):
    """An unpickler of plain data only (str, bytes, numbers, lists, tuples, dicts, sets, None, bools)."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"a worker reply may hold plain data only, not {module}.{name}")


def plain_loads(data: bytes) -> Any:
    return _PlainData(io.BytesIO(data)).load()


class Worker:
    """One child process with :class:`Limits`, started on demand; :meth:`call` runs one function in it at a time."""

    def __init__(self, limits: Limits, modules: tuple[str, ...] = ("tokaudit.",), python: str | None = None) -> None:
        self.limits = limits
        #: the module prefixes whose functions it runs
        self.modules = modules
        #: the child's interpreter (default: tokaudit's own); another one (a serving stack's venv) runs a module of
        #: tokaudit that needs only the standard library there, found through PYTHONPATH
        self.python = python or sys.executable
        self._proc: subprocess.Popen[bytes] | None = None
        self._to_child: int | None = None
        self._from_child: int | None = None
        self._output = bytearray()
        self._drain: threading.Thread | None = None
        self._lock = threading.Lock()
        #: the CPU seconds of the call under way
        self._cpu = limits.cpu_seconds
        #: children started so far (1 + restarts after a death)
        self.starts = 0

    # -- the parent's side ---------------------------------------------------------------------------------

    def call(self, function: str, *args: Any, wall_seconds: float | None = None, cpu_seconds: int | None = None) -> Any:
        """``function(*args)`` in the child (``"module:name"``, a module of tokaudit), within the limits."""
        if not function.startswith(self.modules) or ":" not in function:
            raise ValueError(f"not a function this worker runs: {function!r}")
        cpu = cpu_seconds or self.limits.cpu_seconds
        request = pickle.dumps((function, args, cpu), protocol=_PROTOCOL)
        if len(request) > MAX_MESSAGE_BYTES:
            raise WorkerError("ValueError", f"the request is {len(request)} bytes, over the worker's limit")
        with self._lock:
            self._start()
            self._cpu = cpu
            wall = self.limits.wall_seconds if wall_seconds is None else wall_seconds
            deadline = time.monotonic() + wall
            try:
                _write_all(self._to_child, _HEADER.pack(len(request)) + request)  # type: ignore[arg-type]  # _start() above opened the pipe
                header = self._read(_HEADER.size, deadline)
                (size,) = _HEADER.unpack(header)
                if size > MAX_MESSAGE_BYTES:
                    raise _Died("a reply over the size limit")
                reply = plain_loads(self._read(size, deadline))
            except _TimedOut:
                raise self._fail(function, "wall time", f"{wall:g} s") from None
            except _Died as exc:  # the pipe closed: the child is dying
                raise self._fail(function, None, str(exc)) from None
            except (OSError, pickle.UnpicklingError, EOFError, ValueError) as exc:  # a reply that is not plain data
                raise self._fail(function, None, f"{type(exc).__name__}: {exc}", kill=True) from None
        status = reply[0]
        if status == "ok":
            _spent.cpu = getattr(_spent, "cpu", 0.0) + reply[2]
            return reply[1]
        if status == "memory":
            raise WorkerFailure(function, "memory", f"{self.limits.memory_bytes >> 20} MiB address space; {reply[1]}")
        _, module, name, message = reply
        raise _exception(module, name, message)

    @property
    def running(self) -> bool:
        """Whether a child is alive (a call to a stopped worker starts a fresh one)."""
        return self._proc is not None and self._proc.poll() is None

    def close(self) -> None:
        with self._lock:
            self._stop()

    def output_tail(self) -> str:
        return bytes(self._output).decode("utf-8", "replace")

    def _start(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            return
        self._stop()
        request_r, request_w = os.pipe()
        reply_r, reply_w = os.pipe()
        env = dict(os.environ, GGML_NO_BACKTRACE="1")  # ggml would run gdb for a backtrace
        env.pop("PYTHONFAULTHANDLER", None)
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH", "")) if p)
        limits = self.limits
        try:
            proc = subprocess.Popen(
                [self.python, "-m", "tokaudit.worker", str(request_r), str(reply_w), str(limits.memory_bytes)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=(request_r, reply_w),
                env=env,
                close_fds=True,
            )
        except OSError as exc:
            for fd in (request_r, request_w, reply_r, reply_w):
                os.close(fd)
            raise WorkerFailure("start", None, f"cannot start a worker process: {exc.strerror or exc}") from None
        os.close(request_r)
        os.close(reply_w)
        self._proc, self._to_child, self._from_child = proc, request_w, reply_r
        self._output = bytearray()
        self._drain = threading.Thread(target=self._keep_output, args=(proc.stdout, self._output), daemon=True)
        self._drain.start()
        self.starts += 1

    @staticmethod
    def _keep_output(stream: Any, kept: bytearray) -> None:
        """Read the child's stdout/stderr to its end, keeping the last MAX_OUTPUT_BYTES."""
        while block := stream.read1(65536):
            kept += block
            if len(kept) > MAX_OUTPUT_BYTES:
                del kept[: len(kept) - MAX_OUTPUT_BYTES]
        stream.close()

    def _read(self, n: int, deadline: float) -> bytes:
        chunks, got = [], 0
        fd = self._from_child
        assert fd is not None, "call() reads only after _start() opened the pipe"
        while got < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _TimedOut
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                raise _TimedOut
            chunk = os.read(fd, min(n - got, 1 << 20))
            if not chunk:
                raise _Died("")
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def _fail(self, function: str, limit: str | None, detail: str, kill: bool = False) -> WorkerFailure:
        """Stop the child (dead, dying, past a limit, or sending what it should not) and say what happened."""
        proc = self._proc
        status = 0
        if proc is not None:
            if limit is not None or kill:
                proc.kill()
            try:
                status = proc.wait(5)
            except subprocess.TimeoutExpired:  # closed its pipe but lives on
                proc.kill()
                status = proc.wait()
        if self._drain is not None:
            self._drain.join(5)
        self._stop()
        last = _last_line(bytes(self._output))
        if kill:
            return WorkerFailure(function, None, detail)
        if limit is None:
            if status == -signal.SIGXCPU:
                return WorkerFailure(function, "cpu time", f"{self._cpu} s")
            if any(m in last for m in ("MemoryError", "bad_alloc", "failed to allocate", "memory allocation of")):
                return WorkerFailure(function, "memory", f"{self.limits.memory_bytes >> 20} MiB address space; {last}")
            how = signal.Signals(-status).name if status < 0 else f"exit status {status}"
            detail = ": ".join(d for d in (how, last or detail) if d)
        return WorkerFailure(function, limit, detail)

    def _stop(self) -> None:
        for fd in (self._to_child, self._from_child):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._to_child = self._from_child = None
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:  # closing its request pipe ends it; a busy one is killed
            try:
                proc.wait(0.5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


class _TimedOut(Exception):
    pass


class _Died(Exception):
    pass


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _last_line(output: bytes) -> str:
    """The child's last meaningful line, with a build path shortened to its file name, at most 300 characters."""
    import re

    lines = [line.strip() for line in output.decode("utf-8", "replace").splitlines() if line.strip()]
    if not lines:
        return ""
    return re.sub(r"\S*/([^/\s]+\.(?:cpp|c|h|py):\d+)", r"\1", lines[-1])[:300]


def _exception(module: str, name: str, message: str) -> Exception:
    """The exception the function raised in the child: the same class when it is one of tokaudit's, else a
    :class:`WorkerError` naming it."""
    if module.startswith("tokaudit."):
        from importlib import import_module

        try:
            cls = getattr(import_module(module), name)
        except (ImportError, AttributeError):
            cls = None
        if isinstance(cls, type) and issubclass(cls, Exception):
            try:
                return cls(message)
            except Exception:  # noqa: BLE001 - a constructor with other arguments
                pass
    return WorkerError(name, message)


#: Per thread of the parent: the CPU seconds worker children spent on that thread's calls that came back.
_spent = threading.local()


def cpu_seconds() -> float:
    """CPU seconds the workers' children spent on this thread's calls so far (those that came back). A budget kept
    on it does not depend on the machine's load or on other threads waiting for the same worker (``scan --jobs``),
    as a wall clock read around :meth:`Worker.call` would."""
    return getattr(_spent, "cpu", 0.0)


_shared: dict[str, Worker] = {}
_shared_lock = threading.Lock()


def shared_worker(
    name: str, limits: Limits, modules: tuple[str, ...] = ("tokaudit.",), python: str | None = None
) -> Worker:
    """The one worker of this process for ``name`` (``llama.cpp``; part of what keeps a run within budget is
    that a vocabulary is loaded once per run, not once per call), stopped at exit. ``modules`` and ``python`` are
    those of the first call (see :class:`Worker`)."""
    with _shared_lock:
        worker = _shared.get(name)
        if worker is None:
            if not _shared:
                import atexit

                atexit.register(_close_all)
            worker = _shared[name] = Worker(limits, modules, python)
        return worker


def _close_all() -> None:
    for worker in list(_shared.values()):
        worker.close()


# -- the child's side ----------------------------------------------------------------------------------------


def _serve(request_fd: int, reply_fd: int, memory_bytes: int) -> None:
    import resource
    from importlib import import_module

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _lower(resource.RLIMIT_AS, memory_bytes, hard_too=True)
    requests = os.fdopen(request_fd, "rb", buffering=0)
    while True:
        header = _read_exactly(requests, _HEADER.size)
        if header is None:
            return  # the parent closed the pipe: done
        (size,) = _HEADER.unpack(header)
        body = _read_exactly(requests, size)
        if body is None:
            return
        function, args, cpu_seconds = pickle.loads(body)  # from the parent, which is trusted
        usage = resource.getrusage(resource.RUSAGE_SELF)
        used = usage.ru_utime + usage.ru_stime
        _lower(resource.RLIMIT_CPU, int(used) + 1 + cpu_seconds)
        try:
            module, name = function.split(":", 1)
            value = getattr(import_module(module), name)(*args)
            usage = resource.getrusage(resource.RUSAGE_SELF)
            reply = pickle.dumps(("ok", value, usage.ru_utime + usage.ru_stime - used), protocol=_PROTOCOL)
        except MemoryError as exc:
            reply = pickle.dumps(("memory", f"MemoryError {exc}".strip()), protocol=_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - sent back to the caller (a value that does not pickle too)
            text = (str(exc).strip().splitlines() or [""])[0][:1000]
            reply = pickle.dumps(("raise", type(exc).__module__, type(exc).__qualname__, text), protocol=_PROTOCOL)
        _write_all(reply_fd, _HEADER.pack(len(reply)) + reply)


def _lower(which: int, value: int, hard_too: bool = False) -> None:
    """Set a resource's soft limit (and with ``hard_too`` its hard limit) to ``value``, or to the hard limit
    already in force when that is lower (tokaudit itself may run under one)."""
    import resource

    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value if hard_too else hard))


def _read_exactly(stream: Any, n: int) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        chunk = stream.read(n - got)
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def echo(value: Any) -> Any:
    """Returns its argument: a round trip's cost (``bench/worker.py``) and the worker's own tests."""
    return value


if __name__ == "__main__":
    _serve(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
