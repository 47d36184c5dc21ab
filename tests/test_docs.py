"""The documentation says what tokaudit does: every ```console example of README.md and docs/commands/ is the
output of its command (scripts/update_docs.py rewrites them), every command has its page, and every relative
link of the docs leads to a file."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

from tests.conftest import ROOT
from tokaudit.cli.app import COMMANDS

_spec = importlib.util.spec_from_file_location("update_docs", ROOT / "scripts" / "update_docs.py")
update_docs = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["update_docs"] = update_docs  # its dataclass looks itself up there
_spec.loader.exec_module(update_docs)  # type: ignore[union-attr]


def test_every_console_example_is_what_tokaudit_prints(monkeypatch) -> None:
    monkeypatch.setattr(update_docs, "RULE_PAGES", "docs/rules/none")  # tests/test_rule_docs.py runs those in-process
    stale = [f"{e.path.relative_to(ROOT)}: $ tokaudit {e.command}" for e, _ in update_docs.stale()]
    assert stale == [], "run `python scripts/update_docs.py` and commit what it changes"


def test_every_command_has_a_page_with_its_help_and_an_example() -> None:
    pages = ROOT / "docs" / "commands"
    for name in COMMANDS:
        page = "rule" if name == "rules" else name
        text = (pages / f"{page}.md").read_text(encoding="utf-8")
        assert f"```console\n$ tokaudit {name} --help\n" in text, name
        runs = [e.command for e in update_docs.examples(pages / f"{page}.md") if not e.command.endswith("--help")]
        assert runs, f"{page}.md has no example run"
        assert f"[`{page}`]({page}.md)" in (pages / "README.md").read_text(encoding="utf-8")


def test_the_readme_is_short_and_starts_with_the_kimi_headline() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    first_screen = "\n".join(text.splitlines()[:30])
    assert "tokaudit scan fixtures/kimi-k2.5" in first_screen and "TA101 vocab-gap" in first_screen
    assert "## Contents" in text and "## Releasing" in text


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings: lower case, punctuation dropped, spaces as hyphens."""
    out = set()
    for heading in re.findall(r"^#{1,6} (.+)$", path.read_text(encoding="utf-8"), re.M):
        out.add(re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-"))
    return out


def test_relative_links_lead_to_files_and_headings() -> None:
    broken = []
    for path in [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)", path.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            linked = (path.parent / target) if target else path
            if not linked.exists():
                broken.append(f"{path.relative_to(ROOT)}: {target}")
            elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
                broken.append(f"{path.relative_to(ROOT)}: {target}#{anchor}")
    assert broken == []


def test_elided_blocks_keep_their_first_and_last_lines() -> None:
    example = update_docs.Example(ROOT / "README.md", "x", ["a", "…", "y", "z"], 0, 0)
    assert update_docs.expected(example, ["a", "b", "c", "y", "z"]) == ["a", "…", "y", "z"]
    assert update_docs.expected(example, ["a", "y", "z"]) == ["a", "y", "z"]  # nothing left out
    assert update_docs.shorten("word " * 30) == ("word " * 19).rstrip() + " …"
