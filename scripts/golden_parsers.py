"""Ground truth for the parser round trip: the real parser classes of vLLM and SGLang on tokaudit's cases.

Two steps, two environments:

1. ``python scripts/golden_parsers.py cases`` (tokaudit's venv, real tokenizers fetched by
   ``scripts/fetch_real_tokenizers.py``, llama.cpp's templates from the llama-cpp-python sdist): renders each
   case's assistant turn (``tokaudit.template.turn``), tokenizes and cuts it as the round trip does and writes
   ``tests/data/parser_cases.jsonl`` (ids, text, tools) plus a tokenizer directory per case under ``--tokenizers``
   (the real files and a config.json naming the model type, as a deployed model directory has).
2. ``GOLDEN_VENV/bin/python scripts/golden_parsers.py run`` (a venv with vLLM and SGLang installed on CPU, see
   the README's "Parser round trip" section): feeds each case to the stacks' own parser classes, whole and
   streamed (DecodeStream deltas of 1, 3 and 8 ids per step), with the skip_special_tokens each stack sets for
   the request, and writes ``tests/data/parser_golden.jsonl`` with the stack versions in its first line.

Regenerate both when a stack version in ``tokaudit/parsers/families.py`` changes. Nothing here is imported by
tokaudit. The golden step drives the stacks' classes with ``tokaudit.parsers.installed`` (the module ``--parsers
installed`` runs in its worker: one way to drive them), which imports only the standard library and the stacks.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
CASES = DATA / "parser_cases.jsonl"
GOLDEN = DATA / "parser_golden.jsonl"
#: Prompt ids kept per case: enough for the streaming reasoning check, which reads the prompt's tail.
PROMPT_TAIL = 48

#: (case, template file, real tokenizer, model_type for config.json, chat template kwargs, vLLM reasoning parsers,
#: SGLang reasoning parsers)
CASE_LIST: list[tuple[str, str, str, str, dict[str, Any], list[str], list[str]]] = [
    ("qwen3-coder", "Qwen3-Coder.jinja", "qwen3", "qwen3_moe", {}, ["qwen3"], ["qwen3"]),
    ("qwen3-0.6b", "Qwen-Qwen3-0.6B.jinja", "qwen3", "qwen3", {}, ["qwen3", "deepseek_r1"], ["qwen3", "deepseek-r1"]),
    ("qwq-32b", "Qwen-QwQ-32B.jinja", "qwen3", "qwen2", {}, ["deepseek_r1", "qwen3"], ["deepseek-r1", "qwen3"]),
    ("qwen2.5", "Qwen-Qwen2.5-7B-Instruct.jinja", "qwen3", "qwen2", {}, [], []),
    ("qwen3.5", "Qwen3.5-4B.jinja", "qwen3", "qwen3_5", {}, ["qwen3"], ["qwen3"]),
    ("llama-3.1+llama-3.0-tokenizer", "meta-llama-Llama-3.1-8B-Instruct.jinja", "llama3", "llama", {}, [], []),
    (
        "deepseek-v3.1+v3-tokenizer",
        "deepseek-ai-DeepSeek-V3.1.jinja",
        "deepseek-v3",
        "deepseek_v3",
        {"thinking": True},
        ["deepseek_v3", "deepseek_r1"],
        ["deepseek-v3", "deepseek-r1"],
    ),
    ("gpt-oss", "openai-gpt-oss-120b.jinja", "gpt-oss", "gpt_oss", {}, ["openai_gptoss"], ["gpt-oss"]),
    ("kimi-k2", "moonshotai-Kimi-K2.jinja", "kimi-k2.5", "kimi_k2", {}, ["kimi_k2"], ["kimi_k2"]),
    ("glm-4.6", "GLM-4.6.jinja", "glm-4.6-markers", "glm4_moe", {}, ["glm45"], ["glm45"]),
    # the formats part A did not model, on the family's markers made special in Qwen3's vocabulary (tests/parser_data.py
    # MARKER_FAMILIES; no tokenizer of these families is cached): only the family's own parsers and hermes run on them
    # (ONLY), the reasoning parsers named here with each
    ("apertus", "Apertus-8B-Instruct.jinja", "markers-apertus", "apertus", {}, [], []),
    ("cohere2moe", "Cohere2MoE.jinja", "markers-cohere", "cohere2", {}, [], []),
    ("command-r7b", "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", "markers-cohere", "cohere2", {}, [], []),
    ("gigachat3", "GigaChat3-10B-A1.8B.jinja", "markers-gigachat", "deepseek_v3", {}, [], []),
    ("kimi-k3", "Kimi-K3.jinja", "markers-kimi-k3", "kimi_k3", {}, ["kimi_k3"], ["kimi_k3"]),
    ("lfm2.5", "LFM2.5-8B-A1B.jinja", "markers-lfm2", "lfm2_moe", {}, ["qwen3"], ["qwen3"]),
    ("minimax-m3", "MiniMax-M3.jinja", "markers-minimax-m3", "minimax_m3", {}, ["minimax_m3"], ["minimax-m3"]),
    ("mistral-small-3.2", "Mistral-Small-3.2-24B-Instruct-2506.jinja", "markers-mistral", "mistral3", {}, [], []),
    ("gemma4", "google-gemma-4-31B-it.jinja", "markers-gemma4", "gemma4", {}, ["gemma4"], ["gemma4"]),
    ("muse-glimmer", "muse-glimmer.jinja", "markers-muse", "muse_glimmer", {}, ["muse_glimmer", "muse"], ["muse"]),
    ("hy3", "tencent-Hy3.jinja", "markers-hy3", "hy_v3", {}, ["hy_v3"], ["hunyuan"]),
    ("minicpm5", "openbmb-MiniCPM5-1B.jinja", "markers-minicpm5", "minicpm", {}, [], []),
]

#: The tool parsers run on a case, per stack (cases not named here: every tool parser, and every reasoning parser
#: alone).
ONLY: dict[str, dict[str, list[str]]] = {
    "apertus": {"vllm": ["apertus", "hermes"], "sglang": ["apertus2509", "hermes"]},
    "cohere2moe": {"vllm": ["cohere_command4", "cohere_command3", "hermes"], "sglang": ["cohere_command4", "hermes"]},
    "command-r7b": {"vllm": ["cohere_command3", "cohere_command4", "hermes"], "sglang": ["cohere_command4", "hermes"]},
    "gigachat3": {"vllm": ["gigachat3", "hermes"], "sglang": ["gigachat3", "hermes"]},
    "kimi-k3": {"vllm": ["kimi_k3", "kimi_k2"], "sglang": ["kimi_k3", "kimi_k2"]},
    "lfm2.5": {"vllm": ["lfm2", "pythonic", "hermes"], "sglang": ["lfm2", "pythonic", "hermes"]},
    "minimax-m3": {"vllm": ["minimax_m3", "minimax_m2"], "sglang": ["minimax-m3", "minimax-m2"]},
    "mistral-small-3.2": {"vllm": ["mistral"], "sglang": ["mistral"]},
    "gemma4": {"vllm": ["gemma4", "hermes"], "sglang": ["gemma4", "hermes"]},
    "muse-glimmer": {"vllm": ["muse_glimmer", "minimax_m2"], "sglang": ["muse", "minimax-m2"]},
    "hy3": {"vllm": ["hy_v3", "glm45"], "sglang": ["hunyuan", "glm45"]},
    "minicpm5": {"vllm": ["minicpm5", "hermes"], "sglang": ["minicpm5", "hermes"]},
}

#: Tokenizers the real cache does not hold as a directory, built by tests/parser_data.py.
BUILT = {"kimi-k2.5": "kimi_tokenizer", "glm-4.6-markers": "glm_tokenizer"}


def _data() -> Any:
    sys.path.insert(0, str(ROOT / "tests"))
    import parser_data

    return parser_data


def make_cases(tokenizers: Path) -> None:
    sys.path.insert(0, str(ROOT))
    from tokaudit.records import Provenance
    from tokaudit.roundtrip.analysis import profile_render
    from tokaudit.roundtrip.case import build_case
    from tokaudit.model.load import load_model
    from tokaudit.template.renders import Budget
    from tokaudit.template.rendering import Renderer
    from tokaudit.template.serving import ServingEncoder
    from tokaudit.template.source import TemplateSource, special_token_context
    from tokaudit.template.stacks import profile
    from tokaudit.template.turn import SENTINEL_ARGUMENTS, SENTINEL_NAME, SENTINEL_REASONING, SENTINEL_TOOL, render_turn

    data = _data()
    lines = []
    for name, template, tok, model_type, kwargs, vllm_r, sglang_r in CASE_LIST:
        dest = tokenizers / tok
        if tok in BUILT:
            getattr(data, BUILT[tok])(dest)
        elif tok.startswith("markers-"):
            data.family_tokenizer(tok[len("markers-") :], dest)
        else:
            src = data.real_cache() / "models" / tok
            dest.mkdir(parents=True, exist_ok=True)
            for f in src.iterdir():
                shutil.copy(f, dest / f.name)
            (dest / "config.json").write_text(json.dumps({"model_type": model_type}), encoding="utf-8")
        model = load_model(str(dest))
        special = special_token_context(model)
        # the turn as vLLM's profile renders it (SGLang's renders the same for these templates)
        source = TemplateSource("default", data.llamacpp_template(template), Provenance(template, line=1))
        turn, why = render_turn(profile_render(Renderer(source, special, Budget()), profile("vllm")), kwargs)
        if turn is None:
            raise SystemExit(f"{name}: {why}")
        case = build_case(name, turn, model, ServingEncoder(model), special)
        assert case.prompt_ids is not None and case.output_ids is not None
        lines.append(
            {
                "case": name,
                "template": template,
                "tokenizer": tok,
                "kwargs": kwargs,
                "tools": [SENTINEL_TOOL],
                "prompt_tail": case.prompt_ids[-PROMPT_TAIL:],
                "prompt_state": case.prompt_state,
                "output_ids": case.output_ids,
                "text": case.text,
                "vllm_reasoning": vllm_r,
                "sglang_reasoning": sglang_r,
                "expected": {"name": SENTINEL_NAME, "arguments": SENTINEL_ARGUMENTS, "reasoning": SENTINEL_REASONING},
            }
        )
        print(f"{name}: {len(case.output_ids)} output ids", file=sys.stderr)
    DATA.mkdir(parents=True, exist_ok=True)
    CASES.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")


# ---- the golden step (runs where vLLM and SGLang are installed) ----------------------------------------------
# The code that drives the real classes is tokaudit.parsers.installed (the same as `--parsers installed` runs).


def run_golden(tokenizers: Path, only: set[str] | None, stacks: set[str]) -> None:
    """Run the real classes of ``stacks`` on every case (or the ``only`` ones); the rows of the other stacks and cases
    are kept from the committed file, so regenerating one stack or case leaves the others' rows as they were."""
    import logging

    logging.disable(logging.WARNING)
    sys.path.insert(0, str(ROOT))
    from importlib.metadata import version

    from tokaudit.parsers.reasoning_table import reasoning_parsers  # plain data, no dependencies
    from tokaudit.parsers.tool_table import tool_parsers
    from tokaudit.parsers.installed import (
        STEPS,
        load_tokenizer,
        run_sglang,
        run_vllm,
    )  # the standard library and the stacks only

    kept: dict[tuple[str, str], list[str]] = {}
    if GOLDEN.exists() and (stacks != {"vllm", "sglang"} or only):
        for line in GOLDEN.read_text(encoding="utf-8").splitlines()[1:]:
            row = json.loads(line)
            kept.setdefault((row["case"], row["stack"]), []).append(line)
    head = {
        "stacks": {"vllm": version("vllm"), "sglang": version("sglang")},
        "transformers": version("transformers"),
        "tokenizers": version("tokenizers"),
    }
    lines = [json.dumps(head)]
    data = _data()
    for case in (json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines()):
        if only and case["case"] not in only:
            lines += kept.get((case["case"], "vllm"), []) + kept.get((case["case"], "sglang"), [])
            continue
        tok = load_tokenizer(str(tokenizers / case["tokenizer"]))
        start = time.time()
        case["harmony"] = case["tokenizer"] == "gpt-oss"
        # the template's text: SGLang's server decides from it whether the output starts inside reasoning
        case["template"] = data.llamacpp_template(case["template"])
        for stack, run, reasons in (
            ("vllm", run_vllm, case["vllm_reasoning"]),
            ("sglang", run_sglang, case["sglang_reasoning"]),
        ):
            if stack not in stacks:
                lines += kept.get((case["case"], stack), [])
                continue
            listed = ONLY.get(case["case"], {}).get(stack)
            names = [t.name for t in tool_parsers(stack)] if listed is None else listed
            alone = [r.name for r in reasoning_parsers(stack)] if listed is None else reasons
            pairs = [(t, None) for t in names] + [(None, r) for r in alone]
            pairs += [(t, r) for t in names for r in reasons]
            for tool, reasoning in pairs:
                result = run(case, tok, tool, reasoning)
                for size in STEPS:  # a streamed outcome equal to the whole one is written as "same" (smaller file)
                    if f"stream{size}" in result and result[f"stream{size}"] == result.get("whole"):
                        result[f"stream{size}"] = "same"
                lines.append(
                    json.dumps(
                        {
                            "case": case["case"],
                            "stack": stack,
                            "tool_parser": tool,
                            "reasoning_parser": reasoning,
                            **result,
                        },
                        ensure_ascii=False,
                    )
                )
        print(f"{case['case']}: {time.time() - start:.1f} s", file=sys.stderr)
    GOLDEN.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("step", choices=["cases", "run"])
    ap.add_argument(
        "--tokenizers",
        type=Path,
        default=Path(os.environ.get("TOKAUDIT_GOLDEN_TOKENIZERS", "/tmp/tokaudit-golden-tokenizers")),
    )
    ap.add_argument("--case", action="append", help="only these cases (run)")
    ap.add_argument(
        "--stack",
        action="append",
        choices=["vllm", "sglang"],
        help="run only these stacks' classes and keep the other's rows from the committed file (run)",
    )
    args = ap.parse_args()
    if args.step == "cases":
        make_cases(args.tokenizers)
    else:
        run_golden(args.tokenizers, set(args.case) if args.case else None, set(args.stack or ["vllm", "sglang"]))


if __name__ == "__main__":
    main()
