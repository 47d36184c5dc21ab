"""The project's own tooling: CI runs the README's test command exactly (.ci/run), and what that command needs is in
the test extras."""

from __future__ import annotations

import re

from tests.conftest import ROOT

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
    assert command.endswith("&& ruff check && mypy && python -m pytest -rs -n auto --dist loadgroup --durations=25")
    extras = (ROOT / "pyproject.toml").read_text(encoding="utf-8").split("[project.optional-dependencies]")[1]
    test = extras.split("\n]\n", 1)[0]
    for tool in ("pytest-xdist", "ruff", "mypy"):
        assert re.search(f'"{tool}>=[0-9.]+,<[0-9.]+"', test), tool
