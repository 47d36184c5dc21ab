"""Benchmark: `tokaudit scan TARGET --format json` as a whole process, against a minimal script that only
parses the same files, per target, measured in the same run (issue 22).

    python bench/scan.py [TARGET ...] [--runs N] [--no-bytecode-cache] [--imports]

TARGET is a model directory or the name of a real tokenizer fetched by
``scripts/fetch_real_tokenizers.py`` (gemma3, qwen3, llama3, ...). Default: the Kimi-K2.5 fixture and
Gemma 3, Qwen3, Llama 3 when they are in the real-tokenizer cache.

The parse-only baseline ``json.load``s tokenizer.json, tokenizer_config.json, config.json and
generation_config.json where present; a target whose vocabulary is a tiktoken rank file (the Kimi
fixture) also has its ranks base64-decoded and its gap set computed, the least a gap check does.
Scan and baseline run alternately (paired: both see the same machine load); each figure is the median
of the runs. Prints wall and CPU time (user + sys) of each, their ratios, and the peak RSS of each
process (``wait4``'s ``ru_maxrss`` of that child) and its ratio. Target: <= 1.2 in time, RSS <= 1.3 on
Gemma 3. ``--imports`` adds the start-up a scan pays before it reads a file: the CPU of processes that
only start, import typer, and import what a scan imports.

The persistent result cache (``TOKAUDIT_CACHE``) is left as the environment sets it: the first (warm-up)
run fills it, as the first scan of a fleet's CI would.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_REAL = ("gemma3", "qwen3", "llama3")

# Only parse what a scan reads: the JSON files, and a tiktoken rank file with its gap set.
BASELINE = r"""
import base64, json, sys
from pathlib import Path
d = Path(sys.argv[1])
loaded = {}
for name in ("tokenizer.json", "tokenizer_config.json", "config.json", "generation_config.json"):
    if (d / name).is_file():
        with open(d / name, encoding="utf-8") as f:
            loaded[name] = json.load(f)
ranks = d / "tiktoken.model"
if ranks.is_file():
    ids = set()
    for line in ranks.read_bytes().split(b"\n"):
        parts = line.split()
        if parts:
            base64.b64decode(parts[0], validate=True)
            ids.add(int(parts[1]))
    cfg = loaded.get("tokenizer_config.json", {})
    ids.update(int(k) for k in cfg.get("added_tokens_decoder", {}))
    conf = loaded.get("config.json", {})
    size = conf.get("vocab_size") or conf["text_config"]["vocab_size"]
    print(json.dumps({"unmapped": len([i for i in range(size) if i not in ids])}))
else:
    print(json.dumps({name: len(v) for name, v in loaded.items()}))
"""


@dataclass(frozen=True)
class Run:
    wall: float
    cpu: float
    #: Peak resident set size in KiB.
    rss: int


def real_cache() -> Path:
    env = os.environ.get("TOKAUDIT_REAL_CACHE")
    return (Path(env).expanduser() if env else Path.home() / ".cache" / "tokaudit" / "real") / "models"


def resolve_target(arg: str) -> Path:
    path = Path(arg)
    if path.is_dir():
        return path
    real = real_cache() / arg
    if real.is_dir():
        return real
    sys.exit(f"{arg}: not a directory nor a fetched real tokenizer (run scripts/fetch_real_tokenizers.py)")


def default_targets() -> list[Path]:
    out = [ROOT / "fixtures" / "kimi-k2.5"]
    out += [real_cache() / name for name in DEFAULT_REAL if (real_cache() / name).is_dir()]
    return out


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


def timed(cmd: list[str], env: dict[str, str]) -> Run:
    """Wall, CPU (user + sys) and peak RSS of one whole process; CPU time is less disturbed by a busy machine."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1) or b"Traceback (most recent call last)" in err:  # an uncaught error exits 1 too
        sys.exit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{err.decode()}")
    return Run(elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss)


def measure(target: Path, runs: int, env: dict[str, str]) -> tuple[list[Run], list[Run]]:
    scan = [sys.executable, "-m", "tokaudit", "scan", str(target), "--format", "json"]
    base = [sys.executable, "-c", BASELINE, str(target)]
    timed(scan, env), timed(base, env)  # warm the page cache (and the bytecode and result caches)
    scan_runs, base_runs = [], []
    for _ in range(runs):  # interleaved so both see the same machine load
        scan_runs.append(timed(scan, env))
        base_runs.append(timed(base, env))
    return scan_runs, base_runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "targets",
        nargs="*",
        help="model directories or real-tokenizer names (default: Kimi fixture, " + ", ".join(DEFAULT_REAL) + ")",
    )
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="also measure with PYTHONDONTWRITEBYTECODE=1 (every run recompiles tokaudit)",
    )
    parser.add_argument(
        "--imports", action="store_true", help="also print the start-up cost: interpreter, typer, a scan's imports"
    )
    parser.add_argument("--json", metavar="FILE", help="also write every run's figures to FILE")
    args = parser.parse_args()
    targets = [resolve_target(t) for t in args.targets] or default_targets()
    print(
        f"load average {os.getloadavg()[0]:.1f}; medians of {args.runs} paired runs; target: time <= 1.2, "
        "peak RSS <= 1.3 (Gemma 3)"
    )
    dump: dict[str, dict[str, list[dict[str, float]]]] = {}
    for cache in (True, False) if args.no_bytecode_cache else (True,):
        env = bytecode_env(cache)
        print("bytecode cached (a normal install):" if cache else "no bytecode cache (PYTHONDONTWRITEBYTECODE=1):")
        print(
            f"  {'target':<12} {'scan wall':>9} {'base wall':>9} {'ratio':>6}   {'scan cpu':>8} {'base cpu':>8} "
            f"{'ratio':>6}   {'scan RSS':>8} {'base RSS':>8} {'ratio':>6}"
        )
        for target in targets:
            scan_runs, base_runs = measure(target, args.runs, env)
            dump[f"{target.name}{'' if cache else ' (no bytecode cache)'}"] = {
                "scan": [vars(r) for r in scan_runs],
                "baseline": [vars(r) for r in base_runs],
            }
            s = {k: statistics.median(getattr(r, k) for r in scan_runs) for k in ("wall", "cpu", "rss")}
            b = {k: statistics.median(getattr(r, k) for r in base_runs) for k in ("wall", "cpu", "rss")}
            print(
                f"  {target.name:<12} {s['wall'] * 1000:7.0f}ms {b['wall'] * 1000:7.0f}ms "
                f"{s['wall'] / b['wall']:6.2f}   "
                f"{s['cpu'] * 1000:6.0f}ms {b['cpu'] * 1000:6.0f}ms {s['cpu'] / b['cpu']:6.2f}   "
                f"{s['rss'] / 1024:6.0f}MB {b['rss'] / 1024:6.0f}MB {s['rss'] / b['rss']:6.2f}",
                flush=True,
            )
    if args.json:
        Path(args.json).write_text(json.dumps(dump, indent=1), encoding="utf-8")
    if args.imports:
        imports(args.runs)


#: What a scan of an HF or tiktoken directory imports before its first rule runs (a GGUF adds its reader and
#: llama.cpp's load; a result-cache miss adds the template engines and regex libraries).
SCAN_IMPORTS = "import tokaudit.cli.app, tokaudit.cli.scan, tokaudit.scan.run, tokaudit.rules as r; r.all_rules()"


def imports(runs: int) -> None:
    """CPU (user + sys) of processes that only start (``pass``), only import typer, and import what a scan
    imports, paired as the scans are: the start-up every scan pays before it reads a file. (``python -X
    importtime`` is no measure of it: it does not log modules loaded with importlib.import_module, which is
    how the CLI loads its command and the rule modules.)"""
    env = bytecode_env(True)
    steps = {"interpreter": "pass", "+ typer": "import typer", "+ a scan's imports": SCAN_IMPORTS}
    cmds = {name: [sys.executable, "-c", code] for name, code in steps.items()}
    for cmd in cmds.values():
        timed(cmd, env)
    cpu: dict[str, list[float]] = {name: [] for name in cmds}
    for _ in range(runs):
        for name, cmd in cmds.items():
            cpu[name].append(timed(cmd, env).cpu)
    print(f"start-up, CPU medians of {runs} paired runs:")
    for name, values in cpu.items():
        print(f"  {name:<20} {statistics.median(values) * 1000:6.0f} ms")


if __name__ == "__main__":
    main()
