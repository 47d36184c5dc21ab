"""The project's own tooling: CI runs the README's test command exactly (.ci/run), and what that command needs is in
the test extras."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli

_TEST_COMMENT = "# install the test dependencies and run the tests (what CI runs, .ci/run)"


def readme_test_commands() -> list[str]:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    return [lines[i + 1] for i, line in enumerate(lines) if line == _TEST_COMMENT]


def test_ci_runs_the_readme_test_command_exactly() -> None:
    commands = readme_test_commands()
    assert len(commands) == 2 and len(set(commands)) == 1, commands
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert ci[-1] == commands[0]


def test_the_test_command_runs_in_parallel_with_durations_and_its_tools_are_test_extras() -> None:
    (command,) = set(readme_test_commands())
    assert command.endswith(
        "&& ruff check && ruff format --check && mypy && python -m pytest -rs -n auto --dist loadgroup --durations=25"
    )
    extras = (ROOT / "pyproject.toml").read_text(encoding="utf-8").split("[project.optional-dependencies]")[1]
    test = extras.split("\n]\n", 1)[0]
    for tool in ("pytest-xdist", "ruff", "mypy"):
        assert re.search(f'"{tool}>=[0-9.]+,<[0-9.]+"', test), tool


def test_loadgroup_runs_each_shared_work_group_on_one_worker(
    pytestconfig: pytest.Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README command's ``--dist loadgroup`` schedules by tests/conftest.py's groups (pytest-xdist 3.8's own
    ``xdist_group`` suffix is lost under pytest 9.2): one work unit per shared-work file and per golden tokenizer,
    every other test a unit of its own."""
    from xdist.remote import Producer

    from tests.conftest import pytest_xdist_make_scheduler

    monkeypatch.setattr(pytestconfig.option, "dist", "loadgroup")
    monkeypatch.setattr(pytestconfig.option, "tx", ["2*popen"])  # what -n 2 sets
    scope = pytest_xdist_make_scheduler(pytestconfig, Producer("test", enabled=False))._split_scope
    flags = "tests/stream/test_special_flags.py"
    assert {scope(f"{flags}::test_backends_agree_on_what_is_skipped"), scope(f"{flags}::test_x[hf]")} == {flags}
    golden = "tests/parsers/test_parsers_golden.py::test_grammar_matches_the_real_parser"
    qwen3 = {scope(f"{golden}[{case}:vllm:hermes:None]") for case in ("qwen3-0.6b", "qwen3-coder", "qwq-32b")}
    assert qwen3 == {f"{golden}[qwen3]"} != {scope(f"{golden}[gpt-oss:vllm:None:None]")}
    plain = "tests/stream/test_stream_units.py::test_char_range_and_description"
    assert scope(plain) == plain and scope(f"{plain}@g") == "g"  # xdist's own suffix, should it come back
    monkeypatch.setattr(pytestconfig.option, "dist", "load")
    assert pytest_xdist_make_scheduler(pytestconfig, Producer("test", enabled=False)) is None


# --- output formats: one table (tokaudit/report/formats.py), every member wired ----------------------------------

#: How each format's output starts or looks, told apart from every other format's (rich is the fallback an unwired
#: format used to print, so no other format may look like it).
_LOOKS = {
    "rich": lambda out: "TA101 vocab-gap" in out and out.rstrip().endswith("(1 at or above --fail-on error)"),
    "json": lambda out: json.loads(out)["command"] == "scan",
    "jsonl": lambda out: [json.loads(line)["target"] for line in out.splitlines()] == [TINY, CLEAN],
    "sarif": lambda out: json.loads(out)["version"] == "2.1.0",
    "junit": lambda out: out.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="tokaudit scan"'),
    "markdown": lambda out: out.startswith("## tokaudit scan: ❌ FAIL\n"),
    "github": lambda out: out.startswith(
        f"::group::tokaudit scan {TINY}\n::error file={TINY}/config.json,line=2,col=3,"
    ),
    "concise": lambda out: (
        f"{TINY}/config.json:2:3: TA101 vocab-gap " in out and not out.startswith(("::", "{", "<", "#"))
    ),
}
TINY, CLEAN = "fixtures/tiny-tiktoken", "fixtures/clean-bpe"


def test_every_output_format_has_a_row_and_its_own_renderer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tokaudit.cli.common import OutputFormat
    from tokaudit.report.formats import FORMATS

    assert [f.value for f in OutputFormat] == list(FORMATS) and set(_LOOKS) == set(FORMATS)
    assert all(f.help and f.stream in ("json", "commands", "text") for f in FORMATS.values())
    monkeypatch.chdir(ROOT)
    # one scan writes every format --also takes to a file (rich, the default, too); jsonl is a second scan's stdout
    also = [name for name, f in FORMATS.items() if f.also]
    args = [a for name in also for a in ("--also", f"{name}={tmp_path / name}")]
    assert run_cli("scan", TINY, "--quiet", *args).exit_code == 1
    lines = run_cli("scan", TINY, CLEAN, "--format", "jsonl")
    assert lines.exit_code == 1
    outputs = {name: (tmp_path / name).read_text(encoding="utf-8") for name in also} | {"jsonl": lines.stdout}
    assert set(outputs) == set(FORMATS) and [f for f, f_ in FORMATS.items() if not f_.also] == ["jsonl"]
    for name, out in outputs.items():
        assert _LOOKS[name](out), (name, out[:300])
        others = [other for other, looks in _LOOKS.items() if other != name and _safe(looks, out)]
        assert others == [], (name, others)


def test_format_option_help_comes_from_the_table() -> None:
    """Every command's ``--format`` help lists the formats of report/formats.py, each with its help line, in the
    table's order (no hand-written list to fall behind a new format)."""
    import typer.main

    from tokaudit.cli.app import build_app
    from tokaudit.report.formats import FORMATS

    expected = "Output format: " + "; ".join(f"{name}: {f.help}" for name, f in FORMATS.items()) + "."
    commands = typer.main.get_command(build_app()).commands
    # the commands whose --format takes the report formats (rule and rules print a page: rich or json)
    helps = {
        name: p.help
        for name, c in commands.items()
        for p in c.params
        if "--format" in getattr(p, "opts", ()) and list(getattr(p.type, "choices", ())) == list(FORMATS)
    }
    assert len(helps) >= 8 and set(helps.values()) == {expected}, helps


def _safe(looks, out: str) -> bool:
    try:
        return bool(looks(out))
    except (ValueError, KeyError, TypeError):
        return False


# --- backends: one table (tokaudit/backends/kinds.py), every member loads, the help lists come from it --------------

#: A model each backend applies to, and what its own loader answers when the library cannot serve that model here
#: (transformers 5 has no slow class for these models; transformers reads a GGUF only with torch, not a test extra).
_BACKEND_CASES = {
    "tiktoken": ("fixtures/tiny-tiktoken", None),
    "hf": ("fixtures/tiny-tiktoken", None),
    "reference": ("fixtures/tiny-tiktoken", None),
    "strict": ("fixtures/tiny-tiktoken", None),
    "sentencepiece": ("fixtures/spm-unigram", None),
    "fastokens": ("fixtures/clean-bpe", None),
    "transformers-fast": ("fixtures/clean-bpe", None),
    "transformers-slow": ("fixtures/clean-bpe", "has no slow tokenizer for this model"),
    "llama.cpp": ("fixtures/gguf/clean.gguf", None),
    "transformers-gguf": ("fixtures/gguf/clean.gguf", "reads a GGUF only with torch installed"),
}


def test_every_backend_has_a_row_and_its_own_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    from tokaudit.backends.kinds import BACKENDS
    from tokaudit.backends.registry import BACKEND_NAMES, GGUF_BACKENDS, NEEDS, load_backends
    from tokaudit.model.load import load_model

    assert list(BACKENDS) == list(BACKEND_NAMES) and set(_BACKEND_CASES) == set(BACKENDS)
    assert GGUF_BACKENDS == ("llama.cpp", "transformers-gguf") and NEEDS["transformers-gguf"] == (
        "transformers",
        "torch",
    )
    assert all(k.help for k in BACKENDS.values())
    monkeypatch.chdir(ROOT)
    for name, (target, refusal) in _BACKEND_CASES.items():
        (loaded,) = load_backends(load_model(target), [name])
        assert loaded.name == name
        if loaded.backend is not None:
            assert loaded.backend.name == name, (name, loaded.backend)
        else:
            assert refusal is not None and refusal in (loaded.unavailable or ""), (name, loaded.unavailable)


def test_backend_option_help_lists_come_from_the_table() -> None:
    import typer.main

    from tokaudit.backends.registry import BACKEND_NAMES
    from tokaudit.cli.app import build_app

    commands = typer.main.get_command(build_app(["compare", "explain", "decode", "encode"])).commands
    helps = {
        name: next(p.help for p in commands[name].params if p.name in ("backends", "backend")) for name in commands
    }
    listed = ", ".join(BACKEND_NAMES)
    assert helps["compare"].startswith(f"Comma-separated: {listed} (default: every backend")
    assert helps["explain"].startswith(f"Comma-separated: {listed} (default: every backend")
    choice = ", ".join(BACKEND_NAMES[:-1]).replace("strict", "strict (decode only)") + f" or {BACKEND_NAMES[-1]}. "
    assert helps["decode"].startswith(choice) and helps["encode"].startswith(choice)
