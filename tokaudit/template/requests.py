"""The requests rendered through a template, as OpenAI-compatible clients send them to a chat endpoint: the
built-in set and ``--messages`` / ``--tools`` files.

A request is plain JSON data (what goes over the wire): tool-call arguments are a JSON string, an assistant
turn that only calls tools has ``content: null``, content may be a list of parts. Each stack profile turns
a request into the variables its engine renders (:mod:`tokaudit.template.stacks.context`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tokaudit.artifacts.safe_files import read_text
from tokaudit.errors import InputError

#: The assistant text used to find the header a template writes before an assistant turn (TA805).
SENTINEL = "TOKAUDIT_ASSISTANT_SENTINEL"

#: Most requests a ``--messages`` file may hold, and most messages in one of them.
MAX_CONVERSATIONS = 1000
MAX_MESSAGES = 1000


@dataclass(frozen=True)
class Request:
    """One chat request as a client sends it (plain JSON data)."""

    name: str
    messages: list[dict[str, Any]]
    add_generation_prompt: bool = True
    tools: list[dict[str, Any]] | None = None
    #: Every chat model must render it (a failure is an error); else an optional feature (a warning).
    required: bool = True
    #: Where it came from: "built-in" or "FILE:LINE".
    origin: str = "built-in"
    #: vLLM / SGLang / smg / llama.cpp's ``chat_template_kwargs`` (``enable_thinking``...).
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    #: What a RAG request passes as ``documents`` (transformers, vLLM).
    documents: list[dict[str, Any]] | None = None
    #: The request this one extends by a turn the API and the model's reference format take: a template that renders
    #: that request for a stack but refuses this one (``raise_exception``) refuses the added turn, which is the
    #: template's gap, not a documented limit of the model.
    extends: str | None = None
    #: An assistant prefill: the final assistant message is continued, not closed (vLLM's ``continue_final_message``,
    #: transformers' argument of that name, llama-server's ``prefill_assistant`` default). Sent only to those stacks.
    continue_final_message: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"messages": self.messages, "add_generation_prompt": self.add_generation_prompt}
        if self.tools is not None:
            out["tools"] = self.tools
        if self.chat_template_kwargs:
            out["chat_template_kwargs"] = self.chat_template_kwargs
        if self.documents is not None:
            out["documents"] = self.documents
        if self.continue_final_message:
            out["continue_final_message"] = True
        return out

    @property
    def has_tool_calls(self) -> bool:
        return any(m.get("tool_calls") for m in self.messages if isinstance(m, dict))


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city. Units are <celsius> or <fahrenheit>.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": 'City name, e.g. "São Paulo"'},
                "units": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}

#: Tool-call arguments with ``<``, quotes, non-ASCII and nesting: where tojson implementations differ.
TOOL_ARGUMENTS = {
    "city": "São Paulo <Centro>",
    "units": "celsius",
    "filter": {"quote": 'it\'s "fine" & dry', "days": [1, 2]},
}
#: What a rendered prompt holds when the past call reached it: the function name and an argument value.
TOOL_CALL_MARKS = ("get_weather", "Centro")
#: A tool-call id as Mistral's API and vLLM's mistral parser issue them (nine alphanumerics): Mistral's
#: templates refuse other ids, which is the id's fault, not the template's.
TOOL_CALL_ID = "a1B2c3D4e"

_LONG = ("日本語のテキストと한국어 문장, ελληνικά, русский текст, emoji 🙂🚀 and ÀÉÎÕÜ. " * 40)[:2000]

#: What a RAG template (Command-R's named ``rag``) is given: transformers passes ``documents`` to it.
DOCUMENTS = [
    {"title": "Paris", "text": "Paris is the capital and largest city of France."},
    {"title": "Tokyo", "text": "Tokyo is the capital of Japan."},
]

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
USER = {"role": "user", "content": "What is the capital of France?"}
ANSWER = {"role": "assistant", "content": "The capital of France is Paris."}
FOLLOW = {"role": "user", "content": "And of Japan?"}
SECOND_SYSTEM = {"role": "system", "content": "From now on, answer in one word."}
ASK = {"role": "user", "content": "Weather in São Paulo?"}
RESULT = {
    "role": "tool",
    "tool_call_id": TOOL_CALL_ID,
    "name": "get_weather",
    "content": '{"temperature": 21, "sky": "<clear>"}',
}
INTERJECT = {"role": "user", "content": "Actually, make it Lima."}
PREFILL = {"role": "assistant", "content": "The capital of France is"}
REASONING = "The user asks about France; its capital is Paris."
#: The second call of a parallel tool-call turn and its result (a nine-character id, as Mistral's templates want).
SECOND_CALL_ID = "f5G6h7J8k"
SECOND_RESULT = {
    "role": "tool",
    "tool_call_id": SECOND_CALL_ID,
    "name": "get_weather",
    "content": '{"temperature": 18, "sky": "<cloudy>"}',
}


def tool_call(content: Any) -> dict[str, Any]:
    """An assistant turn that calls get_weather, arguments as the JSON string the wire format carries."""
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {
                "id": TOOL_CALL_ID,
                "type": "function",
                "function": {"name": "get_weather", "arguments": json.dumps(TOOL_ARGUMENTS, ensure_ascii=False)},
            }
        ],
    }


def parallel_calls() -> dict[str, Any]:
    """An assistant turn (content null) calling get_weather twice at once (OpenAI's parallel tool calls)."""
    turn = tool_call(None)
    second = {
        "id": SECOND_CALL_ID,
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps({"city": "Lima"})},
    }
    return {**turn, "tool_calls": [*turn["tool_calls"], second]}


def reads_reasoning(template: str) -> bool:
    return any(word in template for word in ("reasoning_content", "thinking", "reasoning"))


def builtin_requests(template: str, name: str = "default") -> list[Request]:
    """The built-in set, as OpenAI-compatible clients send them; the ``reasoning`` request only when the template
    reads reasoning (``reasoning-only``, a null content, goes to every template), the thinking-off one only when it
    reads ``enable_thinking``. A named template gets what a stack selects it for: ``tool_use`` only requests that
    offer tools (transformers and llama.cpp's server pick it when tools are passed), ``rag`` the plain ones with
    ``documents``.

    The tool-call turn comes as the OpenAI SDKs replay it (``content: null``) and as other clients do
    (``content: ""``): TGI drops the calls of the second."""
    tools = [WEATHER_TOOL]
    out = [
        Request("system-user", [SYSTEM, USER]),
        Request("system-user-no-generation-prompt", [SYSTEM, USER], add_generation_prompt=False),
        Request("user-only", [USER]),
        Request("multi-turn", [SYSTEM, USER, ANSWER, FOLLOW]),
        Request("tools-offered", [SYSTEM, USER], tools=tools, required=False),
        Request("tool-call", [SYSTEM, ASK, tool_call(None), RESULT], tools=tools, required=False),
        Request("tool-call-empty-content", [SYSTEM, ASK, tool_call(""), RESULT], tools=tools, required=False),
        Request(
            "tool-call-multi-turn",
            [
                SYSTEM,
                ASK,
                tool_call(None),
                RESULT,
                {"role": "assistant", "content": "It is 21 °C and clear in São Paulo."},
                {"role": "user", "content": "And tomorrow?"},
            ],
            tools=tools,
            required=False,
        ),
        # chatlint's shapes: the assistant's text beside its call (Llama 3.1 drops it), two calls at once
        Request(
            "tool-call-with-content",
            [SYSTEM, ASK, tool_call("Let me check the weather."), RESULT],
            tools=tools,
            required=False,
        ),
        Request(
            "parallel-tool-calls", [SYSTEM, ASK, parallel_calls(), RESULT, SECOND_RESULT], tools=tools, required=False
        ),
        # chatlint's tool_then_user: the user speaks right after a tool result, before the assistant answers it (an
        # agent loop that lets the user interject). OpenAI's API takes the order, and so does the reference encoder of
        # the templates that refuse it (mistral_common's validator allows tool -> user): a refusal is no model limit
        Request(
            "tool-result-then-user",
            [SYSTEM, ASK, tool_call(None), RESULT, INTERJECT],
            tools=tools,
            required=False,
            extends="tool-call",
        ),
        Request("empty-content", [{"role": "user", "content": ""}], required=False),
        Request(
            "content-parts",
            [
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "Describe "}, {"type": "text", "text": "this in one line."}],
                }
            ],
            required=False,
        ),
        Request("long-non-ascii", [{"role": "user", "content": _LONG}]),
        # chatlint's multiple_system / system_midway: a second system message (frameworks prepend their own, agents
        # insert reminders); templates that keep only the first or the last one lose the other
        Request("system-midway", [SYSTEM, USER, ANSWER, SECOND_SYSTEM, FOLLOW], required=False),
        # chatlint's assistant_prefill: the client starts the answer and the stack continues it (only the stacks that
        # take the request: vLLM's continue_final_message, transformers', llama-server's prefill_assistant)
        Request(
            "assistant-prefill",
            [SYSTEM, USER, PREFILL],
            add_generation_prompt=False,
            required=False,
            continue_final_message=True,
        ),
    ]
    if reads_reasoning(template):
        out.append(Request("reasoning", [USER, {**ANSWER, "reasoning_content": REASONING}, FOLLOW], required=False))
    # a turn with reasoning and no content (content: null), as reasoning APIs return a cut-off answer and clients
    # replay it: sent to every template, since a template that reads no reasoning still meets the null content (the
    # stack's profile decides what reaches it: transformers drops the key, vLLM and llama.cpp write "", smg keeps null)
    out.append(
        Request(
            "reasoning-only",
            [USER, {"role": "assistant", "content": None, "reasoning_content": REASONING}, FOLLOW],
            required=False,
        )
    )
    if "enable_thinking" in template:
        out.append(
            Request(
                "thinking-off",
                [SYSTEM, USER, ANSWER, FOLLOW],
                required=False,
                chat_template_kwargs={"enable_thinking": False},
            )
        )
    if name == "tool_use":
        return [r for r in out if r.tools]
    if name == "rag":
        return [replace(r, documents=DOCUMENTS) for r in out if not r.tools]
    return out


def with_tools(requests: list[Request], tools: list[dict[str, Any]]) -> list[Request]:
    """``--tools``: the given tools replace the built-in ones and are offered to every request of a
    ``--messages`` file that brings none of its own."""
    return [replace(r, tools=tools) if r.origin == "built-in" or r.tools is None else r for r in requests]


def _check_messages(messages: Any, file: str, line: int | None, key: str) -> list[dict[str, Any]]:
    def bad(message: str, where: str) -> InputError:
        return InputError(message, file=file, line=line, key=where)

    if not isinstance(messages, list) or not messages:
        raise bad("expected a non-empty list of messages", key)
    if len(messages) > MAX_MESSAGES:
        raise bad(f"more than {MAX_MESSAGES} messages", key)
    for i, m in enumerate(messages):
        where = f"{key}[{i}]"
        if not isinstance(m, dict):
            raise bad("expected a message object with 'role'", where)
        if not isinstance(m.get("role"), str):
            raise bad("expected a string 'role'", f"{where}.role")
        content = m.get("content")
        if content is not None and not isinstance(content, (str, list)):
            raise bad("expected 'content' to be a string, a list of parts or null", f"{where}.content")
        calls = m.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            raise bad("expected 'tool_calls' to be a list", f"{where}.tool_calls")
    return messages


def _check_tools(tools: Any, file: str, line: int | None, key: str) -> list[dict[str, Any]]:
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise InputError("expected a list of tool objects", file=file, line=line, key=key)
    return tools


def _request(item: Any, file: str, line: int | None, key: str, index: int) -> Request:
    """A list of messages, or an object with ``messages`` and optional ``tools`` / ``add_generation_prompt`` /
    ``chat_template_kwargs``."""
    tools = None
    gen: Any = None
    kwargs: Any = {}
    if isinstance(item, dict):
        if "messages" not in item:
            raise InputError(
                "expected an object with 'messages' (or a list of messages)", file=file, line=line, key=key or None
            )
        messages = _check_messages(item["messages"], file, line, f"{key}.messages" if key else "messages")
        if item.get("tools") is not None:
            tools = _check_tools(item["tools"], file, line, f"{key}.tools" if key else "tools")
        gen = item.get("add_generation_prompt")
        if gen is not None and not isinstance(gen, bool):
            raise InputError(
                "expected true or false",
                file=file,
                line=line,
                key=f"{key}.add_generation_prompt" if key else "add_generation_prompt",
            )
        kwargs = item.get("chat_template_kwargs") or {}
        if not isinstance(kwargs, dict):
            raise InputError(
                "expected an object",
                file=file,
                line=line,
                key=f"{key}.chat_template_kwargs" if key else "chat_template_kwargs",
            )
    else:
        messages = _check_messages(item, file, line, key or "messages")
    if gen is None:
        gen = messages[-1].get("role") != "assistant"
    name = str(item.get("name")) if isinstance(item, dict) and item.get("name") else f"messages-{index + 1}"
    origin = f"{Path(file).name}:{line}" if line is not None else Path(file).name
    return Request(name, messages, add_generation_prompt=gen, tools=tools, origin=origin, chat_template_kwargs=kwargs)


def load_messages(path: Path) -> list[Request]:
    """``--messages FILE``: JSON (a message list, a list of them, or objects with messages/tools) or JSONL."""
    text = read_text(path)
    file = str(path)
    stripped = text.strip()
    if not stripped:
        raise InputError("the file holds no request", file=file)
    try:
        data = json.loads(stripped)
        jsonl = False
    except json.JSONDecodeError as whole:
        # JSONL when the first line is a JSON document by itself; else the error is the whole file's
        first = stripped.splitlines()[0]
        try:
            json.loads(first)
        except (json.JSONDecodeError, RecursionError):
            offset = len(text) - len(text.lstrip())
            error_line = text[:offset].count("\n") + whole.lineno
            raise InputError(f"invalid JSON: {whole.msg} (column {whole.colno})", file=file, line=error_line) from None
        data, jsonl = None, True
    except RecursionError:
        raise InputError("invalid JSON: nested too deeply", file=file) from None
    if jsonl:
        out: list[Request] = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", file=file, line=lineno) from None
            except RecursionError:
                raise InputError("invalid JSON: nested too deeply", file=file, line=lineno) from None
            out.append(_request(item, file, lineno, "", len(out)))
            if len(out) > MAX_CONVERSATIONS:
                raise InputError(f"more than {MAX_CONVERSATIONS} conversations", file=file, line=lineno)
        return out
    if isinstance(data, dict):
        return [_request(data, file, None, "", 0)]
    if isinstance(data, list) and data and all(isinstance(m, dict) and "role" in m for m in data):
        return [_request(data, file, None, "", 0)]
    if not isinstance(data, list) or not data:
        raise InputError("expected a list of messages, a list of conversations, or JSONL", file=file)
    if len(data) > MAX_CONVERSATIONS:
        raise InputError(f"more than {MAX_CONVERSATIONS} conversations", file=file)
    return [_request(item, file, None, f"[{i}]", i) for i, item in enumerate(data)]


def load_tools(path: Path) -> list[dict[str, Any]]:
    """``--tools FILE``: a JSON list of OpenAI-style tool definitions."""
    from tokaudit.artifacts.strict_json import read_json

    return _check_tools(read_json(path), str(path), None, "tools")
