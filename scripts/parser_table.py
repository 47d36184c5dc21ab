"""The parser round trip of llama.cpp's 70 chat templates (llama-cpp-python 0.3.36 sdist), each with a real tokenizer
of its family where the real-tokenizer cache has one (else at text level: every marker taken as one token that
survives decoding), as a Markdown table: per template and stack, the tool parsers that recover its call, and per
stack the templates whose call no parser recovers.

    python scripts/parser_table.py [--json FILE] [--parsers builtin|installed]

``--parsers installed`` runs vLLM's and SGLang's own parser classes where they import (``TOKAUDIT_STACK_PYTHON``
names their venv; exit 2 when one does not import) on every template that has token ids, and the grammars elsewhere
(text-level templates, the other stacks); each row's JSON ``grammar`` says which ran.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

#: Template file name prefix -> tokenizer (a real-cache model name, or a builder of tests/parser_data.py).
FAMILY = (
    ("Qwen", "qwen3"),
    ("deepseek-ai-DeepSeek-R1-Distill-Qwen", None),
    ("deepseek-ai-DeepSeek-R1-Distill-Llama", "llama3"),
    ("deepseek-ai", "deepseek-v3"),
    ("llama-cpp-deepseek-r1", "deepseek-v3"),
    ("meta-llama", "llama3"),
    ("NousResearch", "llama3"),
    ("fireworks-ai-llama-3", "llama3"),
    ("meetkai-functionary", "llama3"),
    ("openai-gpt-oss", "gpt-oss"),
    ("google-gemma", "gemma3"),
    ("mistralai-Mistral-Nemo", "mistral-7b-json"),
    ("Kimi-K2", "kimi"),
    ("moonshotai-Kimi-K2", "kimi"),
    ("GLM-4", "glm"),
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path)
    ap.add_argument("--parsers", choices=["builtin", "installed"], default="builtin")
    args = ap.parse_args()
    import parser_data

    from dataclasses import replace

    from tokaudit.records import Provenance
    from tokaudit.roundtrip.analysis import ParserChoice, run_template
    from tokaudit.roundtrip.choice import ROUNDTRIP_STACKS, resolve_parsers
    from tokaudit.template.turn import renders_call
    from tokaudit.model.load import load_model
    from tokaudit.template.source import TemplateSource

    choice = ParserChoice()
    if args.parsers == "installed":  # the stacks must import; a template without ids falls back to the grammars
        from tokaudit.errors import InputError

        try:
            choice = replace(resolve_parsers(ParserChoice(parsers="installed")), parsers="auto")
        except InputError as exc:
            raise SystemExit(f"parser_table: {exc}") from None
        print(f"grammars: {dict(choice.grammars)}", file=sys.stderr)
    tmp = Path(tempfile.mkdtemp(prefix="tokaudit-table-"))
    built = {"kimi": ROOT / "fixtures" / "kimi-k2.5", "glm": parser_data.glm_tokenizer(tmp / "glm")}
    models: dict[str, object] = {}
    rows = []
    for name, text in sorted(parser_data.llamacpp_templates().items()):
        family = next((tok for prefix, tok in FAMILY if name.startswith(prefix)), None)
        path = built.get(family) if family in built else (parser_data.real_model(family) if family else None)
        model = None
        if path is not None:
            model = models.get(str(path)) or load_model(str(path))
            models[str(path)] = model
        start = time.perf_counter()
        run = run_template(model, TemplateSource("default", text, Provenance(name, line=1)), choice)  # type: ignore[arg-type]
        summary = run.summary()
        rows.append(
            {
                "template": name,
                "tokenizer": family if model is not None else None,
                "error": run.error,
                "calls_rendered": run.calls_rendered,
                "reasoning_rendered": run.reasoning_rendered,
                "generation_prompt": run.state,
                "toggle": run.toggle,
                "grammars": sorted({r.grammar for r in run.rows}),
                "stacks": {s: summary.get(s, {"tool_parsers": [], "pairs": []}) for s in ROUNDTRIP_STACKS},
                # the stacks whose own turn does not render (their profile's render fails) or writes no call
                "unrendered": {
                    s: why
                    for s, why in run.renders.items()
                    if not why.startswith("its own turn: ") or not renders_call(why)
                },
                "seconds": round(time.perf_counter() - start, 2),
            }
        )
        print(f"{name}: {rows[-1]['seconds']} s", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, ensure_ascii=False), encoding="utf-8")
    print("| template | tokenizer | " + " | ".join(ROUNDTRIP_STACKS) + " |")
    print("|---|---|" + "---|" * len(ROUNDTRIP_STACKS))
    for r in rows:
        if r["error"]:
            print(f"| {r['template']} | {r['tokenizer'] or 'text'} | render error: {r['error'][:80]} | | |")
            continue
        if not r["calls_rendered"]:
            print(f"| {r['template']} | {r['tokenizer'] or 'text'} | no tool call rendered | | |")
            continue
        cells = [
            ", ".join(r["stacks"][s]["tool_parsers"])
            or (
                "constrained"
                if r["stacks"][s].get("constrained")
                else "not rendered"
                if s in r["unrendered"]
                else "**none**"
            )
            for s in ROUNDTRIP_STACKS
        ]
        print(f"| {r['template']} | {r['tokenizer'] or 'text'} | " + " | ".join(cells) + " |")
    print()
    rendered = [r for r in rows if r["calls_rendered"] and not r["error"]]
    print(
        f"{len(rows)} templates; {sum(1 for r in rows if r['error'])} do not render the turn; "
        f"{sum(1 for r in rows if not r['error'] and not r['calls_rendered'])} render no tool call; {len(rendered)} "
        "render one."
    )
    for s in ROUNDTRIP_STACKS:
        held = [r["template"] for r in rendered if r["stacks"][s].get("constrained")]
        if held:  # TGI: a tool request is held to its own JSON grammar, whatever the template teaches
            print(f"- {s}: {len(held)} of {len(rendered)} constrained to the stack's own tool-call grammar")
            continue
        mine = [r for r in rendered if s not in r["unrendered"]]
        lost = [r["template"] for r in mine if not r["stacks"][s]["tool_parsers"]]
        print(
            f"- {s}: no parser recovers the call of {len(lost)} of the {len(mine)} whose turn it renders with a call: "
            f"{', '.join(lost)}"
        )


if __name__ == "__main__":
    main()
