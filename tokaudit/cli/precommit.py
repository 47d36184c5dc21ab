"""``tokaudit-pre-commit``: the entry of the pre-commit hook (``.pre-commit-hooks.yaml``).

pre-commit passes the hook's ``args`` and then the staged files that match its ``files:`` pattern.
This scans each model directory those files belong to (a directory holding a vocabulary file) and each
staged ``.gguf`` file, in one ``tokaudit scan`` run, with the hook's args passed through: ``--fail-on
warning``, ``--baseline FILE``... The args end where the file names begin: after the last option and the
value it takes (``--baseline FILE`` is an option and its value, never a staged file).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from itertools import islice
from pathlib import Path

from tokaudit.artifacts.load import VOCAB_KINDS, kind_of

#: Entries looked at per directory: a model directory holds a few dozen files, not a whole dataset.
MAX_ENTRIES = 10_000


def split_arguments(argv: Sequence[str], takes_value: frozenset[str]) -> tuple[list[str], list[str]]:
    """(the hook's args, the file names pre-commit appended). ``takes_value``: the scan options that take a value
    (``--baseline``, ``--fail-on``, ...), whose value is part of the args whatever it looks like."""
    i = 0
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "--":
        option = argv[i].split("=", 1)[0]
        i += 2 if option in takes_value and "=" not in argv[i] else 1
    if i < len(argv) and argv[i] == "--":
        i += 1
    return list(argv[:i]), list(argv[i:])


def scan_options_with_values() -> frozenset[str]:
    """Every option name of ``tokaudit scan`` that takes a value (from the command's own definition)."""
    import typer.main

    from tokaudit.cli.app import build_app

    command = typer.main.get_command(build_app(["scan"])).commands["scan"]  # type: ignore[attr-defined]  # a click Group
    return frozenset(
        name
        for p in command.params
        if not getattr(p, "is_flag", False) and p.param_type_name == "option"
        for name in p.opts
    )


def model_directories(files: Sequence[str]) -> list[str]:
    """The targets ``files`` touch, in first-seen order: each other file's directory when it holds a vocabulary
    file, and each ``.gguf`` file itself (a GGUF is a whole model) unless its directory is such a target."""
    out: list[str] = []
    for name in files:
        if name.lower().endswith(".gguf"):
            shown = Path(name).as_posix()
            if shown not in out and Path(name).is_file():
                out.append(shown)
            continue
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
    # a GGUF beside HF files is scanned with its directory (and checked against them): once is enough
    return [
        t for t in out if not t.lower().endswith(".gguf") or (Path(t).parent.as_posix() if "/" in t else ".") not in out
    ]


def main(argv: Sequence[str] | None = None) -> None:
    from tokaudit.cli.app import app

    args, files = split_arguments(list(sys.argv[1:] if argv is None else argv), scan_options_with_values())
    targets = model_directories(files)
    if not targets:  # only files outside model directories changed (a config.json of something else)
        raise SystemExit(0)
    app(["scan", *targets, *args], prog_name="tokaudit")


if __name__ == "__main__":
    main()
