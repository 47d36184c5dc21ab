"""The structural render rules (TA810-TA813) on fixtures/templates/structure, whose template prints content with
``{{ }}`` (typed parts and a null content leak), casts arguments with ``|string``, never writes the request's system
message, closes a tool result only when it is the last message, and writes today's date."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import FIXTURES, run_cli
from tokaudit.template.structure_markers import _balance, marker_pairs

T = FIXTURES / "templates"
ALL = ["transformers", "vllm", "sglang", "smg", "tgi", "mistral.rs", "llama.cpp", "dynamo"]
CALLS = [
    "tool-call",
    "tool-call-empty-content",
    "tool-call-multi-turn",
    "tool-call-with-content",
    "parallel-tool-calls",
    "tool-result-then-user",
]


def findings(path: Path, code: str, *args: str) -> list[dict[str, Any]]:
    out = run_cli("template", str(path), "--format", "json", "--select", code, *args)
    assert out.exit_code in (0, 1), out.stderr
    return json.loads(out.stdout)["findings"]


def test_python_repr_leaks() -> None:
    got = [
        (
            f["severity"],
            f["details"]["stacks"],
            f["details"]["conversations"],
            f["details"]["value"],
            f["details"]["position"],
        )
        for f in findings(T / "structure", "TA810")
    ]
    assert got == [
        # arguments|string: Python's repr of the dict the stacks parse the JSON string into (TGI passes no tool_calls)
        # (llama.cpp's engine prints a map as Python does too)
        (
            "warning",
            ["transformers", "vllm", "sglang", "smg", "mistral.rs", "llama.cpp", "dynamo"],
            CALLS,
            "messages[2].tool_calls[0].function.arguments",
            164,
        ),
        # typed parts as sent: only transformers passes the list itself to a string-format template (an optional
        # feature the template does not serve: a warning, as TA801's are)
        ("warning", ["transformers"], ["content-parts"], "messages[0].content", 67),
        # content: null printed: smg keeps the null (transformers drops the key, the others make it "")
        (
            "error",
            ["smg"],
            ["tool-call", "tool-call-multi-turn", "parallel-tool-calls", "tool-result-then-user"],
            "messages[2].content",
            121,
        ),
        # the reasoning-only turn (content null, no calls): smg keeps the null, TGI too (its content is an Option);
        # optional, so a warning (chatlint's reasoning_only shape on Llama 3.x)
        ("warning", ["smg", "tgi"], ["reasoning-only"], "messages[1].content", 110),
    ]
    leak = findings(T / "structure", "TA810")[2]
    assert leak["message"].startswith(
        "smg: requests tool-call, tool-call-multi-turn, parallel-tool-calls, tool-result-then-user: a content: null "
        "(messages[2].content) is printed as 'None', at character "
        "121: 'im_start|>assistant\\nNone<tool_call>get_weath"
    )


def test_content_dropped() -> None:
    (f, midway) = findings(T / "structure", "TA811")
    # a second system message later on (system-midway, optional: a warning): the template writes no system role; so is
    # the assistant prefill's system message (optional too: transformers, vLLM, llama.cpp continue a final message)
    assert (
        midway["severity"],
        midway["details"]["stacks"],
        midway["details"]["conversations"],
        midway["details"]["message"],
    ) == ("warning", ALL, ["system-midway", "assistant-prefill"], 0)
    # llama-server merges a system message into the first user turn when the template writes no system role
    assert (
        f["severity"],
        f["details"]["stacks"],
        f["details"]["problem"],
        f["details"]["role"],
        f["details"]["message"],
    ) == ("error", [s for s in ALL if s != "llama.cpp"], "dropped", "system", 0)
    assert f["details"]["conversations"] == [
        "system-user",
        "system-user-no-generation-prompt",
        "multi-turn",
        "tools-offered",
        *CALLS,
    ]
    # `content if content is string else ''`: the stacks that pass typed parts as a list lose the user's text
    (parts,) = findings(T / "qwen-tools", "TA811")
    assert (parts["details"]["stacks"], parts["details"]["conversations"], parts["details"]["text"]) == (
        ["transformers", "mistral.rs"],
        ["content-parts"],
        "Describe",
    )
    assert parts["message"] == (
        "transformers, mistral.rs: request content-parts: the user text of message 0 ('Describe') is not in the "
        "prompt. The model answers a conversation other than the one sent."
    )


def test_unbalanced_markers() -> None:
    got = [
        (
            f["severity"],
            f["details"]["stacks"],
            f["details"]["conversations"],
            f["details"]["problem"],
            f["details"]["marker"],
            f["details"]["position"],
        )
        for f in findings(T / "structure", "TA812")
    ]
    assert got == [
        ("warning", ALL, ["tool-call-multi-turn", "tool-result-then-user"], "unclosed", "<tool_response>", 313),
        ("warning", ALL, ["parallel-tool-calls"], "reopened", "<tool_response>", 364),
    ]


def test_date_dependent_prompt() -> None:
    (f,) = findings(T / "structure", "TA813")
    assert (f["severity"], f["details"]["stacks"], f["details"]["clock"], f["details"]["position"]) == (
        "note",
        [s for s in ALL if s != "smg"],
        "strftime_now('%Y-%m-%d')",
        28,
    )
    assert "('2026-01-15' at character 28: 'rt|>system\\nToday is 2026-01-15.<|im_end|>\\n<|im_sta')" in f["message"]
    # smg has no strftime_now: the template's guard leaves the date out
    assert findings(T / "structure", "TA813", "--stack", "smg") == []


def test_marker_pairs() -> None:
    assert marker_pairs("<|im_start|>user<|im_end|><tool_call></tool_call><think></think>") == [
        ("<|im_start|>", "<|im_end|>"),
        ("<tool_call>", "</tool_call>"),
    ]  # reasoning markers are not turns
    assert marker_pairs("<start_of_turn>model<end_of_turn>[INST]x[/INST][TOOL_CALLS]") == [
        ("<start_of_turn>", "<end_of_turn>"),
        ("[INST]", "[/INST]"),
    ]
    # gpt-oss ends turns with <|end|>, <|call|> or <|return|>; BOS/EOS are not a turn
    assert (
        marker_pairs(
            "<|start|>assistant<|end|><|begin_of_text|><|end_of_text|><｜begin▁of▁sentence｜><｜end▁of▁sentence｜>"
        )
        == []
    )
    assert marker_pairs("<｜tool▁calls▁begin｜><｜tool▁calls▁end｜><|START_OF_TURN_TOKEN|><|END_OF_TURN_TOKEN|>") == [
        ("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"),
        ("<|START_OF_TURN_TOKEN|>", "<|END_OF_TURN_TOKEN|>"),
    ]
    # Gemma 4's one-sided markers: the bar is on the open side; its thought channel is reasoning, not a turn
    assert marker_pairs('<|turn>user\nhi<turn|><|tool_call>call:f{}<tool_call|><|channel>thought<channel|><|"|>') == [
        ("<|turn>", "<turn|>"),
        ("<|tool_call>", "<tool_call|>"),
    ]


def test_balance_reads_from_the_first_message() -> None:
    pairs = [("<tool_call>", "</tool_call>"), ("<|im_start|>", "<|im_end|>")]
    # tool instructions name </tool_call> alone in prose before the first message: not a problem
    prose = (
        "<|im_start|>system\nclose calls with </tool_call><|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert _balance(prose, pairs, prose.index("hi")) is None
    # a turn opened again before it closes; a tag with attributes opens it
    again = "<|im_start|>user\nhi<|im_start|>assistant\n"
    assert _balance(again, pairs, again.index("hi")) == ("reopened", "<|im_start|>", 0)
    tag = '<|im_start|>user\nhi<|im_end|><tool_call name="f">x</tool_call></tool_call>'
    assert _balance(tag, [("<tool_call>", "</tool_call>")], tag.index("hi")) == (
        "unopened",
        "<tool_call>",
        tag.rindex("</tool_call>"),
    )
    # Gemma 4 keeps the model turn open around its own call and response: pairs closed inside an open turn are nested
    gemma = [("<|turn>", "<turn|>"), ("<|tool_call>", "<tool_call|>"), ("<|tool_response>", "<tool_response|>")]
    turn = (
        "<|turn>user\nhi<turn|>\n<|turn>model\n<|tool_call>call:f{}<tool_call|>"
        "<|tool_response>response:f{}<tool_response|>"
    )
    assert _balance(turn, gemma, turn.index("hi")) is None
    # a pair opened before the open marker and closed after it crosses it: the marker was left open
    crossed = "<|im_start|>user\nhi<|im_end|><|im_start|>assistant\n<tool_call>{}<|im_end|>"
    assert _balance(crossed, pairs, crossed.index("hi")) == ("unclosed", "<tool_call>", crossed.index("<tool_call>"))
