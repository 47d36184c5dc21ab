"""The page of each finding code: ``docs/rules/TA101.md`` in the repository, ``tokaudit/rule_docs/`` in an
installed package (copied there by setup.py). ``tokaudit rule CODE`` prints it and SARIF carries it as the
rule's help, so what a user reads in a terminal and in GitHub's code scanning is the same text.

A page is plain Markdown in a fixed shape (``docs/rules/TEMPLATE.md``)::

    # TA101 vocab-gap

    Severity: error · Raised by: `scan`

    ## What it finds
    ...
    ## Why it breaks serving
    ## Stacks
    ## How to fix
    ## Example

The code, name and severity must be the catalog's (``tests/test_rule_docs.py`` checks every page).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tokaudit import REPOSITORY_URL, __version__

#: The sections every page has, in this order.
SECTIONS = ("What it finds", "Why it breaks serving", "Stacks", "How to fix", "Example")
_TITLE = re.compile(r"# (TA\d{3}) ([a-z0-9-]+)\s*$")
#: Largest page read: a page is a screen or two of text.
MAX_PAGE_BYTES = 64 * 1024


@dataclass(frozen=True)
class RulePage:
    """One rule's page: its title fields, the line under the title and each section's text."""

    code: str
    name: str
    #: ``Severity: error · Raised by: `scan` ``
    meta: str
    sections: dict[str, str]
    #: The whole page as written.
    text: str

    @property
    def body(self) -> str:
        """The page without its title line (SARIF shows the rule's id and name above it)."""
        return self.text.split("\n", 1)[1].strip() + "\n" if "\n" in self.text else ""


def pages_dir() -> Path | None:
    """Where the pages are: beside the installed package, else the checkout's ``docs/rules``."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "rule_docs", here.parent / "docs" / "rules"):
        if candidate.is_dir():
            return candidate
    return None


def rule_url(code: str) -> str:
    """The page's web address at this release's tag."""
    return f"{REPOSITORY_URL}/blob/v{__version__}/docs/rules/{code}.md"


def rule_page(code: str) -> RulePage | None:
    """The page of ``code`` (``TA101``), or None when there is none."""
    directory = pages_dir()
    if directory is None or not re.fullmatch(r"TA\d{3}", code):
        return None
    path = directory / f"{code}.md"
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_PAGE_BYTES + 1)
    except OSError:
        return None
    return parse_page(data[:MAX_PAGE_BYTES].decode("utf-8", "replace"))


def parse_page(text: str) -> RulePage | None:
    """A page's parts, or None when its first line is not ``# CODE name``."""
    text = text.replace("\r\n", "\n")
    first, _, rest = text.partition("\n")
    title = _TITLE.fullmatch(first.strip())
    if title is None:
        return None
    head, *parts = re.split(r"^## ", rest, flags=re.MULTILINE)
    sections = {}
    for part in parts:
        heading, _, content = part.partition("\n")
        sections[heading.strip()] = content.strip()
    return RulePage(title.group(1), title.group(2), head.strip(), sections, text)


def find_code(code_or_name: str) -> str | None:
    """The catalog code a user means by ``TA101``, ``ta101`` or ``vocab-gap``; None when none."""
    from tokaudit.catalog import CATALOG

    wanted = code_or_name.strip()
    if wanted.upper() in CATALOG:
        return wanted.upper()
    return next((code for code, info in CATALOG.items() if info.name == wanted.lower()), None)


def close_match(code_or_name: str) -> str | None:
    """The code or name closest to a mistyped one (for "did you mean")."""
    import difflib

    from tokaudit.catalog import CATALOG

    words = [*CATALOG, *(info.name for info in CATALOG.values())]
    typed = code_or_name.strip()
    found = difflib.get_close_matches(typed, words, n=5)
    if not found:
        return None
    # among equally close ones, the one with the fewest characters changed in place (TA1O1: TA101, not TA811)
    best = difflib.SequenceMatcher(None, typed, found[0]).ratio()
    tied = [w for w in found if difflib.SequenceMatcher(None, typed, w).ratio() == best]
    return min(tied, key=lambda w: sum(a != b for a, b in zip(typed, w)) + abs(len(w) - len(typed)))


def rule_json(code: str) -> dict[str, object]:
    """One rule as ``tokaudit rules --format json`` lists it: the catalog's fields, the page's address and its
    sections (null when the page is missing)."""
    from tokaudit.catalog import CATALOG

    info = CATALOG[code]
    page = rule_page(code)
    return {
        "code": code,
        "name": info.name,
        "severity": info.severity,
        "summary": info.summary,
        "url": rule_url(code),
        "sections": page.sections if page is not None else None,
    }
