"""Keep the documentation's examples what tokaudit prints: every ```console block of README.md and
docs/commands/*.md whose first line is ``$ tokaudit ...`` is run (80 columns, no colour, offline, from the
repository root) and its output written under it. In a rule page (docs/rules/TAxxx.md) only the output lines
of that rule's code are kept, as many as the page shows (one at least), cut at 140 characters.

    python scripts/update_docs.py           # rewrite the blocks whose output changed
    python scripts/update_docs.py --check   # list them and exit 1 (tests/test_docs.py runs this check)

In a block, a line that is only ``…`` stands for output left out: the lines above and below it are the first
and last lines of the output. Output lines longer than 100 characters are cut at a word and end with `` …``.
Run it after changing a command's options or output, and commit what it changes.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Where the checked examples are.
DOCUMENTS = ("README.md", "docs/commands/*.md")
#: Rule pages: only their code's lines are shown (tests/test_rule_docs.py checks them by prefix).
RULE_PAGES = "docs/rules/TA*.md"
#: Longest output line shown; longer ones are cut at a word and end with " …".
MAX_LINE = 100
MAX_RULE_LINE = 140
ELIDED = "…"
_BLOCK = re.compile(r"```console\n\$ tokaudit (?P<command>[^\n]*)\n(?P<output>.*?)```", re.S)


@dataclass
class Example:
    path: Path
    command: str
    shown: list[str]
    start: int
    end: int


def documents() -> list[Path]:
    out: list[Path] = []
    for pattern in (*DOCUMENTS, RULE_PAGES):
        out += sorted(ROOT.glob(pattern))
    return out


def examples(path: Path) -> list[Example]:
    text = path.read_text(encoding="utf-8")
    return [
        Example(path, m.group("command"), m.group("output").splitlines(), m.start("output"), m.end("output"))
        for m in _BLOCK.finditer(text)
    ]


def run(command: str, code: str | None = None) -> list[str]:
    """The command's stdout as the documentation shows it (only ``code``'s lines for a rule page)."""
    env = {
        **os.environ,
        "COLUMNS": "80",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "HF_HUB_OFFLINE": "1",
        "TOKAUDIT_CACHE": "off",
    }
    for name in ("FORCE_COLOR", "GITHUB_ACTIONS", "CI"):
        env.pop(name, None)
    proc = subprocess.run(
        [sys.executable, "-m", "tokaudit", *shlex.split(command)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    if code is not None:
        return [shorten(line, MAX_RULE_LINE) for line in proc.stdout.splitlines() if f": {code} " in line]
    return [shorten(line) for line in proc.stdout.splitlines()]


def shorten(line: str, width: int = MAX_LINE) -> str:
    if len(line) <= width:
        return line
    cut = line.rfind(" ", 0, width - 2)
    return line[: cut if cut > width // 2 else width - 2].rstrip() + " " + ELIDED


def expected(example: Example, printed: list[str]) -> list[str]:
    """What the block should hold: the whole output, or around a ``…`` line as many first and last lines as
    the block shows now."""
    if ELIDED not in example.shown:
        return printed
    at = example.shown.index(ELIDED)
    head, tail = at, len(example.shown) - at - 1
    if head + tail >= len(printed):
        return printed
    return printed[:head] + [ELIDED] + (printed[-tail:] if tail else [])


def stale() -> list[tuple[Example, list[str]]]:
    """Every example whose block differs from what the command prints, with what it should hold."""
    out = []
    for path in documents():
        rule = path.stem if path.match(RULE_PAGES) else None
        for example in examples(path):
            if rule is not None:
                want = run(example.command, rule)[: max(1, len(example.shown))]
            else:
                want = expected(example, run(example.command))
            if want != example.shown:
                out.append((example, want))
    return out


def main(argv: list[str]) -> int:
    changes = stale()
    if "--check" in argv:
        for example, _ in changes:
            print(f"{example.path.relative_to(ROOT)}: $ tokaudit {example.command}: the output differs")
        return 1 if changes else 0
    by_path: dict[Path, list[tuple[Example, list[str]]]] = {}
    for example, want in changes:
        by_path.setdefault(example.path, []).append((example, want))
    for path, items in by_path.items():
        text = path.read_text(encoding="utf-8")
        for example, want in sorted(items, key=lambda item: -item[0].start):
            text = text[: example.start] + "".join(line + "\n" for line in want) + text[example.end :]
        path.write_text(text, encoding="utf-8")
        print(f"updated {path.relative_to(ROOT)} ({len(items)} examples)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
