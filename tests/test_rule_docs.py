"""docs/rules: a page per catalog code, in the fixed shape, whose example is what tokaudit prints; ``tokaudit rule``
and ``tokaudit rules`` read the pages."""

from __future__ import annotations

import json
import re
import shlex

import pytest

from tests.conftest import ROOT, run_cli
from tokaudit import REPOSITORY_URL, __version__
from tokaudit.catalog import CATALOG
from tokaudit.rule_docs import SECTIONS, pages_dir, parse_page, rule_page

PAGES = ROOT / "docs" / "rules"
_CONSOLE = re.compile(r"```console\n\$ tokaudit (?P<command>[^\n]+)\n(?P<output>.*?)```", re.S)


def test_the_pages_are_found_in_the_checkout() -> None:
    assert pages_dir() == PAGES


def test_every_catalog_code_has_a_page_and_every_page_a_code() -> None:
    pages = sorted(p.stem for p in PAGES.glob("TA*.md"))
    assert pages == sorted(CATALOG), "a code needs docs/rules/CODE.md (copy docs/rules/TEMPLATE.md)"


@pytest.mark.parametrize("code", sorted(CATALOG))
def test_page_shape_agrees_with_the_catalog(code: str) -> None:
    info = CATALOG[code]
    page = rule_page(code)
    assert page is not None and (page.code, page.name) == (code, info.name)
    meta, summary = page.meta.split("\n\n")
    assert meta.startswith(f"Severity: {info.severity} · Raised by: `")
    assert summary == info.summary
    assert list(page.sections) == list(SECTIONS)
    assert all(len(text) > 40 for text in page.sections.values()), "every section says something"


def _examples() -> list[tuple[str, str, list[str]]]:
    """(code, command, lines shown) of every page whose example is a console block that names output."""
    out = []
    for code in sorted(CATALOG):
        example = rule_page(code).sections["Example"]
        m = _CONSOLE.search(example)
        if m is not None and m.group("output").strip():
            out.append((code, m.group("command"), m.group("output").strip().splitlines()))
    return out


def test_most_pages_have_an_example_run_on_a_fixture() -> None:
    # the others (TA001, TA206, TA508, TA510, TA602, TA606) describe the input: no fixture triggers them yet
    assert len(_examples()) >= 43


_RUNS: dict[str, str] = {}


@pytest.mark.parametrize("code,command,shown", _examples(), ids=[e[0] for e in _examples()])
def test_example_output_is_what_tokaudit_prints(code: str, command: str, shown: list[str]) -> None:
    args = shlex.split(command)
    assert args[-2:] == ["--format", "concise"], "examples use the concise format"
    if command not in _RUNS:
        _RUNS[command] = run_cli(*args).stdout
    printed = _RUNS[command].splitlines()
    for line in shown:  # `python scripts/update_docs.py` rewrites a page's example when this fails
        assert f": {code} " in line
        if line.endswith(" …"):
            assert any(p.startswith(line[:-2]) for p in printed), line
        else:
            assert line in printed


def test_rule_prints_the_page() -> None:
    result = run_cli("rule", "TA101")
    assert result.exit_code == 0 and result.stdout == (PAGES / "TA101.md").read_text(encoding="utf-8")
    assert run_cli("rule", "vocab-gap").stdout == result.stdout == run_cli("rule", "ta101").stdout


def test_rule_json_and_an_unknown_rule() -> None:
    doc = json.loads(run_cli("rule", "TA802", "--format", "json").stdout)
    assert (doc["code"], doc["name"], doc["severity"]) == ("TA802", "template-engine-divergence", "error")
    assert doc["url"] == f"{REPOSITORY_URL}/blob/v{__version__}/docs/rules/TA802.md"
    assert list(doc["sections"]) == list(SECTIONS)
    bad = run_cli("rule", "TA1O1")
    assert (bad.exit_code, bad.stdout, bad.stderr) == (
        2,
        "",
        "tokaudit: error: key CODE: unknown rule 'TA1O1' (did you mean TA101?)\n",
    )


def test_rules_lists_every_code() -> None:
    lines = run_cli("rules").stdout.splitlines()
    assert [line.split()[0] for line in lines] == sorted(CATALOG)
    assert lines[2].split()[:3] == ["TA101", "vocab-gap", "error"]  # after TA001 and TA010
    doc = json.loads(run_cli("rules", "--format", "json").stdout)
    assert [r["code"] for r in doc] == sorted(CATALOG) and all(r["sections"] for r in doc)


def test_a_page_without_a_title_is_not_a_page() -> None:
    assert parse_page("TA101 vocab-gap\n\n## What it finds\n") is None
    page = parse_page("# TA101 vocab-gap\r\n\r\nSeverity: error\r\n\r\n## What it finds\r\nx\r\n")
    assert page is not None and page.sections == {"What it finds": "x"} and page.meta == "Severity: error"
