"""Run every command on every real tokenizer as a user would (whole process) and tabulate the outcome.

    python tests/real/survey.py [NAME...] [--json OUT] [--compare-args "..."]

Prints a Markdown table (tokenizer x command -> exit code, seconds, error-level findings) for the
status notes and the issue's closing report. Not a test: the assertions live in test_real.py.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import realkit

COMMAND_TIMEOUT = 600


SOURCE = realkit.ROOT  # --src: a snapshot of committed HEAD (git archive), not a tree others are editing


def run(args: list[str]) -> dict:
    t0 = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(SOURCE)}
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "tokaudit", *args, "--format", "json"],
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
            cwd=SOURCE,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return {"exit": "timeout", "seconds": COMMAND_TIMEOUT, "errors": [], "stderr": ""}
    seconds = round(time.perf_counter() - t0, 2)
    out: dict = {"exit": proc.returncode, "seconds": seconds, "stderr": proc.stderr.strip().splitlines()[-1:]}
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError:
        out["errors"] = []
        return out
    out["errors"] = sorted(f"{c} {n}" for c, n in realkit.error_findings(doc))
    if "text" in doc:
        out["text"] = doc["text"]
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("names", nargs="*")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--compare-args", default="", help="extra compare options, e.g. '--no-builtin-corpus'")
    parser.add_argument("--commands", default="scan,compare,replay,fuzz")
    parser.add_argument(
        "--src", type=Path, help="run tokaudit from this source tree (e.g. git archive HEAD | tar -x -C DIR)"
    )
    args = parser.parse_args()
    global SOURCE
    if args.src:
        SOURCE = args.src.resolve()
    dirs = realkit.fetch_module().fetch()
    entries = [e for e in realkit.lock_entries() if not args.names or e["name"] in args.names]
    commands = args.commands.split(",")
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        corpus = realkit.write_corpus(Path(tmp) / "corpus.txt")
        for entry in entries:
            name, d = entry["name"], str(dirs[entry["name"]])
            row: dict = {}
            if "scan" in commands:
                row["scan"] = run(["scan", d])
            if "compare" in commands:
                row["compare"] = run(["compare", d, *shlex.split(args.compare_args.replace("{corpus}", str(corpus)))])
            if "replay" in commands:
                stream = Path(tmp) / f"{name}.json"
                _, expected = realkit.write_stream(entry, dirs[name], stream)
                row["replay"] = run(["replay", d, str(stream)])
                row["replay"]["text_ok"] = row["replay"].pop("text", None) == expected
            if "fuzz" in commands:
                row["fuzz"] = run(["fuzz", d, "--iterations", "300"])
            results[name] = row
            print(name, json.dumps(row, ensure_ascii=False), file=sys.stderr, flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")
    print("| tokenizer | " + " | ".join(commands) + " |")
    print("|---|" + "---|" * len(commands))
    for name, row in results.items():
        cells = []
        for c in commands:
            r = row[c]
            cell = f"exit {r['exit']}, {r['seconds']} s"
            if c == "replay":
                cell += ", text " + ("==" if r.get("text_ok") else "!=") + " lib"
            if r["errors"]:
                cell += ": " + ", ".join(r["errors"])
            if r["exit"] in (2, 3) and r.get("stderr"):
                cell += f" [{r['stderr'][0][:120]}]"
            cells.append(cell)
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
