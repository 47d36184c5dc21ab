"""Shared test helpers: fixture paths and a CLI runner that keeps stdout and stderr apart."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tokaudit.cli.app import app

# the persistent result cache (tokaudit.result_cache) stays off: every test computes what it asserts;
# tests/test_result_cache.py turns it on in a temporary directory
os.environ["TOKAUDIT_CACHE"] = "off"

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str


def run_cli(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
    """Invoke ``tokaudit ARGS`` in-process. Exceptions that escaped tokaudit's own handling fail the test."""
    result = CliRunner().invoke(app, [str(a) for a in args], input=input, env=env, catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Result(result.exit_code, result.stdout, result.stderr)


#: Test files whose tests share work that a process does once: a module-scoped fixture (a wheel build, a loaded
#: model, the 70 templates rendered). Under ``--dist loadgroup`` each runs on one worker, so that work is done once,
#: not once per worker. pytest_collection_modifyitems fails the run for a module-scoped fixture outside this list.
SHARED_WORK_FILES = frozenset(
    {
        "tests/backends/test_merge_recovery.py",
        "tests/checks/test_rules_kimi.py",
        "tests/real/test_llamacpp_engine_real.py",
        "tests/real/test_templates_real.py",
        "tests/stream/test_replay.py",
        "tests/stream/test_replay_bulk.py",
        "tests/stream/test_replay_kimi.py",
        "tests/stream/test_replay_steps.py",
        "tests/stream/test_special_flags.py",
        "tests/test_packaging.py",
    }
)
#: test_parsers_golden's rows load their case's tokenizer once per process (a module-level cache): grouped by it.
GOLDEN = "tests/parsers/test_parsers_golden.py::test_grammar_matches_the_real_parser["


@lru_cache(maxsize=1)
def _golden_tokenizers() -> dict[str, str]:
    lines = (ROOT / "tests" / "data" / "parser_cases.jsonl").read_text(encoding="utf-8").splitlines()
    return {c["case"]: c["tokenizer"] for c in map(json.loads, lines)}


def shared_work_group(nodeid: str) -> str | None:
    """The group a test runs in under ``--dist loadgroup`` (None: any worker): its file for SHARED_WORK_FILES, its
    tokenizer for a golden parser row."""
    path = nodeid.split("::", 1)[0]
    if path in SHARED_WORK_FILES:
        return path
    if nodeid.startswith(GOLDEN):
        case = nodeid[len(GOLDEN) :].split(":", 1)[0]
        return f"{GOLDEN}{_golden_tokenizers().get(case, case)}]"
    return None


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup`` with the groups of shared_work_group. pytest-xdist 3.8 groups by a suffix it writes to
    ``item._nodeid``, which pytest 9.2 no longer reads (pytest-dev/pytest-xdist#1386): its ``xdist_group`` marks group
    nothing. The groups are found from the test id here, on the controller, which collects no test."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class SharedWorkScheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)  # an xdist_group suffix, should pytest-xdist read one again
            return scope if scope != nodeid else (shared_work_group(nodeid) or nodeid)

    return SharedWorkScheduling(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that uses a module-scoped fixture must be in SHARED_WORK_FILES (or the fixture is built per worker)."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)  # pytest's per-test fixture closure (no public accessor)
        defs = info.name2fixturedefs.values() if info is not None else ()
        if any(d and d[-1].scope == "module" for d in defs) and shared_work_group(item.nodeid) is None:
            raise pytest.UsageError(
                f"{item.nodeid} uses a module-scoped fixture: add its file to SHARED_WORK_FILES in tests/conftest.py"
            )


@pytest.fixture(autouse=True)
def _pinned_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "GITHUB_ACTIONS", "CI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setenv("TERM", "dumb")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # tests never reach the network
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("TOKAUDIT_CACHE", "off")


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


def tree_snapshot(path: Path) -> dict[str, tuple[int, int]]:
    """(size, mtime_ns) of every file under path, to prove a command wrote nothing there."""
    out = {}
    for dirpath, _, files in os.walk(path):
        for name in files:
            p = Path(dirpath) / name
            st = p.stat()
            out[str(p.relative_to(path))] = (st.st_size, st.st_mtime_ns)
    return out


@pytest.fixture(scope="session")
def kimi() -> tuple[object, list[object]]:
    """The Kimi-K2.5-shaped model with its tiktoken and strict backends, loaded once for the session."""
    from tokaudit.backends.registry import load_backends
    from tokaudit.model.load import load_model

    model = load_model(str(FIXTURES / "kimi-k2.5"))
    return model, load_backends(model, ["tiktoken", "strict"])


@pytest.fixture(scope="session")
def real_dirs() -> dict[str, Path]:
    """The real-tokenizer model directories (downloaded once by scripts/fetch_real_tokenizers.py into a
    cache outside git); the test is skipped, with the reason, only when the download is impossible."""
    from tests.real import realkit

    fetch = realkit.fetch_module()
    try:
        return fetch.fetch()
    except fetch.OfflineError as exc:
        pytest.skip(f"real tokenizers cannot be downloaded: {exc}")


@pytest.fixture(scope="session")  # per worker: the per-file tests of the vocab GGUFs spread over the xdist workers
def vocab_files() -> dict[str, Path]:
    """llama.cpp's 19 vocab GGUFs (ggml-vocab-NAME.gguf by NAME), fetched into the real cache by
    scripts/fetch_real_tokenizers.py; skipped, with the reason, only when the download is impossible."""
    from tests.real import realkit

    fetch = realkit.fetch_module()
    names = [e["name"] for e in fetch.load_lock()["tokenizers"] if e["name"].startswith("gguf-")]
    try:
        dirs = fetch.fetch(only=names)
    except fetch.OfflineError as exc:
        pytest.skip(f"llama.cpp's vocab GGUFs cannot be downloaded: {exc}")
    return {name[len("gguf-") :]: next(d.glob("*.gguf")) for name, d in dirs.items()}


@pytest.fixture(scope="module")
def replay_models():
    """``get(target)``: the model and replay's full decode tokenizer (a LoadedTokenizer), loaded once per module."""
    from tokaudit.model.load import load_model
    from tokaudit.stream.replay import load_tokenizer

    cache: dict = {}

    def get(target):
        if target not in cache:
            model = load_model(str(target))
            cache[target] = (model, load_tokenizer(model))
        return cache[target]

    return get
