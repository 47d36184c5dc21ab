"""An assistant turn as the template teaches it: what the model should generate after the generation prompt
when it reasons and calls a tool (the input of the parser round trip).

Two renders: the request (system, user, tools; generation prompt on) and the same conversation with the
assistant's turn appended (reasoning, content null and one tool call to a sentinel tool whose arguments
hold quotes, ``<``, non-ASCII text and nested values; no generation prompt). The turn is what the second adds
after their common prefix. Both go through a stack's profile (its request->context rules and engine:
``RenderRequest``), so each stack's turn is the one it renders. ``prefill`` is what the generation prompt has
that the turn does not (a ``<think>`` the prompt opens, or a closed ``<think></think>``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tokaudit.template.renders import Render

SENTINEL_NAME = "tokaudit_probe"
SENTINEL_ARGUMENTS: dict[str, Any] = {
    "city": "São Paulo <Centro>",
    "note": 'it\'s "fine" & dry, 東京も',
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


def assistant_turn(content: str | None = None) -> dict[str, Any]:
    """The assistant's turn as a client sends it back: reasoning (under ``reasoning``, vLLM's response field, and
    ``reasoning_content``, SGLang's and DeepSeek's), content null (as an OpenAI-style API returns a call; "" for a
    template that cannot render null), one call with the arguments a JSON string (the wire format; each stack's
    profile turns it into what it passes the template)."""
    args = json.dumps(SENTINEL_ARGUMENTS, ensure_ascii=False)
    return {
        "role": "assistant",
        "content": content,
        "reasoning": SENTINEL_REASONING,
        "reasoning_content": SENTINEL_REASONING,
        "tool_calls": [{"id": "tokaudit1", "type": "function", "function": {"name": SENTINEL_NAME, "arguments": args}}],
    }


def turn_request(messages: list[dict[str, Any]], generation: bool, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The request (``Request.to_json()`` shape) the probe renders: the sentinel tool, the deploy's kwargs."""
    out: dict[str, Any] = {
        "messages": copy.deepcopy(messages),
        "tools": [copy.deepcopy(SENTINEL_TOOL)],
        "add_generation_prompt": generation,
    }
    if kwargs:
        out["chat_template_kwargs"] = dict(kwargs)
    return out


#: Renders a request (``turn_request``) for one stack: ``as_string`` asks that tool-call arguments reach the template
#: as the JSON string they were sent as; returns the engine's result (``ok``, ``text``, ``error``).
RenderRequest = Callable[[dict[str, Any], bool], Render]


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
        return self.full[self.common :]

    @property
    def prefill(self) -> str:
        """The generation prompt's text that the rendered turn does not repeat."""
        return self.prompt[self.common :]


def _marker_boundary(text: str, at: int) -> int:
    """``at``, moved back to the start of a ``<...>`` or ``[...]`` marker it would cut (the generation prompt and the
    turn can share a marker's first characters: ``<think>`` and ``<TOOLCALL>``)."""
    for opener, closer in (("<", ">"), ("[", "]")):
        start = text.rfind(opener, 0, at)
        if start >= 0 and text.find(closer, start, at) < 0 and at - start <= 32 and text.find(closer, at) >= 0:
            return start
    return at


def render_turn(
    render: RenderRequest, kwargs: dict[str, Any] | None = None, as_string: bool | None = None
) -> tuple[Turn | None, str | None]:
    """The turn, or None and the reason (a render error, or a turn that adds nothing). Arguments go in as the stack
    passes them (vLLM, SGLang and transformers: a dict); a template that prints them as they come (Kimi's: Python's
    repr of a dict) is rendered with the JSON string it was written for, the form the model learnt to generate."""
    if as_string is None:
        turn, why = render_turn(render, kwargs, False)
        if (
            turn is not None
            and SENTINEL_NAME in turn.output
            and '"city"' not in turn.output
            and "'city'" in turn.output
        ):
            with_string, _ = render_turn(render, kwargs, True)
            if with_string is not None and '"city"' in with_string.output:
                return with_string, None
        return turn, why
    turn, why = _render_turn(render, kwargs, as_string, None)
    if turn is None and why is not None and why.startswith("the assistant turn does not render"):
        # a template that reads the content as a string fails on null: the turn with an empty content
        empty, _ = _render_turn(render, kwargs, as_string, "")
        if empty is not None:
            return empty, None
    return turn, why


def _render_turn(
    render: RenderRequest, kwargs: dict[str, Any] | None, as_string: bool, content: str | None
) -> tuple[Turn | None, str | None]:
    kwargs = dict(kwargs or {})
    base = [SYSTEM, ASK]
    first = render(turn_request(base, True, kwargs), as_string)
    if not first.ok:
        return None, f"the request does not render: {first.error}"
    second = render(turn_request([*base, assistant_turn(content)], False, kwargs), as_string)
    if not second.ok:
        return None, f"the assistant turn does not render: {second.error}"
    assert first.text is not None and second.text is not None
    a, b = first.text, second.text
    n = min(len(a), len(b))
    common = _marker_boundary(b, next((i for i in range(n) if a[i] != b[i]), n))
    if common == len(b):
        return None, "the assistant turn adds nothing to the prompt"
    return Turn(a, b, common, kwargs), None


def generation_suffix(render: RenderRequest, kwargs: dict[str, Any]) -> str | None:
    """What add_generation_prompt adds after the request's messages (None when a render fails or the prompt does
    not start with the render without it)."""
    base = [SYSTEM, ASK]
    with_prompt = render(turn_request(base, True, kwargs), False)
    without = render(turn_request(base, False, kwargs), False)
    if not (with_prompt.ok and without.ok):
        return None
    assert with_prompt.text is not None and without.text is not None
    if not with_prompt.text.startswith(without.text):
        return None
    return with_prompt.text[len(without.text) :]
