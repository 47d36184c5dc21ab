"""Whether SGLang's and smg's servers start the output inside reasoning, decided from the chat template's thinking
toggle and the request's kwargs as they decide it (tokaudit.parsers.toggle), on llama.cpp's real templates (the
llama-cpp-python 0.3.36 sdist). SGLang 0.5.23's own detect_reasoning_pattern / _get_reasoning_from_request agree with
these on all 70 templates x 8 reasoning parsers x 6 kwarg sets (checked in the golden venv); the golden file records
the server's decision per row and tests/parsers/test_parsers_golden.py holds the grammars to it."""

from __future__ import annotations

from typing import Any

import pytest

import parser_data
from tokaudit.parsers.reasoning_table import find_reasoning_parser
from tokaudit.parsers.toggle import Toggle, forces_reasoning, sglang_toggle, smg_toggle


def _template(name: str) -> str:
    text = parser_data.llamacpp_template(name)
    if text is None:
        pytest.skip("llama-cpp-python 0.3.36 sdist not in the real cache (scripts/fetch_real_tokenizers.py)")
    return text


@pytest.mark.parametrize(
    ("template", "rule", "toggle"),
    [
        ("Qwen-Qwen3-0.6B.jinja", "enable_thinking_default_true", Toggle("enable_thinking", True)),
        ("GLM-4.6.jinja", "enable_thinking_default_true", Toggle("enable_thinking", True)),
        ("google-gemma-4-31B-it.jinja", "explicit_enable_thinking_default_false", Toggle("enable_thinking", False)),
        ("poolside-Laguna-XS-2.1.jinja", "explicit_enable_thinking_default_false", Toggle("enable_thinking", False)),
        ("openai-gpt-oss-120b.jinja", "gpt_oss_channel_markers", Toggle(special="always")),
        ("StepFun3.5-Flash.jinja", "force_reasoning_pattern", Toggle(special="always")),
        ("tencent-Hy3.jinja", "hunyuan_reasoning_effort", Toggle(special="hunyuan_effort")),
        # DeepSeek-V3.1's `thinking` switch matches none of SGLang's rules: the parser's own default decides
        ("deepseek-ai-DeepSeek-V3.1.jinja", None, None),
        ("Qwen-Qwen2.5-7B-Instruct.jinja", None, None),
    ],
)
def test_sglang_reads_the_template_toggle_with_its_rules_in_order(
    template: str, rule: str | None, toggle: Toggle | None
) -> None:
    found = sglang_toggle(_template(template))
    assert (found[0], found[1]) == (rule, toggle) if found is not None else (rule, toggle) == (None, None)


@pytest.mark.parametrize(
    ("template", "parser", "kwargs", "forced"),
    [
        # Qwen3's toggle, on unless the request turns it off
        ("Qwen-Qwen3-0.6B.jinja", "qwen3", {}, True),
        ("Qwen-Qwen3-0.6B.jinja", "qwen3", {"enable_thinking": False}, False),
        ("Qwen-Qwen3-0.6B.jinja", "deepseek-v3", {}, True),
        # no toggle: each detector's default (kimi_k2 on unless `thinking` is false; deepseek-v3 only when it is true)
        ("Qwen-Qwen2.5-7B-Instruct.jinja", "kimi_k2", {}, True),
        ("Qwen-Qwen2.5-7B-Instruct.jinja", "kimi_k2", {"thinking": False}, False),
        ("deepseek-ai-DeepSeek-V3.1.jinja", "deepseek-v3", {}, False),
        ("deepseek-ai-DeepSeek-V3.1.jinja", "deepseek-v3", {"thinking": True}, True),
        ("deepseek-ai-DeepSeek-V3.1.jinja", "mistral", {"thinking": True}, False),
        # Gemma 4's explicit toggle, off by default; gpt-oss's channels force every parser
        ("google-gemma-4-31B-it.jinja", "qwen3", {}, False),
        ("google-gemma-4-31B-it.jinja", "qwen3", {"enable_thinking": True}, True),
        ("openai-gpt-oss-120b.jinja", "mistral", {}, True),
    ],
)
def test_sglang_forces_reasoning_from_template_and_request(
    template: str, parser: str, kwargs: dict[str, Any], forced: bool
) -> None:
    assert forces_reasoning(find_reasoning_parser("sglang", parser), _template(template), kwargs) is forced


def test_smg_marks_reasoning_started_only_with_a_toggle_that_is_on() -> None:
    qwen3, qwen25, v31 = (
        _template(n)
        for n in ("Qwen-Qwen3-0.6B.jinja", "Qwen-Qwen2.5-7B-Instruct.jinja", "deepseek-ai-DeepSeek-V3.1.jinja")
    )
    assert (smg_toggle(qwen3), smg_toggle(qwen25), smg_toggle(v31)) == (
        Toggle("enable_thinking", True),
        None,
        Toggle("enable_thinking", False),
    )
    parser = find_reasoning_parser("smg", "qwen3")
    assert [forces_reasoning(parser, qwen3, kw) for kw in ({}, {"enable_thinking": False}, {"thinking": False})] == [
        True,
        False,
        True,
    ]
    assert [forces_reasoning(parser, v31, kw) for kw in ({}, {"enable_thinking": True}, {"thinking": True})] == [
        False,
        True,
        False,
    ]
    assert forces_reasoning(parser, qwen25, {}) is False
    # stacks that read the generation prompt, and an unknown template, are left to it
    assert forces_reasoning(find_reasoning_parser("vllm", "qwen3"), qwen3, {}) is None
    assert forces_reasoning(parser, None, {}) is None


def test_a_template_jinja_cannot_parse_has_no_default_filter_toggle() -> None:
    assert sglang_toggle("{% set enable_thinking = enable_thinking | default(false) %}{% if %}") is None
    assert sglang_toggle("{% set enable_thinking = enable_thinking | default(false) %}") == (
        "explicit_enable_thinking_default_false",
        Toggle("enable_thinking", False),
    )
    # default(true, true) turns an explicit false into true: no working toggle
    assert sglang_toggle("{% set thinking = thinking | default(true, true) %}") is None
