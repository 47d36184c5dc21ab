"""Before/after snapshots of what the commands print, for behaviour-neutral refactors (issue 33).

Runs ``scan``, ``template``, ``compare`` and ``explain`` on every fixture target (each model directory under
``fixtures/`` and each GGUF file), and ``replay``, ``decode``, ``encode``, ``fuzz`` and ``diff`` on the fixtures
their tests use (``RUNS``), once with ``--format json`` and once rich, in-process, from the checkout's root with
relative paths, and writes one JSON file: ``{"<command> <format> <target>": [exit code, stdout, stderr]}``.
Two snapshots of the same code are identical; a refactor must leave them byte-identical::

    python scripts/snapshot_outputs.py /tmp/before.json          # on the old commit
    python scripts/snapshot_outputs.py /tmp/after.json           # on the new one
    python scripts/snapshot_outputs.py --diff /tmp/before.json /tmp/after.json

What is measured rather than computed differs from run to run: ``--diff`` drops compare's ``*seconds*`` and
``*_per_s`` JSON keys (and fuzz's ``calls_per_second``), masks decimals and thousands-separated figures (and the
column spacing they move) in rich output and "… s" timings, and replaces the checkout's path (transformers names it
in a message). A throughput under 1,000 MB/s or tokens/s printed without decimals is not masked: a compare table that
differs there alone differs by measurement (run that target again on both sides).
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
_TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "tiktoken.model",
    "tekken.json",
    "tokenizer.model",
    "vocab.txt",
    "vocab.json",
    "config.json",
)
#: One run of each command per format; explain asks about id 1 (every fixture has one).
#: compare leaves its Unicode sweep out (the built-in corpus still runs every backend): a snapshot of all fixtures
#: takes minutes, not an hour, on 2 cores.
COMMANDS: tuple[tuple[str, ...], ...] = (
    ("scan",),
    ("template",),
    ("compare", "{target}", "--unicode-sweep", "off"),
    ("explain", "{target}", "1"),
)
FORMATS = ("json", "rich")
_STREAMS = "fixtures/streams"
_KIMI = "fixtures/kimi-k2.5"
_TINY = "fixtures/tiny-tiktoken"
_CLEAN = "fixtures/clean-bpe"
#: The commands that take more than a target, each on the fixtures their tests use: (args, stdin or None).
RUNS: tuple[tuple[tuple[str, ...], str | None], ...] = (
    (("replay", _KIMI, f"{_STREAMS}/kimi-toolcall.json"), None),
    (("replay", _KIMI, f"{_STREAMS}/kimi-toolcall.json", "--keep-special-tokens", "--tool-parser", "kimi_k2"), None),
    (("replay", _KIMI, f"{_STREAMS}/kimi-toolcall-cut.json"), None),
    (("replay", _KIMI, f"{_STREAMS}/kimi-unmapped.json", "--steps", "all"), None),
    (("replay", _KIMI, f"{_STREAMS}/kimi-toolcall.jsonl", "--detokenizers", "offsets,decodestream"), None),
    (("replay", _TINY, f"{_STREAMS}/tiny-capture.sse", "--stop", "world", "--stop-id", "1002"), None),
    (("replay", f"{_STREAMS}/byte-fallback", f"{_STREAMS}/byte-fallback.json", "--prompt", "259 256"), None),
    (("replay", _CLEAN, "-", "--gguf", "fixtures/llamacpp/clean-bpe.gguf"), " ".join(map(str, range(100, 140)))),
    (("decode", _TINY, "1000", "300", "131", "1002", "--keep-special-tokens"), None),
    (("decode", _TINY, "300", "1003"), None),
    (("decode", _CLEAN, "200", "5000"), None),
    (("decode", _KIMI, f"{_STREAMS}/kimi-toolcall-cut.json"), None),
    (("encode", _TINY, "Hello wörld<|im_end|>"), None),
    (("encode", _KIMI, "检查 CDP 依赖环境<|im_end|>", "--backend", "tiktoken"), None),
    (("encode", _CLEAN, "-"), "Hello world, café 🌶"),
    (("fuzz", _TINY, "--backends", "tiktoken,hf", "--iterations", "300", "--seed", "1"), None),
    (("fuzz", _CLEAN, "--backends", "hf", "-n", "200", "--seed", "3"), None),
    (("diff", _TINY, _TINY), None),
    (("diff", "fixtures/oncall/tiny-changed-rank", _TINY), None),
    (("diff", "fixtures/oncall/tiny-draft", _TINY), None),
    (("diff", _CLEAN, "fixtures/llamacpp/clean-bpe.gguf"), None),
    (("diff", "fixtures/llamacpp/clean-bpe-no-merges.gguf", _CLEAN), None),
    (
        ("diff", "fixtures/rules/stop-suppressed", _CLEAN, "--corpus", "fixtures/malformed/not-a-tokenizer/README.txt"),
        None,
    ),
)
_TIMING = re.compile(r'("[a-z_]*seconds[a-z_]*": )[0-9.e-]+|\b[0-9]+(\.[0-9]+)? ?(ms|s)\b')


def targets() -> list[str]:
    out: set[str] = set()
    for dirpath, _, files in os.walk(ROOT / "fixtures"):
        rel = Path(dirpath).relative_to(ROOT)
        if any(f in files for f in _TOKENIZER_FILES) or any(f.endswith(".tiktoken") for f in files):
            out.add(str(rel))
        out.update(str(rel / f) for f in files if f.endswith(".gguf"))
    return sorted(out)


def run(args: list[str], stdin: str | None = None) -> list[object]:
    from typer.testing import CliRunner

    from tokaudit.cli.app import app

    result = CliRunner().invoke(app, args, input=stdin, catch_exceptions=True)
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += f"\n[exception escaped] {type(result.exception).__name__}: {result.exception}"
    return [result.exit_code, result.stdout, stderr]


def snapshot(out: Path, only: str | None, commands: list[str] | None = None) -> None:
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
            if commands and command[0] not in commands:
                continue
            args = [a.format(target=target) for a in command]
            if "{target}" not in "".join(command):
                args.append(target)
            for fmt in FORMATS:
                shots[f"{command[0]} {fmt} {target}"] = run([*args, "--format", fmt] if fmt == "json" else args)
        print(f"{time.perf_counter() - start:7.1f} s  {target}", file=sys.stderr)
    for args, stdin in RUNS:
        if (commands and args[0] not in commands) or (only and only not in " ".join(args)):
            continue
        for fmt in FORMATS:
            extra = ["--format", fmt] if fmt == "json" else []
            shots[f"{args[0]} {fmt} {' '.join(args[1:])}"] = run([*args, *extra], stdin)
        print(f"{time.perf_counter() - start:7.1f} s  {' '.join(args)}", file=sys.stderr)
    shots["<root>"] = [str(ROOT)]
    out.write_text(json.dumps(shots, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")


#: JSON keys whose values are measured, not computed (compare's load time and throughput, fuzz's calls per second).
_MEASURED = re.compile(r"seconds|_per_s$|_per_second$")
#: A measured figure in a rich table: a decimal or a number with thousands separators (the columns' widths follow).
_FIGURE = re.compile(r"\b[0-9][0-9,]*\.[0-9]+\b|\b[0-9]{1,3}(,[0-9]{3})+\b")


def _without_measures(value: object) -> object:
    if isinstance(value, dict):
        return {k: _without_measures(v) for k, v in value.items() if not _MEASURED.search(k)}
    if isinstance(value, list):
        return [_without_measures(v) for v in value]
    return value


def masked(value: object, root: str = "") -> object:
    """A run's output without what is measured (timings, throughput) or where the checkout is."""
    if not isinstance(value, str):
        return value
    if root:
        value = value.replace(root, "<root>")
    try:
        return json.dumps(_without_measures(json.loads(value)), sort_keys=True)
    except ValueError:
        pass
    value = _TIMING.sub(lambda m: (m.group(1) or "") + "<t>", value)
    return re.sub(r" +", " ", _FIGURE.sub("<n>", value))


def _words(value: object) -> object:
    return sorted(value.split()) if isinstance(value, str) else value


def diff(before: Path, after: Path) -> int:
    a = json.loads(before.read_text(encoding="utf-8"))
    b = json.loads(after.read_text(encoding="utf-8"))
    ra, rb = a.pop("<root>", [""])[0], b.pop("<root>", [""])[0]
    bad = sorted(set(a) ^ set(b))
    layout = []
    for key in sorted(set(a) & set(b)):
        x, y = [masked(v, ra) for v in a[key]], [masked(v, rb) for v in b[key]]
        if x == y:
            continue
        if key.startswith("compare rich") and [_words(v) for v in x] == [_words(v) for v in y]:
            layout.append(key)  # the same words: the table's columns were sized by other throughput figures
        else:
            bad.append(key)
    for key in layout:
        print(f"layout only: {key}")
    for key in bad:
        print(f"differs: {key}")
    print(f"{len(a)} runs before, {len(b)} after, {len(bad)} differ, {len(layout)} compare tables wrapped differently")
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, nargs="?", help="where to write the snapshot (JSON)")
    parser.add_argument("--only", help="only the targets whose path contains this")
    parser.add_argument("--commands", help="only these commands, comma-separated (default: all)")
    parser.add_argument("--diff", nargs=2, type=Path, metavar=("BEFORE", "AFTER"), help="compare two snapshots")
    args = parser.parse_args()
    if args.diff:
        return diff(*args.diff)
    if args.out is None:
        parser.error("give the snapshot file to write, or --diff BEFORE AFTER")
    snapshot(args.out.resolve(), args.only, args.commands.split(",") if args.commands else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
