#!/usr/bin/env python3
"""Benchmark: llama.cpp's template engine (tokaudit's build of common/jinja + common/chat.cpp, a child process)
against Jinja2 (the sandbox transformers uses) on the same templates and contexts, measured in the same run, and
against the WebAssembly build of the same engine that ggufdoctor ships (wasmtime) when it is installed.

    python bench/llamacpp_engine.py [--repeat R]

Prints: the build (seconds, or "cached"); start-up (first render in a fresh engine: process start + render) vs
Jinja2's environment + first render; per-render time over llama.cpp's 70 templates (models/templates of the sdist)
x 2 contexts, ratio to Jinja2's; per-request time of ``apply`` (llama-server's whole path: it renders several
times to find the generation prompt and the format); and for the WebAssembly build: module compile, per-render
time and how many of llama.cpp's 35 test-chat-template.cpp Jinja expectations each build reproduces.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "real"))

from tokaudit.template.llamacpp_build import ensure_engine, find_sdist  # noqa: E402 - after sys.path names the checkout

TREE = "llama_cpp_python-0.3.36/vendor/llama.cpp/"
CONTEXTS = [
    {
        "messages": [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "Hi there"},
            {"role": "user", "content": "Weather?"},
        ],
        "bos_token": "<s>",
        "eos_token": "</s>",
        "add_generation_prompt": True,
    },
    {
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Get weather",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                },
            }
        ],
        "bos_token": "<s>",
        "eos_token": "</s>",
        "add_generation_prompt": True,
    },
]


def _templates(sdist: Path) -> dict[str, str]:
    with tarfile.open(sdist, "r:gz") as tar:
        return {
            Path(m.name).name: tar.extractfile(m).read().decode("utf-8")  # type: ignore[union-attr]
            for m in tar.getmembers()
            if m.name.startswith(TREE + "models/templates/") and m.name.endswith(".jinja")
        }


def _jinja2():
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])

    def raise_exception(message: str) -> None:
        raise ValueError(message)

    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: time.strftime(fmt)
    return env


def _time_each(fn, items, repeat: int) -> float:
    """Median over ``repeat`` passes of the seconds one call takes (a pass calls fn on every item)."""
    passes = []
    for _ in range(repeat):
        start = time.perf_counter()
        for item in items:
            fn(item)
        passes.append((time.perf_counter() - start) / len(items))
    return statistics.median(passes)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sdist = find_sdist()
    if sdist is None:
        sys.exit("the llama-cpp-python 0.3.36 sdist is not in the real cache: run scripts/fetch_real_tokenizers.py")
    built = ensure_engine(lambda m: print(m, file=sys.stderr))
    print(f"build: {'%.1f s' % built.seconds if built.built else 'cached'} ({built.path})")

    from tokaudit.template.llamacpp_engine import LlamaCppEngine
    from tokaudit.template.renders import Budget

    simple = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}"
    starts, jstarts = [], []
    for _ in range(args.repeat):
        t = time.perf_counter()
        with LlamaCppEngine(built.path, Budget()) as e:
            e.render(simple, CONTEXTS[0])
        starts.append(time.perf_counter() - t)
        t = time.perf_counter()
        _jinja2().from_string(simple).render(**CONTEXTS[0])
        jstarts.append(time.perf_counter() - t)
    print(
        f"start-up (engine + first render): llama.cpp {statistics.median(starts) * 1000:.1f} ms, "
        f"Jinja2 {statistics.median(jstarts) * 1000:.1f} ms"
    )

    templates = _templates(sdist)
    env = _jinja2()
    compiled = {}
    for name, text in templates.items():
        try:
            compiled[name] = env.from_string(text)
        except Exception:  # noqa: BLE001 - a template Jinja2 cannot parse is left out of both sides
            pass
    items = [(name, ctx) for name in compiled for ctx in CONTEXTS]

    def jinja_render(item):
        try:
            compiled[item[0]].render(**item[1])
        except Exception:  # noqa: BLE001 - a render Jinja2 refuses costs what it costs
            pass

    with LlamaCppEngine(built.path, Budget()) as engine:
        per = _time_each(lambda item: engine.render(templates[item[0]], item[1]), items, args.repeat)
        jper = _time_each(jinja_render, items, args.repeat)

        def jinja_compile_render(item):
            try:
                env.from_string(templates[item[0]]).render(**item[1])
            except Exception:  # noqa: BLE001 - a render Jinja2 refuses costs what it costs
                pass

        jcper = _time_each(jinja_compile_render, items, args.repeat)
        print(
            f"per render ({len(items)} renders, {len(compiled)} templates): llama.cpp {per * 1000:.3f} ms "
            f"(the template is sent and parsed each time); Jinja2 compiled once {jper * 1000:.3f} ms (ratio "
            f"{per / jper:.2f}), compiled each time {jcper * 1000:.3f} ms (ratio {per / jcper:.2f})"
        )
        requests = [
            (name, {"messages": ctx["messages"], **({"tools": ctx["tools"]} if "tools" in ctx else {})})
            for name, ctx in items
        ]
        aper = _time_each(
            lambda item: engine.apply(templates[item[0]], item[1], bos_token="<s>", eos_token="</s>"),
            requests,
            max(1, args.repeat // 2),
        )
        print(f"per request (apply: llama-server's whole path): {aper * 1000:.2f} ms")
        _fidelity(engine, sdist)


def _fidelity(engine, sdist: Path) -> None:
    from test_llamacpp_engine_real import CONVERSATION, chat_template_cases

    with tarfile.open(sdist, "r:gz") as tar:
        source = tar.extractfile(TREE + "tests/test-chat-template.cpp").read().decode("utf-8")  # type: ignore[union-attr]
    cases = [c for c in chat_template_cases(source) if c["supported_with_jinja"]]

    def conv(case):
        return [{"role": r, "content": t} for r, t in CONVERSATION + case["extra_conversation"]]

    native = sum(
        engine.apply(
            c["template_str"],
            {"messages": conv(c)},
            bos_token=c["bos_token"],
            eos_token=c["eos_token"],
            server={"reasoning_format": "none"},
        ).render.text
        == (c["expected_output_jinja"] or c["expected_output"])
        for c in cases
    )
    print(f"llama.cpp's own Jinja expectations (tests/test-chat-template.cpp): this build {native}/{len(cases)}")
    try:
        from ggufdoctor.engines.llamacpp_engine import LlamaCppEngine as Wasm  # type: ignore[import-not-found]
    except ImportError:
        print("WebAssembly build (ggufdoctor + wasmtime): not installed")
        return
    wasm = Wasm()
    t = time.perf_counter()
    wasm._ensure_compiled()
    compile_s = time.perf_counter() - t
    ok = 0
    t = time.perf_counter()
    for c in cases:
        r = wasm.render(
            c["template_str"],
            {
                "messages": conv(c),
                "bos_token": c["bos_token"],
                "eos_token": c["eos_token"],
                "add_generation_prompt": True,
            },
        )
        ok += r.text == (c["expected_output_jinja"] or c["expected_output"])
    per = (time.perf_counter() - t) / len(cases)
    print(
        f"WebAssembly build (ggufdoctor): module compile {compile_s:.2f} s, per render {per * 1000:.2f} ms, "
        f"expectations {ok}/{len(cases)}"
    )


if __name__ == "__main__":
    main()
