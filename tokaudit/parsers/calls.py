"""A tool call as the grammars recover it (:class:`Call`, :class:`Parsed`), and the readers of values they share:
JSON, Python literals, and text typed by the tool's JSON schema."""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

#: Most calls one output may hold (a budget: real outputs hold a handful).
MAX_CALLS = 64


@dataclass(frozen=True)
class Call:
    """One recovered tool call: its name and its arguments as a JSON value."""

    name: str
    arguments: Any


@dataclass(frozen=True)
class Parsed:
    """What a tool parser returns for one output: the calls, and the text it gives back as content."""

    calls: tuple[Call, ...] = ()
    content: str | None = None
    #: why a call the text starts was not recovered (a JSON error, a missing name), or None
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def loads_json(text: str) -> tuple[bool, Any]:
    """(True, the JSON value) or (False, None) when the text is not JSON."""
    try:
        return True, json.loads(text)
    except (ValueError, RecursionError):
        return False, None


def content_or_none(text: str) -> str | None:
    """The text left as content, None when there is none."""
    return text if text else None


def typed_value(value: str, name: str, schema: dict[str, Any] | None) -> Any:
    """A parameter value written as text, converted by the tool's JSON schema (string stays text, anything
    else is read as JSON when it parses), as the XML-style parsers do."""
    kind = None
    if schema is not None:
        prop = (schema.get("properties") or {}).get(name)
        if isinstance(prop, dict):
            kind = prop.get("type")
    if kind == "string" or (isinstance(kind, list) and "string" in kind):
        return value
    ok, parsed = loads_json(value)
    if ok:
        return parsed
    if kind is None or kind == "object" or kind == "array":
        try:  # Python literals, as the stacks' fallback (ast.literal_eval) reads them
            return ast.literal_eval(value)
        except (ValueError, SyntaxError, RecursionError, MemoryError, TypeError):
            return value
    return value


def schema_of(tools: Sequence[dict[str, Any]] | None, name: str) -> dict[str, Any] | None:
    """The JSON schema of the tool named ``name`` among the request's tools, or None."""
    for tool in tools or ():
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict) and fn.get("name") == name:
            params = fn.get("parameters")
            return params if isinstance(params, dict) else None
    return None


def trim_newline(value: str) -> str:
    """A value without the one newline its tags put on each side."""
    if value.startswith("\n"):
        value = value[1:]
    if value.endswith("\n"):
        value = value[:-1]
    return value


JSON_DECODER = json.JSONDecoder()


def json_objects(text: str, at: int) -> tuple[list[Any], int, str | None]:
    """JSON values from ``at`` on, separated by ``;`` or ``,`` and whitespace; the end offset."""
    out: list[Any] = []
    pos = at
    while pos < len(text) and len(out) < MAX_CALLS:
        while pos < len(text) and text[pos] in " \t\r\n;,":
            pos += 1
        if pos >= len(text) or text[pos] != "{":
            break
        try:
            value, pos = JSON_DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError) as exc:
            return out, pos, str(exc)
        out.append(value)
    return out, pos, None


def named_call(obj: Any) -> Call | None:
    """A JSON object with a name and arguments (or parameters) as a call, or None."""
    if isinstance(obj, dict) and isinstance(obj.get("tool_name"), str) and "name" not in obj:  # Cohere's keys
        obj = {"name": obj["tool_name"], "parameters": obj.get("parameters")}
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return None
    args = obj.get("arguments", obj.get("parameters"))
    if args is None:
        return None
    if isinstance(args, str):
        ok, args = loads_json(args)
        if not ok:
            return None
    return Call(obj["name"], args)


def loose_value(raw: str) -> Any:
    """A value as the lenient parsers read it: a quoted string, else JSON, else a Python literal, else the text."""
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    ok, value = loads_json(raw)
    if ok:
        return value
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError, RecursionError, MemoryError, TypeError):
        return raw
