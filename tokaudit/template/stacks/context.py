"""A request turned into a template's variables the way one stack does it: a pure function of plain data (the
request's JSON, the template's facts, the special tokens' texts) returning plain data (JSON values only), so
the engine call needs no live Python object and can run in another process.

:func:`build_context` interprets a profile's :class:`~tokaudit.template.stacks.profile.RequestRules`; the rules
say which stack does what, and the profile modules say from which source.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tokaudit.template.stacks.facts import TemplateFacts
from tokaudit.template.stacks.profile import RequestRules

#: The date mistral.rs passes as ``date_string`` (its clock; tokaudit's fixed instant, as ``strftime_now``).
FIXED_DATE = datetime(2026, 1, 15, 12, 0, 0)

#: TGI's default tool prompt (router/src/lib.rs:1071-1073 @db931fc), appended to the last message.
TGI_TOOL_PROMPT = (
    "\nGiven the functions available, please respond with a JSON for a function call with its proper arguments "
    "that best answers the given prompt. Respond in the format {name: function name, parameters: dictionary "
    "of argument name and its value}.Do not use variables.\n"
)

#: TGI's ``no_tool`` function (router/src/infer/tool_grammar.rs:29-53), offered with tool_choice auto.
TGI_NO_TOOL = {
    "type": "function",
    "function": {
        "description": "Open ended response with no specific tool selected",
        "name": "no_tool",
        "arguments": '{"type":"object"}',
    },
}

#: mistral.rs puts these JSON-schema keys of a tool's parameters first (chat_template.rs:527-528).
_MISTRALRS_KEY_ORDER = ("type", "properties", "required", "additionalProperties")

_REASONING_NAMES = ("reasoning_content", "thinking", "reasoning")


@dataclass(frozen=True)
class Refused:
    """The stack refuses the request before rendering (a 400 to the client)."""

    reason: str


class _Refuse(Exception):
    pass


def build_context(
    rules: RequestRules,
    request: dict[str, Any],
    facts: TemplateFacts,
    special: dict[str, str],
    *,
    add_generation_prompt: bool | None = None,
    reply: bool = False,
    tail: bool = True,
) -> dict[str, Any] | Refused:
    """The variables the stack renders ``request`` (``Request.to_json()``) with. ``add_generation_prompt``
    overrides the request's, and ``reply`` says the last message is the model's own reply, not part of a request
    (the probes of TA805 and TA807 render turns no client sends: what the stack adds to a request's last message
    goes to the message before the reply). ``tail=False`` leaves out what the stack appends to the last message
    whatever the template (TGI's tool prompt: TA807 judges the template, and that prompt moves with every turn)."""
    try:  # every container the context holds is built anew or only read (the engines never write to it)
        return _build(rules, request, facts, special, add_generation_prompt, reply, tail)
    except _Refuse as exc:
        return Refused(str(exc))


def _build(
    rules: RequestRules,
    request: dict[str, Any],
    facts: TemplateFacts,
    special: dict[str, str],
    generation: bool | None,
    reply: bool,
    tail: bool,
) -> dict[str, Any]:
    fmt = facts.sglang_format if rules.content_format == "sglang" else facts.vllm_format
    messages = [_message(m, rules, fmt) for m in request["messages"]]
    tools = request.get("tools")
    ctx: dict[str, Any] = {}
    for name in rules.special_tokens:
        if name in special:
            ctx[name] = special[name]
        elif rules.missing_special_token == "none":
            ctx[name] = None
    if tools:
        tools = _tools(tools, rules.tool_schema)
        if rules.tool_schema == "tgi" and tail:
            _append_tool_prompt(
                messages[:-1] if reply else messages, tools, facts.variables is None or "tools" in facts.variables
            )
    if tools:
        ctx["tools"] = tools
    elif rules.tools_when_absent == "none":
        ctx["tools"] = None
    if rules.documents:
        ctx["documents"] = request.get("documents")
    kwargs = request.get("chat_template_kwargs") or {}
    if rules.chat_template_kwargs == "thinking":
        kwargs = {k: v for k, v in kwargs.items() if k in ("enable_thinking", "reasoning_effort")}
    elif rules.chat_template_kwargs == "none":
        kwargs = {}
    for key, value in rules.fixed:
        ctx[key] = FIXED_DATE.strftime(str(value)) if key == "date_string" else value
    if "enable_thinking" in kwargs and any(k == "enable_thinking" for k, _ in rules.fixed):
        ctx["enable_thinking"] = kwargs.pop("enable_thinking")
    ctx["messages"] = messages
    ctx["add_generation_prompt"] = request.get("add_generation_prompt", True) if generation is None else generation
    ctx.update(kwargs)
    return ctx


def _message(m: dict[str, Any], rules: RequestRules, fmt: str) -> dict[str, Any]:
    role = m.get("role")
    out: dict[str, Any] = {"role": role}
    if rules.extra_message_keys:
        out.update(
            {
                k: v
                for k, v in m.items()
                if k not in ("role", "content", "tool_calls", "name", "tool_call_id", *_REASONING_NAMES)
            }
        )
    calls = m.get("tool_calls") if role == "assistant" and isinstance(m.get("tool_calls"), list) else None
    content = m.get("content")
    present = True
    if content is None:  # null and absent alike: every stack deserializes an optional content
        content = _null_content(rules.null_content, fmt)
        present = content is not _ABSENT
    elif isinstance(content, list):
        content = _parts(content, rules.parts, fmt, role)
    elif isinstance(content, str) and rules.parts == "vllm" and fmt == "openai" and role != "tool":
        content = [{"type": "text", "text": content}]
    if rules.tool_calls == "tgi" and calls:
        # TGI: a message body is either content or tool_calls (an untagged enum, content first): with content
        # null the calls are serialized into the content, with any other content they are dropped
        if m.get("content") is None:
            content, present = json.dumps(_tgi_calls(calls), ensure_ascii=False, separators=(",", ":")), True
        calls = None
    if present:
        out["content"] = content
    if role == "tool" and rules.tool_call_id and m.get("tool_call_id") is not None:
        out["tool_call_id"] = m["tool_call_id"]
    if calls:
        out["tool_calls"] = [_call(c, rules.arguments) for c in calls]
    _reasoning(m, out, rules.reasoning)
    if m.get("name") is not None and role in rules.name_roles:
        out["name"] = m["name"]
    if rules.drop_none_keys:
        out = {k: v for k, v in out.items() if v is not None}
    if rules.reasoning in ("aliases", "vllm"):  # transformers 5.24 (vLLM renders through it)
        reasoning = next((out[k] for k in _REASONING_NAMES if out.get(k) is not None), None)
        if reasoning is not None:
            out = {"thinking": reasoning, **out, "reasoning_content": reasoning}
    return out


_ABSENT = object()


def _null_content(rule: str, fmt: str) -> Any:
    if rule == "empty-string":
        return ""
    if rule == "by-format":
        return [] if fmt == "openai" else ""
    if rule == "drop":
        return _ABSENT
    return None


def _texts(parts: list[Any]) -> list[str]:
    out = []
    for p in parts:
        if isinstance(p, str):
            out.append(p)
        elif isinstance(p, dict) and p.get("type") in ("text", "input_text") and isinstance(p.get("text"), str):
            out.append(p["text"])
    return out


def _parts(parts: list[Any], rule: str, fmt: str, role: Any) -> Any:
    texts = _texts(parts)
    if rule == "raw":
        return parts
    if rule == "vllm":  # a tool result's text parts are joined back into a string, as for string-format templates
        return [{"type": "text", "text": t} for t in texts] if fmt == "openai" and role != "tool" else "\n".join(texts)
    if rule == "sglang":
        if role == "tool" and fmt == "string":
            return " ".join(texts)
        return [{"type": "text", "text": t} for t in texts] if fmt == "openai" else " ".join(texts)
    if rule == "smg":
        return parts if fmt == "openai" else ("\n".join(texts) if texts else parts)
    if rule == "join-newline":
        text_only = bool(parts) and all(isinstance(p, dict) and p.get("type") == "text" for p in parts)
        return "\n".join(texts) if text_only else parts
    if rule == "one-part-space":
        if role != "user":
            raise _Refuse(f"Role for an image message must be `user`, but it is {role}")
        return [{"type": "text", "text": " ".join(texts)}]
    if rule == "join-empty":
        return "".join(texts)
    raise ValueError(f"unknown parts rule {rule!r}")


def _call(call: Any, rule: str) -> Any:
    if not isinstance(call, dict):
        return call
    call = dict(call)
    function = call.get("function")
    if isinstance(function, dict):
        function = dict(function)
        args = function.get("arguments")
        if isinstance(args, str) and rule != "as-sent":
            try:
                parsed = json.loads(args)
            except ValueError:
                if rule in ("dict", "object"):
                    raise _Refuse(f"Failed to parse tool call arguments as JSON: {args!r}") from None
                parsed = args
            if rule == "object-if-parses" and not isinstance(parsed, dict):
                parsed = args
            if rule == "object" and not isinstance(parsed, dict):
                raise _Refuse("Assistant tool call function.arguments must be a JSON object.")
            function["arguments"] = parsed
        call["function"] = function
    return call


def _reasoning(m: dict[str, Any], out: dict[str, Any], rule: str) -> None:
    if m.get("role") != "assistant" or rule == "drop":
        return
    if rule == "vllm":
        if m.get("reasoning") is not None:
            out["reasoning"] = m["reasoning"]
            out["reasoning_content"] = m["reasoning"]
        return
    if rule == "aliases":
        for name in _REASONING_NAMES:
            if name in m:
                out[name] = m[name]
        return
    if "reasoning_content" in m:
        out["reasoning_content"] = m["reasoning_content"]


def _tgi_calls(calls: list[Any]) -> list[Any]:
    """TGI's ToolCall serialized: FunctionDefinition {description, name, arguments} with the arguments value
    serialized to a string (router/src/lib.rs:1178-1192, 1213-1218): a JSON-string argument is encoded twice."""
    out = []
    for c in calls:
        f = c.get("function") if isinstance(c, dict) else None
        f = f if isinstance(f, dict) else {}
        out.append(
            {
                "id": c.get("id", "") if isinstance(c, dict) else "",
                "type": c.get("type", "function") if isinstance(c, dict) else "function",
                "function": {
                    "description": f.get("description"),
                    "name": f.get("name"),
                    "arguments": json.dumps(f.get("arguments"), ensure_ascii=False, separators=(",", ":")),
                },
            }
        )
    return out


def _tools(tools: list[Any], rule: str) -> list[Any]:
    if rule == "as-sent":
        return tools
    out = []
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict):
            out.append(tool)
            continue
        if rule == "tgi":
            params = function.get("parameters", function.get("arguments"))
            out.append(
                {
                    "type": tool.get("type", "function"),
                    "function": {
                        "description": function.get("description"),
                        "name": function.get("name"),
                        "arguments": json.dumps(params, ensure_ascii=False, separators=(",", ":")),
                    },
                }
            )
        elif rule == "mistral.rs":
            rebuilt: dict[str, Any] = {"name": function.get("name")}
            if function.get("description") is not None:
                rebuilt["description"] = function["description"]
            params = function.get("parameters")
            if isinstance(params, dict):
                order = {k: i for i, k in enumerate(_MISTRALRS_KEY_ORDER)}
                keys = sorted(params, key=lambda k: (order.get(k, len(order)), k))
                rebuilt["parameters"] = {k: params[k] for k in keys}
            if function.get("strict") is not None:
                rebuilt["strict"] = function["strict"]
            out.append({"type": tool.get("type", "function"), "function": rebuilt})
        elif rule == "dynamo":
            params = function.get("parameters")
            if isinstance(params, dict):
                params = dict(params)
                params.setdefault("type", "object")
                params.setdefault("properties", {})
                function = {**function, "parameters": params}
            out.append({**tool, "function": function})
        else:
            raise ValueError(f"unknown tool schema rule {rule!r}")
    if rule == "tgi":
        out.append(TGI_NO_TOOL)
    return out


def _append_tool_prompt(messages: list[dict[str, Any]], tools: list[Any], reads_tools: bool) -> None:
    """TGI appends ``"\\n---\\n" + tool prompt`` to the last message's content when the template reads ``tools``,
    else the tools' JSON and the prompt (router/src/infer/chat_template.rs:84-103; the chunks are joined with ""
    by the TextMessage conversion)."""
    if messages and isinstance(messages[-1].get("content"), str):
        text = (
            TGI_TOOL_PROMPT
            if reads_tools
            else json.dumps(tools, ensure_ascii=False, separators=(",", ":")) + "\n" + TGI_TOOL_PROMPT
        )
        messages[-1]["content"] += "\n---\n" + text


def prune(context: dict[str, Any], variables: frozenset[str] | None) -> dict[str, Any]:
    """The context without the variables the template never reads (they cannot change its output): contexts
    that differ only there render alike, and are rendered once."""
    if variables is None:
        return context
    return {k: v for k, v in context.items() if k in variables}


def context_key(context: dict[str, Any]) -> str:
    """A canonical text of a context (dict key order kept: it is visible to templates)."""
    return json.dumps(context, ensure_ascii=False, default=repr)
