"""The bounded worker process (tokaudit/worker.py): what comes back from a call that returns, raises, dies, or
runs past a limit, and that nothing the child writes reaches tokaudit's own stdout or stderr.

The misbehaving functions are tests/worker_probes.py, run by a worker that allows that module."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tokaudit.errors import InputError
from tokaudit.worker import Limits, Worker, WorkerError, WorkerFailure

TESTS = Path(__file__).resolve().parent


@pytest.fixture
def worker(monkeypatch: pytest.MonkeyPatch) -> Worker:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    w = Worker(
        Limits(memory_bytes=512 * 1024**2, cpu_seconds=2, wall_seconds=4.0), modules=("tokaudit.", "worker_probes:")
    )
    yield w
    w.close()


def test_plain_data_goes_and_comes_back_and_the_child_is_reused(worker: Worker) -> None:
    value = {
        "ids": [1, 2, 3],
        "text": "h\u00e9llo\x00",
        "raw": b"\xff\xfe",
        "nested": [(1, None, True), {4.5}],
        "big": 2**70,
    }
    assert worker.call("tokaudit.worker:echo", value) == value
    first = worker.call("worker_probes:pid")
    assert worker.call("worker_probes:pid") == first != os.getpid()
    assert worker.starts == 1


def test_cpu_seconds_count_the_childs_work_on_this_threads_calls_only(worker: Worker) -> None:
    import threading

    from tokaudit.worker import cpu_seconds

    start = cpu_seconds()
    worker.call("worker_probes:burn", 0.3)
    assert 0.29 <= cpu_seconds() - start < 1.0
    start = cpu_seconds()
    worker.call("worker_probes:sleep", 0.3)  # waiting burns no CPU time
    assert cpu_seconds() - start < 0.1
    # another thread's call, and this thread's wait for the worker it holds, count for this thread neither
    other = threading.Thread(target=worker.call, args=("worker_probes:burn", 0.8))
    other.start()
    time.sleep(0.2)
    start, wall = cpu_seconds(), time.perf_counter()
    worker.call("tokaudit.worker:echo", 1)
    other.join()
    assert time.perf_counter() - wall > 0.2 and cpu_seconds() - start < 0.1


def test_an_exception_in_the_child_is_raised_in_the_parent(worker: Worker) -> None:
    with pytest.raises(WorkerError, match="^bad value$") as err:
        worker.call("worker_probes:raise_value_error", "bad value")
    assert err.value.kind == "ValueError"
    with pytest.raises(InputError, match="^a tokaudit error$"):  # one of tokaudit's classes: the same class
        worker.call("worker_probes:raise_input_error", "a tokaudit error")
    assert worker.call("tokaudit.worker:echo", 5) == 5 and worker.starts == 1  # it did not die


def test_only_named_functions_of_the_allowed_modules_run(worker: Worker) -> None:
    with pytest.raises(ValueError, match="not a function this worker runs: 'os:system'"):
        worker.call("os:system", "true")
    with pytest.raises(ValueError, match="not a function this worker runs"):
        Worker(Limits()).call("worker_probes:pid")


def test_a_reply_that_is_not_plain_data_is_refused(worker: Worker) -> None:
    with pytest.raises(WorkerFailure, match="^the worker process died"):
        worker.call("worker_probes:returns_object")
    assert worker.call("tokaudit.worker:echo", [1]) == [1]  # a new child serves the next call
    assert worker.starts == 2


def test_the_address_space_limit(worker: Worker) -> None:
    with pytest.raises(WorkerFailure) as err:
        worker.call("worker_probes:allocate", 1024**3)
    assert err.value.limit == "memory"
    assert str(err.value) == "the worker process ran out of its memory limit (512 MiB address space; MemoryError)"
    # memory C code allocates: malloc fails, and code that writes anyway dies (SIGABRT here)
    with pytest.raises(WorkerFailure, match=r"^the worker process died \(SIGABRT\)$"):
        worker.call("worker_probes:allocate_in_c", 1024**3)
    assert worker.call("worker_probes:allocate", 64 * 1024**2) == 64 * 1024**2


def test_the_cpu_limit_kills_a_spinning_child(worker: Worker) -> None:
    start = time.monotonic()
    with pytest.raises(WorkerFailure) as err:
        worker.call("worker_probes:spin", wall_seconds=30)
    assert (err.value.limit, err.value.detail) == ("cpu time", "2 s")
    assert (
        time.monotonic() - start < 30
    )  # the CPU limit ended it, not the wall deadline (2 CPU seconds took 11 s at load 8)
    # the limit is per call: a worker that used CPU before gets the whole budget again
    assert worker.call("tokaudit.worker:echo", "after") == "after"


def test_the_wall_deadline_kills_a_child_that_does_not_answer(worker: Worker) -> None:
    start = time.monotonic()
    with pytest.raises(WorkerFailure) as err:
        worker.call("worker_probes:sleep", 60.0, wall_seconds=1.0)
    assert (err.value.limit, err.value.detail) == ("wall time", "1 s")
    assert time.monotonic() - start < 5
    assert worker.call("worker_probes:sleep", 0.1) == 0.1


def test_a_death_names_the_signal_and_the_last_line_and_nothing_reaches_our_output(tmp_path: Path) -> None:
    """Run in a fresh process whose stdout and stderr are captured: ggml's backtrace stays in the worker."""
    script = (
        "from tokaudit.worker import Limits, Worker, WorkerFailure\n"
        "w = Worker(Limits(), modules=('worker_probes:',))\n"
        "for name in ('abort_noisily', 'exit_quietly'):\n"
        "    try:\n"
        "        w.call('worker_probes:' + name)\n"
        "    except WorkerFailure as exc:\n"
        "        open(name, 'w').write(str(exc))\n"
        "print(w.call('worker_probes:write_stdout', 'to the worker only'), w.starts, end='', file=open('last', 'w'))\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS.parent), str(TESTS)]))
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, timeout=120)
    assert (out.returncode, out.stdout, out.stderr) == (0, b"", b"")
    assert (tmp_path / "abort_noisily").read_text() == (
        "the worker process died (SIGABRT: llama-vocab.cpp:123: GGML_ASSERT(unk_id != -1) failed)"
    )
    assert (tmp_path / "exit_quietly").read_text() == "the worker process died (exit status 7)"
    assert (tmp_path / "last").read_text() == "to the worker only 3"


def test_a_worker_closes_with_the_parent(worker: Worker) -> None:
    pid = worker.call("worker_probes:pid")
    worker.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists()
