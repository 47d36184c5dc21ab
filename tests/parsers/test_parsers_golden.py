"""The built-in parser grammars against what the real parser classes of vLLM 0.33.0 and SGLang 0.5.23 returned on
the same round-trip cases (tests/data/parser_golden.jsonl, written by scripts/golden_parsers.py in a venv with
both stacks installed on CPU): the same verdict (call recovered or not, reasoning ok / leaked / overran / lost,
start-up refusal) for every pair of parsers, whole and streamed in steps of 1, 3 and 8 ids."""

from __future__ import annotations

import json
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

import parser_data
from conftest import ROOT
from tokaudit.parsers.reasoning_table import find_reasoning_parser
from tokaudit.parsers.tool_table import find_tool_parser
from tokaudit.parsers.calls import Call
from tokaudit.parsers.parse import Outcome, parse_streamed, parse_whole
from tokaudit.roundtrip.case import Case
from tokaudit.roundtrip.decode import model_decoder
from tokaudit.roundtrip.run import _reasoning_verdict, calls_equal, case_force, evaluate
from tokaudit.template.turn import SENTINEL_NAME, SENTINEL_REASONING, SENTINEL_TOOL, Turn

DATA = ROOT / "tests" / "data"
REAL = parser_data.real_cache() / "models"

#: Pairs where the real parser does something the grammar does not model, with the reason (checked by hand).
_SGLANG_LLAMA3 = "SGLang's llama3 detector, streamed, finds the JSON inside <tool_call> that its whole parse rejects"
_MINIMAX = (
    "SGLang's minimax detector forces reasoning when the tokenizer has no <think> token (Llama 3, gpt-oss), "
    "not with Qwen's"
)
#: Pairs whose streamed parse (every step size; the whole parse is still checked) or, with "whole", every parse
#: does something the grammar does not model: the real parser's own quirk, read in its output (checked by hand).
KNOWN: dict[tuple[str, str, str | None, str | None], tuple[str, str]] = {
    ("qwen3-0.6b", "vllm", None, "glm45"): (
        "stream",
        "vLLM's glm45 engine, streamed from a ChatML prompt, leaves <think> in content",
    ),
    ("qwen3-0.6b", "sglang", "qwen25", None): (
        "stream",
        "SGLang's qwen25 detector in steps of 8 drops a piece of the text before <tool_call>",
    ),
    ("qwen3-0.6b", "sglang", "glm45", None): (
        "stream",
        "SGLang's glm45 detector in steps of 8 drops a piece of the text before <tool_call>",
    ),
    ("qwen3-0.6b", "sglang", "llama3", None): ("stream", _SGLANG_LLAMA3),
    ("qwen3-0.6b", "sglang", "llama3", "qwen3"): ("stream", _SGLANG_LLAMA3),
    ("qwen3-0.6b", "sglang", "llama3", "deepseek-r1"): ("stream", _SGLANG_LLAMA3),
    ("qwq-32b", "sglang", "llama3", None): ("stream", _SGLANG_LLAMA3),
    ("qwq-32b", "sglang", "llama3", "qwen3"): ("stream", _SGLANG_LLAMA3),
    ("qwen2.5", "sglang", "llama3", None): ("stream", _SGLANG_LLAMA3),
    ("llama-3.1+llama-3.0-tokenizer", "sglang", None, "minimax"): ("whole", _MINIMAX),
    ("gpt-oss", "sglang", None, "minimax"): ("whole", _MINIMAX),
    ("gpt-oss", "sglang", "gpt-oss", None): ("stream", "SGLang's gpt-oss detector, streamed, drops the analysis text"),
    ("glm-4.6", "sglang", "glm47", None): (
        "whole",
        "SGLang's glm47 detector does not read GLM-4.6's newline between name and arguments",
    ),
    ("glm-4.6", "sglang", "glm47", "glm45"): (
        "whole",
        "SGLang's glm47 detector does not read GLM-4.6's newline between name and arguments",
    ),
    ("glm-4.6", "sglang", "glm45", None): (
        "stream",
        "SGLang's glm45 detector in steps of 8 drops a piece of the text before <tool_call>",
    ),
    # the formats added in part B: streaming paths that differ from their own whole parse
    **{
        (case, "vllm", "muse_glimmer", None): (
            "stream",
            "vLLM's muse_glimmer, streamed, returns none of the text when it finds no "
            "call (the whole parse returns it as content)",
        )
        for case in ("qwen3-0.6b", "qwen3.5", "glm-4.6", "muse-glimmer")
    },
    **{
        (case, "vllm", None, name): (
            "stream",
            f"vLLM's {name} reasoning parser, streamed, returns none of the text when the output has "
            "no Muse channel (the whole parse returns it as content)",
        )
        for case in ("qwen3-0.6b", "qwen3.5", "glm-4.6")
        for name in ("muse", "muse_glimmer")
    },
    ("minicpm5", "vllm", "minicpm5", None): (
        "stream",
        "vLLM's minicpm5, streamed, returns the thinking block as content (its whole "
        "parse returns nothing around the call)",
    ),
    ("kimi-k3", "vllm", "kimi_k3", None): ("stream", "vLLM's kimi_k3, streamed, returns the think section as content"),
    ("kimi-k3", "sglang", "kimi_k3", None): (
        "stream",
        "SGLang's kimi_k3, streamed, returns the think section as content",
    ),
    ("mistral-small-3.2", "vllm", "mistral", None): (
        "stream",
        "vLLM's mistral, streamed, returns the [CALL_ID] call as reasoning "
        "text (its whole parse returns it as content)",
    ),
}


def _lines(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines()]


CASES = {c["case"]: c for c in _lines("parser_cases.jsonl")}
GOLDEN = _lines("parser_golden.jsonl")


def test_golden_names_the_stack_versions() -> None:
    from tokaudit.parsers.families import STACKS

    head = GOLDEN[0]
    assert head["stacks"] == {"vllm": STACKS["vllm"].version, "sglang": STACKS["sglang"].version}


_BUILT = {"kimi-k2.5": parser_data.kimi_tokenizer, "glm-4.6-markers": parser_data.glm_tokenizer}


@lru_cache(maxsize=None)
def _model(tokenizer: str) -> Any:
    from tokaudit.model.load import load_model

    if tokenizer in _BUILT:
        path = _BUILT[tokenizer](Path(tempfile.mkdtemp(prefix="tokaudit-golden-")) / tokenizer)
    elif tokenizer.startswith("markers-"):  # a family's markers made special in Qwen3's real vocabulary
        path = parser_data.family_tokenizer(
            tokenizer[len("markers-") :], Path(tempfile.mkdtemp(prefix="tokaudit-golden-")) / tokenizer
        )
    else:
        path = REAL / tokenizer if (REAL / tokenizer).is_dir() else None
    if path is None:
        pytest.skip(f"real tokenizer {tokenizer} not fetched (scripts/fetch_real_tokenizers.py)")
    return load_model(str(path))


@lru_cache(maxsize=None)
def _decoder(name: str) -> Any:
    c = CASES[name]
    model = _model(c["tokenizer"])
    from tokaudit.stream.replay import load_tokenizer

    prompt = load_tokenizer(model).tokenizer.decode(c["prompt_tail"], skip_special_tokens=False)
    case = Case(
        name,
        Turn(prompt, prompt + c["text"], len(prompt), c["kwargs"]),
        c["text"],
        c["prompt_tail"],
        c["output_ids"],
        # vLLM's harmony parsers read ids: the test parses the text with the markers kept
        tokenizer_note="harmony" if c["tokenizer"] == "gpt-oss" else None,
        # SGLang's server decides from the template whether the output starts inside reasoning
        extra={"template": parser_data.llamacpp_template(c["template"])},
    )
    return model_decoder(case, model)


def _verdicts(o: Outcome, text: str) -> tuple[str, str | None]:
    rendered_calls = SENTINEL_NAME in text
    tool = "ok" if calls_equal(o.calls) else ("lost" if rendered_calls else "not-rendered")
    return tool, _reasoning_verdict(o, SENTINEL_REASONING in text, None)


def _golden_outcome(d: dict[str, Any]) -> Outcome:
    return Outcome(
        d.get("reasoning"), d.get("content"), tuple(Call(c["name"], c["arguments"]) for c in d.get("calls", []))
    )


def _rows() -> list[Any]:
    return [
        pytest.param(r, id=f"{r['case']}:{r['stack']}:{r['tool_parser']}:{r['reasoning_parser']}") for r in GOLDEN[1:]
    ]


@pytest.mark.parametrize("row", _rows())
def test_grammar_matches_the_real_parser(row: dict[str, Any]) -> None:
    stack, tname, rname = row["stack"], row["tool_parser"], row["reasoning_parser"]
    tool = find_tool_parser(stack, tname) if tname else None
    reasoning = find_reasoning_parser(stack, rname) if rname else None
    assert (tname is None or tool is not None) and (rname is None or reasoning is not None)
    dec = _decoder(row["case"])
    mine = evaluate(dec, stack, tool, reasoning)
    if "refused" in row or "NotImplementedError" in row["whole"].get(
        "error", ""
    ):  # the harmony-only stubs raise per request
        assert mine.tool_calls == "refused" or mine.reasoning == "refused", row.get("refused") or row["whole"]
        return
    assert mine.stage != "startup", mine.reason
    assert mine.skip_special_tokens == row["skip_special_tokens"]
    case = dec.case
    text = case.text
    force = case_force(case, reasoning)
    # SGLang's server decision (its template detection and the request's kwargs), as the golden run recorded it
    assert force == row.get("force_reasoning"), (force, row.get("force_reasoning"))
    for mode in ("whole", "stream1", "stream3", "stream8"):
        got = row["whole"] if row[mode] == "same" else row[mode]
        known = KNOWN.get((row["case"], stack, tname, rname))
        if "error" in got or (known is not None and (known[0] == "whole" or mode != "whole")):
            continue
        skip = row["skip_special_tokens"] and not (stack == "vllm" and case.tokenizer_note == "harmony")
        if mode == "whole":
            ours = parse_whole(
                dec.whole(skip), tool, reasoning, [SENTINEL_TOOL], case.turn.prompt, case.turn.kwargs, force
            )
        else:
            ours = parse_streamed(
                dec.steps(skip, int(mode[6:])),
                tool,
                reasoning,
                [SENTINEL_TOOL],
                case.turn.prompt,
                dec.id_of,
                case.turn.kwargs,
                force,
            )
        assert _verdicts(ours, text) == _verdicts(_golden_outcome(got), text), (mode, got, ours)
