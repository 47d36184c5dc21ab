"""``tokaudit-pre-commit``: the entry of the pre-commit hook (``.pre-commit-hooks.yaml``).

pre-commit passes the hook's ``args`` and then the staged files that match its ``files:`` pattern.
This scans each model directory those files belong to (a directory holding a vocabulary file) in one
``tokaudit scan`` run, with the hook's args passed through: ``--fail-on warning``, ``--baseline``...
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from itertools import islice
from pathlib import Path

from tokaudit.artifacts.load import VOCAB_KINDS, kind_of

#: Entries looked at per directory: a model directory holds a few dozen files, not a whole dataset.
MAX_ENTRIES = 10_000


def split_arguments(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(the hook's args, the file names pre-commit appended): file names are the trailing arguments
    that are existing files."""
    cut = len(argv)
    while cut > 0 and not argv[cut - 1].startswith("-") and Path(argv[cut - 1]).is_file():
        cut -= 1
    return list(argv[:cut]), list(argv[cut:])


def model_directories(files: Sequence[str]) -> list[str]:
    """The directories of ``files`` that hold a vocabulary file, in first-seen order."""
    out: list[str] = []
    for name in files:
        directory = Path(name).parent
        shown = directory.as_posix() if str(directory) != "." else "."
        if shown in out:
            continue
        try:
            entries = [p.name for p in islice(directory.iterdir(), MAX_ENTRIES) if p.is_file()]
        except OSError:
            continue
        if any(kind_of(entry) in VOCAB_KINDS for entry in entries):
            out.append(shown)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    from tokaudit.cli.app import app

    args, files = split_arguments(list(sys.argv[1:] if argv is None else argv))
    targets = model_directories(files)
    if not targets:  # only files outside model directories changed (a config.json of something else)
        raise SystemExit(0)
    app(["scan", *targets, *args], prog_name="tokaudit")


if __name__ == "__main__":
    main()
