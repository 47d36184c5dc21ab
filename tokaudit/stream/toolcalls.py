"""Tool-call arguments in streamed text, and whether they parse as JSON.

Formats: Kimi (``<|tool_call_argument_begin|>ARGS<|tool_call_end|>``), DeepSeek
(``<｜tool▁sep｜>...ARGS...<｜tool▁call▁end｜>``, with or without a name line and a json fence),
Qwen/Hermes (``<tool_call>{"name": ..., "arguments": ...}</tool_call>``) and, when the text has no
markers, bare JSON (text that starts with ``{`` or ``[``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

# (format, start marker, end marker)
MARKERS = (
    ("kimi", "<|tool_call_argument_begin|>", "<|tool_call_end|>"),
    ("deepseek", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>"),
    ("hermes", "<tool_call>", "</tool_call>"),
)
_FENCE = re.compile(r"^\s*(?:[^\n{\[]*\n)?```(?:json)?\s*\n?(.*?)\n?```\s*$", re.S)


@dataclass(frozen=True)
class ToolCall:
    """One tool-call argument segment: where it starts in the text, its JSON text, and the verdict."""

    format: str
    start: int  # offset of the JSON text in the decoded text
    text: str
    closed: bool  # the end marker was seen (False: the stream ended inside the call)
    error: str | None  # the JSON parser's message, None when it parses
    error_offset: int | None  # offset in the decoded text where the parser gave up


def _payload(fmt: str, body: str) -> tuple[int, str]:
    """The JSON part of a segment body and its offset in the body."""
    if fmt == "deepseek":
        m = _FENCE.match(body)
        if m:
            return m.start(1), m.group(1)
        # V3.1 style is ARGS directly; V3 style puts the name on its own line before a fence
    lead = len(body) - len(body.lstrip())
    return lead, body.strip()


def _check(fmt: str, text: str, start: int, body: str, closed: bool) -> ToolCall:
    offset, payload = _payload(fmt, body)
    try:
        json.loads(payload)
        return ToolCall(fmt, start + offset, payload, closed, None, None)
    except json.JSONDecodeError as exc:
        return ToolCall(fmt, start + offset, payload, closed, str(exc), start + offset + exc.pos)


def find_tool_calls(text: str) -> list[ToolCall]:
    """Every tool-call argument segment in ``text`` (decoded with special tokens kept)."""
    calls: list[ToolCall] = []
    for fmt, begin, end in MARKERS:
        pos = 0
        while True:
            b = text.find(begin, pos)
            if b < 0:
                break
            body_start = b + len(begin)
            e = text.find(end, body_start)
            closed = e >= 0
            body = text[body_start:e] if closed else text[body_start:]
            calls.append(_check(fmt, text, body_start, body, closed))
            pos = e + len(end) if closed else len(text)
    if calls:
        return sorted(calls, key=lambda c: c.start)
    stripped = text.lstrip()
    if _BARE_JSON.match(stripped):
        return [_check("json", text, len(text) - len(stripped), stripped, True)]
    return []


#: Bare JSON: an object, or an array whose first element can start a JSON value (so that text
#: opening with a bracketed special token such as BERT's ``[CLS]`` is not taken for a tool call).
_BARE_JSON = re.compile(r'\{|\[\s*(?:[\[{"\]0-9-]|true|false|null)')
