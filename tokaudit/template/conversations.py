"""The conversations rendered through a template: the built-in set and ``--messages`` / ``--tools`` files."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tokaudit.artifacts.base import read_text
from tokaudit.errors import InputError

#: The assistant text used to find the header a template writes before an assistant turn (TA805).
SENTINEL = "TOKAUDIT_ASSISTANT_SENTINEL"

#: Most conversations a ``--messages`` file may hold, and most messages in one of them.
MAX_CONVERSATIONS = 1000
MAX_MESSAGES = 1000


@dataclass(frozen=True)
class Conversation:
    """One conversation a chat template is rendered with."""

    name: str
    messages: list[dict[str, Any]]
    add_generation_prompt: bool = True
    tools: list[dict[str, Any]] | None = None
    #: Every chat model must render it (a failure is an error); else an optional feature (a warning).
    required: bool = True
    #: Where it came from: "built-in" or "FILE:LINE".
    origin: str = "built-in"
    #: Variants of one feature share a group: the feature works when any of them renders.
    group: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def context(self, special_tokens: dict[str, str]) -> dict[str, Any]:
        """The variables transformers' apply_chat_template passes (fresh copies: templates may not share state)."""
        return {
            **special_tokens,
            "messages": alias_reasoning(copy.deepcopy(self.messages)),
            "tools": copy.deepcopy(self.tools),
            "documents": None,
            "add_generation_prompt": self.add_generation_prompt,
            **copy.deepcopy(self.extra),
        }


def alias_reasoning(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """transformers 5 passes a message's reasoning as ``reasoning_content`` and ``thinking`` whichever name it came in."""
    out = []
    for m in messages:
        reasoning = next((m[k] for k in ("reasoning_content", "thinking", "reasoning") if m.get(k) is not None), None)
        out.append({"thinking": reasoning, **m, "reasoning_content": reasoning} if reasoning is not None else m)
    return out


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city. Units are <celsius> or <fahrenheit>.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. \"São Paulo\""},
                "units": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}

#: Tool-call arguments with ``<``, quotes, non-ASCII and nesting: where tojson implementations differ.
TOOL_ARGUMENTS = {"city": "São Paulo <Centro>", "units": "celsius", "filter": {"quote": "it's \"fine\" & dry", "days": [1, 2]}}

_LONG = ("日本語のテキストと한국어 문장, ελληνικά, русский текст, emoji 🙂🚀 and ÀÉÎÕÜ. " * 40)[:2000]


#: What a RAG template (Command-R's named ``rag``) is given: transformers passes ``documents`` to it.
DOCUMENTS = [{"title": "Paris", "text": "Paris is the capital and largest city of France."},
             {"title": "Tokyo", "text": "Tokyo is the capital of Japan."}]


def builtin_conversations(template: str, name: str = "default") -> list[Conversation]:
    """The built-in set; the reasoning conversation only when the template reads reasoning. A named template
    gets what a stack selects it for: ``tool_use`` only conversations that offer tools (transformers and
    llama.cpp's server pick it when tools are passed), ``rag`` the plain ones with ``documents``."""
    system = {"role": "system", "content": "You are a helpful assistant."}
    user = {"role": "user", "content": "What is the capital of France?"}
    answer = {"role": "assistant", "content": "The capital of France is Paris."}
    follow = {"role": "user", "content": "And of Japan?"}
    def call(arguments: object, content: dict[str, Any]) -> dict[str, Any]:
        return {"role": "assistant", **content,
                "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": arguments}}]}

    ask = {"role": "user", "content": "Weather in São Paulo?"}
    result = {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": '{"temperature": 21, "sky": "<clear>"}'}
    convs = [
        Conversation("system-user", [system, user]),
        Conversation("system-user-no-generation-prompt", [system, user], add_generation_prompt=False),
        Conversation("user-only", [user]),
        Conversation("multi-turn", [system, user, answer, follow]),
        # arguments as an object with empty content (transformers' convention, Qwen) and as a JSON string with
        # null content (the OpenAI wire format, DeepSeek): a template that renders either form handles tool calls
        Conversation("tool-call", [system, ask, call(TOOL_ARGUMENTS, {"content": ""}), result], tools=[WEATHER_TOOL], required=False, group="tool-call"),
        Conversation("tool-call-json-arguments", [system, ask, call(json.dumps(TOOL_ARGUMENTS, ensure_ascii=False), {"content": None}), result],
                     tools=[WEATHER_TOOL], required=False, group="tool-call"),
        Conversation("tools-offered", [system, user], tools=[WEATHER_TOOL], required=False),
        Conversation("empty-content", [{"role": "user", "content": ""}], required=False),
        Conversation("content-parts", [{"role": "user", "content": [{"type": "text", "text": "Describe "},
                                                                     {"type": "text", "text": "this in one line."}]}],
                     required=False),
        Conversation("long-non-ascii", [{"role": "user", "content": _LONG}]),
    ]
    if any(word in template for word in ("reasoning_content", "thinking", "reasoning")):
        convs.append(Conversation(
            "reasoning", [user, {"role": "assistant", "content": "Paris.", "reasoning_content": "The user asks about France."}, follow],
            required=False))
    if name == "tool_use":
        return [c for c in convs if c.tools]
    if name == "rag":
        return [replace(c, extra={**c.extra, "documents": DOCUMENTS}) for c in convs if not c.tools]
    return convs


def with_tools(conversations: list[Conversation], tools: list[dict[str, Any]]) -> list[Conversation]:
    """``--tools``: the given tools replace the built-in ones and are offered to every conversation of a
    ``--messages`` file that brings none of its own."""
    return [replace(c, tools=tools) if c.origin == "built-in" or c.tools is None else c for c in conversations]


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


def _conversation(item: Any, file: str, line: int | None, key: str, index: int) -> Conversation:
    """A list of messages, or an object with ``messages`` and optional ``tools`` / ``add_generation_prompt``."""
    tools = None
    gen: Any = None
    if isinstance(item, dict):
        if "messages" not in item:
            raise InputError("expected an object with 'messages' (or a list of messages)", file=file, line=line, key=key or None)
        messages = _check_messages(item["messages"], file, line, f"{key}.messages" if key else "messages")
        if item.get("tools") is not None:
            tools = _check_tools(item["tools"], file, line, f"{key}.tools" if key else "tools")
        gen = item.get("add_generation_prompt")
        if gen is not None and not isinstance(gen, bool):
            raise InputError("expected true or false", file=file, line=line, key=f"{key}.add_generation_prompt" if key else "add_generation_prompt")
    else:
        messages = _check_messages(item, file, line, key or "messages")
    if gen is None:
        gen = messages[-1].get("role") != "assistant"
    name = str(item.get("name")) if isinstance(item, dict) and item.get("name") else f"messages-{index + 1}"
    origin = f"{Path(file).name}:{line}" if line is not None else Path(file).name
    return Conversation(name, messages, add_generation_prompt=gen, tools=tools, origin=origin)


def load_messages(path: Path) -> list[Conversation]:
    """``--messages FILE``: JSON (a message list, a list of them, or objects with messages/tools) or JSONL."""
    text = read_text(path)
    file = str(path)
    stripped = text.strip()
    if not stripped:
        raise InputError("the file holds no conversation", file=file)
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
            line = text[:offset].count("\n") + whole.lineno
            raise InputError(f"invalid JSON: {whole.msg} (column {whole.colno})", file=file, line=line) from None
        data, jsonl = None, True
    except RecursionError:
        raise InputError("invalid JSON: nested too deeply", file=file) from None
    if jsonl:
        out: list[Conversation] = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", file=file, line=lineno) from None
            except RecursionError:
                raise InputError("invalid JSON: nested too deeply", file=file, line=lineno) from None
            out.append(_conversation(item, file, lineno, "", len(out)))
            if len(out) > MAX_CONVERSATIONS:
                raise InputError(f"more than {MAX_CONVERSATIONS} conversations", file=file, line=lineno)
        return out
    if isinstance(data, dict):
        return [_conversation(data, file, None, "", 0)]
    if isinstance(data, list) and data and all(isinstance(m, dict) and "role" in m for m in data):
        return [_conversation(data, file, None, "", 0)]
    if not isinstance(data, list) or not data:
        raise InputError("expected a list of messages, a list of conversations, or JSONL", file=file)
    if len(data) > MAX_CONVERSATIONS:
        raise InputError(f"more than {MAX_CONVERSATIONS} conversations", file=file)
    return [_conversation(item, file, None, f"[{i}]", i) for i, item in enumerate(data)]


def load_tools(path: Path) -> list[dict[str, Any]]:
    """``--tools FILE``: a JSON list of OpenAI-style tool definitions."""
    from tokaudit.artifacts.base import read_json

    return _check_tools(read_json(path), str(path), None, "tools")
