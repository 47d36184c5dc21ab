"""Benchmark: `tokaudit scan <Kimi-K2.5 fixture> --format json` as a whole process, against a
minimal script that only parses the same files and computes the gap set, measured in the same run.

    python bench/scan.py [TARGET] [--runs N]

Prints the median wall and CPU time of each and their ratios (targets, issue 11: <= 1.2 with the
bytecode cache warm, <= 1.4 without), and the import budget of a scan run (``python -X importtime``):
the cumulative import time of tokaudit's CLI and typer's share of it.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The least a gap check has to do: parse ranks and added tokens, read vocab_size, find the holes.
BASELINE = r"""
import base64, json, sys
from pathlib import Path
d = Path(sys.argv[1])
ids = set()
for line in (d / "tiktoken.model").read_bytes().split(b"\n"):
    parts = line.split()
    if parts:
        base64.b64decode(parts[0], validate=True)
        ids.add(int(parts[1]))
cfg = json.loads((d / "tokenizer_config.json").read_text())
ids.update(int(k) for k in cfg.get("added_tokens_decoder", {}))
conf = json.loads((d / "config.json").read_text())
size = conf.get("vocab_size") or conf["text_config"]["vocab_size"]
gaps = [i for i in range(size) if i not in ids]
print(json.dumps({"unmapped": len(gaps)}))
"""


def bytecode_env(cache: bool) -> dict[str, str]:
    """With ``cache``, compiled modules are cached (in a temp prefix) as in a normal install; this
    machine sets PYTHONDONTWRITEBYTECODE=1, which makes every run recompile tokaudit's sources."""
    env = dict(os.environ)
    if cache:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "tokaudit-bench-pycache")
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds user+sys) of one run; CPU time is less disturbed by a busy machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        sys.exit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr.decode()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", nargs="?", default=str(ROOT / "fixtures" / "kimi-k2.5"))
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    scan = [sys.executable, "-m", "tokaudit", "scan", args.target, "--format", "json"]
    base = [sys.executable, "-c", BASELINE, args.target]
    for cache in (True, False):
        env = bytecode_env(cache)
        timed(scan, env), timed(base, env)  # warm the page cache (and the bytecode cache)
        scan_runs, base_runs = [], []
        for _ in range(args.runs):  # interleaved so both see the same machine load
            scan_runs.append(timed(scan, env))
            base_runs.append(timed(base, env))
        print("bytecode cached (a normal install):" if cache else "no bytecode cache (PYTHONDONTWRITEBYTECODE=1):")
        for label, k in (("wall", 0), ("cpu", 1)):
            s = statistics.median(r[k] for r in scan_runs)
            b = statistics.median(r[k] for r in base_runs)
            print(f"  {label}: tokaudit scan --format json {s * 1000:.0f} ms, parse-only baseline {b * 1000:.0f} ms "
                  f"(medians of {args.runs}); ratio {s / b:.2f} (target <= {1.2 if cache else 1.4})")
    imports(scan)


def imports(scan: list[str]) -> None:
    """Cumulative import microseconds of the top-level modules of one scan run (bytecode cached)."""
    env = bytecode_env(True)
    # --debug keeps fd 2 (a normal run points it at /dev/null once the CLI starts: the imports the rules
    # make later would not be reported)
    proc = subprocess.run([scan[0], "-X", "importtime", *scan[1:], "--debug"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, env=env)
    total: dict[str, int] = {}
    for line in proc.stderr.decode().splitlines():
        if not line.startswith("import time:") or "|" not in line or "cumulative" in line:
            continue
        _, cumulative, name = line[len("import time:"):].split("|")
        if not name.startswith("  "):  # top level only (one space of indent; nested imports have 3+)
            total[name.strip()] = int(cumulative)
    everything = sum(total.values())
    print(f"imports of one scan run: {everything / 1000:.0f} ms in all")
    for name in ("tokaudit.cli.app", "typer", "jinja2", "tiktoken", "regex", "tokenizers", "minijinja",
                 "tokaudit.cli.compare", "tokaudit.cli.replay", "rich"):
        us = total.get(name) or _cumulative(proc.stderr.decode(), name)
        print(f"  {name:<22} {us / 1000:6.1f} ms" + (f"  ({us / everything:.0%} of all imports)" if us else "  (not imported)"))


def _cumulative(text: str, name: str) -> int:
    """A module's cumulative import microseconds at whatever depth it was first imported (0: never)."""
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[2].strip() == name:
            return int(parts[1])
    return 0


if __name__ == "__main__":
    main()
