#!/usr/bin/env python3
"""Benchmark: ``tokaudit template`` and the TA8xx share of a default ``scan``, against baselines
measured in the same run.

    python bench/template.py [TARGET] [--repeat R] [--against REF]

1. ``python -m tokaudit template TARGET --format json`` (whole process, best of R) vs a bare
   script that does the least the command must do: read the template, render the same built-in
   conversations with a plain jinja2 sandbox, load tokenizer.json and encode each render
   (target: under 2 s; the ratio shows tokaudit's own overhead), and the same in CPU seconds (user + sys of
   each process, steadier than wall time on a shared machine).
2. The TA8xx rules' cost inside scan: the five rules run as scan runs them, on a fresh model object
   each time (best of R), vs a raw jinja2 render of the same conversations (target: under 0.3 s).

3. ``--against REF`` (issue 29's bar: a scan with every stack profile within 1.5x of the scan before them): the
   same ``scan TARGET --format json`` run from this tree and from git REF (its ``tokaudit`` package exported
   to a temporary directory), alternately, R times each, with the result cache off (every template rendered)
   and on (a warm cache, as a second scan of a fleet sees it); prints the medians and their ratio.

TARGET defaults to the real Qwen3 directory of the real-tokenizer cache when it exists, else the
``fixtures/templates/qwen-tools`` fixture.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REAL = Path(os.environ.get("TOKAUDIT_REAL_CACHE", Path.home() / ".cache" / "tokaudit" / "real")) / "models" / "qwen3"

BARE = r"""
import json, sys
from pathlib import Path
from jinja2.sandbox import ImmutableSandboxedEnvironment
from tokenizers import Tokenizer
from tokaudit.template.requests import builtin_requests
root = Path(sys.argv[1])
jinja = root / "chat_template.jinja"
cfg = json.loads((root / "tokenizer_config.json").read_text())
text = jinja.read_text() if jinja.exists() else cfg["chat_template"]
special = {k: (v["content"] if isinstance(v, dict) else v) for k, v in cfg.items() if k.endswith("_token") and v}
env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
env.globals["raise_exception"] = lambda m: None
template = env.from_string(text)
tok = Tokenizer.from_file(str(root / "tokenizer.json"))
for req in builtin_requests(text):
    try:
        tok.encode(template.render(**special, **req.to_json()))
    except Exception:
        pass
"""


def best(cmd: list[str], repeat: int) -> tuple[float, float]:
    """Best wall time and best CPU time (user + sys of the child) over ``repeat`` runs."""
    times, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return min(times), min(cpus)


def raw_render_seconds(target: str, repeat: int) -> float:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    from tokaudit.model.load import load_model
    from tokaudit.template.requests import builtin_requests
    from tokaudit.template.source import model_templates, special_token_context

    model = load_model(target)
    special = special_token_context(model)
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        for t in model_templates(model):
            env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
            env.globals["raise_exception"] = lambda m: None
            compiled = env.from_string(t.text)
            for req in builtin_requests(t.text):
                try:
                    compiled.render(**special, **req.to_json())
                except Exception:  # noqa: BLE001 - the baseline only renders
                    pass
        out.append(time.perf_counter() - start)
    return min(out)


def scan_share(target: str, repeat: int) -> float:
    """The TA8xx rules alone, as scan runs them, on a fresh model each time (the family caches per model)."""
    from tokaudit.checks.registry import run_rules
    from tokaudit.rules import all_rules
    from tokaudit.model.load import load_model

    rules = [r for r in all_rules() if r.code.startswith("TA8")]
    times = []
    for _ in range(repeat):
        model = load_model(target)
        start = time.perf_counter()
        list(run_rules(model, rules))
        times.append(time.perf_counter() - start)
    return min(times)


def scan_against(target: str, ref: str, repeat: int) -> None:
    """Paired, alternating runs of this tree's scan and REF's, cold (TOKAUDIT_CACHE=off) and warm (a fresh cache
    directory, filled by a first untimed run of each)."""
    import shutil
    import statistics
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "ref"
        base.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", ref, "tokaudit"], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        trees = {"this tree": ROOT, ref: base}
        for mode in ("cold", "warm"):
            caches = {name: Path(tmp) / f"cache-{i}" for i, name in enumerate(trees)}
            times: dict[str, list[float]] = {name: [] for name in trees}
            cpus: dict[str, list[float]] = {name: [] for name in trees}
            for i in range(repeat + (1 if mode == "warm" else 0)):
                for name, tree in trees.items():
                    env = {
                        **os.environ,
                        "PYTHONPATH": str(tree),
                        "TOKAUDIT_CACHE": "off" if mode == "cold" else str(caches[name]),
                    }
                    before = resource.getrusage(resource.RUSAGE_CHILDREN)
                    start = time.perf_counter()
                    subprocess.run(
                        [sys.executable, "-m", "tokaudit", "scan", target, "--format", "json"],
                        cwd=tmp,
                        env=env,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                        check=False,
                    )
                    wall = time.perf_counter() - start
                    after = resource.getrusage(resource.RUSAGE_CHILDREN)
                    if mode == "warm" and i == 0:
                        continue  # the run that fills the cache
                    times[name].append(wall)
                    cpus[name].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            a, b = (statistics.median(times[n]) for n in trees)
            ca, cb = (statistics.median(cpus[n]) for n in trees)
            print(
                f"scan {mode:<4}  this tree {a:5.2f} s ({ca:5.2f} s CPU)   {ref} {b:5.2f} s ({cb:5.2f} s CPU)   "
                f"ratio {a / b:4.2f} wall, {ca / cb:4.2f} CPU   {'OK' if ca / cb <= 1.5 else 'OVER'} (target <= 1.5)"
            )
            for c in caches.values():
                shutil.rmtree(c, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "target", nargs="?", default=str(REAL if REAL.is_dir() else ROOT / "fixtures" / "templates" / "qwen-tools")
    )
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--against", metavar="REF", help="also compare this tree's scan with git REF's (issue 29: <= 1.5x)")
    args = ap.parse_args()
    if args.against:
        scan_against(args.target, args.against, args.repeat)
        return

    command, command_cpu = best(
        [sys.executable, "-m", "tokaudit", "template", args.target, "--format", "json"], args.repeat
    )
    bare, bare_cpu = best([sys.executable, "-c", BARE, args.target], args.repeat)
    print(f"{args.target} (best of {args.repeat})")
    print(
        f"template command   {command:6.2f} s   bare render+encode script {bare:6.2f} s   ratio {command / bare:5.2f}"
        f"   {'OK' if command < 2 else 'OVER'} (target < 2 s)"
    )
    print(
        f"  CPU (user+sys)   {command_cpu:6.2f} s                             {bare_cpu:6.2f} s   ratio "
        f"{command_cpu / bare_cpu:5.2f}"
    )
    raw = raw_render_seconds(args.target, args.repeat)
    share = scan_share(args.target, args.repeat)
    print(
        f"TA8xx inside scan  {share:6.3f} s   raw jinja2 render {raw:6.3f} s   ratio "
        f"{share / raw if raw else float('nan'):5.2f}   "
        f"{'OK' if share < 0.3 else 'OVER'} (target < 0.3 s)"
    )


if __name__ == "__main__":
    main()
