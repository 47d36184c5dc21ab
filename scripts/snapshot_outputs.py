"""Before/after snapshots of what the commands print, for behaviour-neutral refactors (issue 33).

Runs ``scan``, ``template``, ``compare`` and ``explain`` on every fixture target (each model directory under
``fixtures/`` and each GGUF file), once with ``--format json`` and once rich, in-process, from the checkout's root
with relative paths, and writes one JSON file: ``{"<command> <format> <target>": [exit code, stdout, stderr]}``.
Two snapshots of the same code are identical; a refactor must leave them byte-identical::

    python scripts/snapshot_outputs.py /tmp/before.json          # on the old commit
    python scripts/snapshot_outputs.py /tmp/after.json           # on the new one
    python scripts/snapshot_outputs.py --diff /tmp/before.json /tmp/after.json

Timings that a command prints (``seconds`` keys of compare/replay JSON, "… s" in rich tables) are the only
thing that differs from run to run; ``--diff`` masks them, and nothing else.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Files that make a directory under fixtures/ a target.
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tiktoken.model", "tekken.json", "tokenizer.model",
                    "vocab.txt", "vocab.json", "config.json")
#: One run of each command per format; explain asks about id 1 (every fixture has one).
#: compare leaves its Unicode sweep out (the built-in corpus still runs every backend): a snapshot of all fixtures
#: takes minutes, not an hour, on 2 cores.
COMMANDS: tuple[tuple[str, ...], ...] = (("scan",), ("template",), ("compare", "{target}", "--unicode-sweep", "off"),
                                         ("explain", "{target}", "1"))
FORMATS = ("json", "rich")
_TIMING = re.compile(r'("[a-z_]*seconds[a-z_]*": )[0-9.e-]+|\b[0-9]+(\.[0-9]+)? ?(ms|s)\b')


def targets() -> list[str]:
    out: set[str] = set()
    for dirpath, _, files in os.walk(ROOT / "fixtures"):
        rel = Path(dirpath).relative_to(ROOT)
        if any(f in files for f in _TOKENIZER_FILES) or any(f.endswith(".tiktoken") for f in files):
            out.add(str(rel))
        out.update(str(rel / f) for f in files if f.endswith(".gguf"))
    return sorted(out)


def run(args: list[str]) -> list[object]:
    from typer.testing import CliRunner

    from tokaudit.cli.app import app

    result = CliRunner().invoke(app, args, catch_exceptions=True)
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += f"\n[exception escaped] {type(result.exception).__name__}: {result.exception}"
    return [result.exit_code, result.stdout, stderr]


def snapshot(out: Path, only: str | None) -> None:
    sys.path.insert(0, str(ROOT))  # this checkout's tokaudit, whatever is installed
    os.chdir(ROOT)
    os.environ.update({"TOKAUDIT_CACHE": "off", "HF_HUB_OFFLINE": "1", "COLUMNS": "120", "TERM": "dumb"})
    for name in ("FORCE_COLOR", "NO_COLOR", "GITHUB_ACTIONS", "CI"):
        os.environ.pop(name, None)
    shots: dict[str, list[object]] = {}
    start = time.perf_counter()
    for target in targets():
        if only and only not in target:
            continue
        for command in COMMANDS:
            args = [a.format(target=target) for a in command]
            if "{target}" not in "".join(command):
                args.append(target)
            for fmt in FORMATS:
                shots[f"{command[0]} {fmt} {target}"] = run([*args, "--format", fmt] if fmt == "json" else args)
        print(f"{time.perf_counter() - start:7.1f} s  {target}", file=sys.stderr)
    out.write_text(json.dumps(shots, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")


def masked(value: object) -> object:
    return _TIMING.sub(lambda m: (m.group(1) or "") + "<t>", value) if isinstance(value, str) else value


def diff(before: Path, after: Path) -> int:
    a = json.loads(before.read_text(encoding="utf-8"))
    b = json.loads(after.read_text(encoding="utf-8"))
    bad = sorted(set(a) ^ set(b))
    for key in sorted(set(a) & set(b)):
        if [masked(v) for v in a[key]] != [masked(v) for v in b[key]]:
            bad.append(key)
    for key in bad:
        print(f"differs: {key}")
    print(f"{len(a)} runs before, {len(b)} after, {len(bad)} differ")
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, nargs="?", help="where to write the snapshot (JSON)")
    parser.add_argument("--only", help="only the targets whose path contains this")
    parser.add_argument("--diff", nargs=2, type=Path, metavar=("BEFORE", "AFTER"), help="compare two snapshots")
    args = parser.parse_args()
    if args.diff:
        return diff(*args.diff)
    if args.out is None:
        parser.error("give the snapshot file to write, or --diff BEFORE AFTER")
    snapshot(args.out.resolve(), args.only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
