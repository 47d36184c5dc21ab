"""An assistant turn as the template teaches it: what the model should generate after the generation prompt
when it reasons and calls a tool (the input of the parser round trip).

Two renders: the request (system, user, tools; generation prompt on) and the same conversation with the
assistant's turn appended (reasoning, an empty content and one tool call to a sentinel tool whose arguments
hold quotes, ``<``, non-ASCII text and nested values; no generation prompt). The turn is what the second adds
after their common prefix; ``prefill`` is what the generation prompt has that the turn does not (a ``<think>``
the prompt opens, or a closed ``<think></think>``).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from tokaudit.template.renders import Prepared

SENTINEL_NAME = "tokaudit_probe"
SENTINEL_ARGUMENTS: dict[str, Any] = {
    "city": "São Paulo <Centro>",
    "note": "it's \"fine\" & dry, 東京も",
    "filter": {"units": "celsius", "days": [1, 2], "strict": True},
    "limit": 3,
}
SENTINEL_REASONING = "The user asks for São Paulo's weather; the probe tool answers that."
SENTINEL_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": SENTINEL_NAME,
        "description": "Look up the weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city."},
                "note": {"type": "string", "description": "A free-text note."},
                "filter": {"type": "object", "description": "Nested options."},
                "limit": {"type": "integer", "description": "How many results."},
            },
            "required": ["city"],
        },
    },
}
SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
ASK = {"role": "user", "content": "What is the weather in São Paulo?"}


def renders_call(text: str) -> bool:
    """The text holds the sentinel call: its name and an argument value (a template that writes only the name
    teaches no call format a parser could read; dropped calls are the template rules' business)."""
    return SENTINEL_NAME in text and "Centro" in text


def assistant_turn(arguments_as: str = "dict") -> dict[str, Any]:
    """The assistant's turn: reasoning, empty content, one call (arguments a dict as vLLM and transformers pass
    them, or the JSON string of the wire format)."""
    args: Any = copy.deepcopy(SENTINEL_ARGUMENTS)
    if arguments_as == "string":
        args = json.dumps(args, ensure_ascii=False)
    return {"role": "assistant", "content": "", "reasoning_content": SENTINEL_REASONING,
            "tool_calls": [{"id": "tokaudit1", "type": "function", "function": {"name": SENTINEL_NAME, "arguments": args}}]}


@dataclass(frozen=True)
class Turn:
    """The two renders and where the assistant's turn starts in the second."""

    prompt: str
    full: str
    #: characters of ``full`` shared with ``prompt``
    common: int
    kwargs: dict[str, Any]

    @property
    def output(self) -> str:
        """What the template teaches the model to generate after the prompt (up to the end of ``full``)."""
        return self.full[self.common:]

    @property
    def prefill(self) -> str:
        """The generation prompt's text that the rendered turn does not repeat."""
        return self.prompt[self.common:]


def _context(special: dict[str, str], messages: list[dict[str, Any]], generation: bool, kwargs: dict[str, Any]) -> dict[str, Any]:
    # reasoning under the three names transformers 5 passes it
    msgs = []
    for m in copy.deepcopy(messages):
        if m.get("reasoning_content") is not None:
            m = {**m, "thinking": m["reasoning_content"], "reasoning": m["reasoning_content"]}
        msgs.append(m)
    return {**special, "messages": msgs, "tools": [copy.deepcopy(SENTINEL_TOOL)], "documents": None,
            "add_generation_prompt": generation, **kwargs}


def _marker_boundary(text: str, at: int) -> int:
    """``at``, moved back to the start of a ``<...>`` or ``[...]`` marker it would cut (the generation prompt and the
    turn can share a marker's first characters: ``<think>`` and ``<TOOLCALL>``)."""
    for opener, closer in (("<", ">"), ("[", "]")):
        start = text.rfind(opener, 0, at)
        if start >= 0 and text.find(closer, start, at) < 0 and at - start <= 32 and text.find(closer, at) >= 0:
            return start
    return at


def render_turn(prepared: Prepared, special: dict[str, str], kwargs: dict[str, Any] | None = None,
                arguments_as: str | None = None) -> tuple[Turn | None, str | None]:
    """The turn, or None and the reason (a render error, or a turn that adds nothing). Arguments go in as a dict (as
    vLLM and transformers pass them); a template that prints them as they come (Kimi's: Python's repr of a dict)
    is rendered with the JSON string it was written for, the form the model learnt to generate."""
    if arguments_as is None:
        turn, why = render_turn(prepared, special, kwargs, "dict")
        if turn is not None and SENTINEL_NAME in turn.output and '"city"' not in turn.output and "'city'" in turn.output:
            as_string, _ = render_turn(prepared, special, kwargs, "string")
            if as_string is not None and '"city"' in as_string.output:
                return as_string, None
        return turn, why
    kwargs = dict(kwargs or {})
    base = [SYSTEM, ASK]
    first = prepared.render(_context(special, base, True, kwargs))
    if not first.ok:
        return None, f"the request does not render: {first.error}"
    second = prepared.render(_context(special, [*base, assistant_turn(arguments_as)], False, kwargs))
    if not second.ok:
        return None, f"the assistant turn does not render: {second.error}"
    assert first.text is not None and second.text is not None
    a, b = first.text, second.text
    n = min(len(a), len(b))
    common = _marker_boundary(b, next((i for i in range(n) if a[i] != b[i]), n))
    if common == len(b):
        return None, "the assistant turn adds nothing to the prompt"
    return Turn(a, b, common, kwargs), None


def generation_suffix(prepared: Prepared, special: dict[str, str], kwargs: dict[str, Any]) -> str | None:
    """What add_generation_prompt adds after the request's messages (None when a render fails or the prompt does
    not start with the render without it)."""
    base = [SYSTEM, ASK]
    with_prompt = prepared.render(_context(special, base, True, kwargs))
    without = prepared.render(_context(special, base, False, kwargs))
    if not (with_prompt.ok and without.ok):
        return None
    assert with_prompt.text is not None and without.text is not None
    if not with_prompt.text.startswith(without.text):
        return None
    return with_prompt.text[len(without.text):]
