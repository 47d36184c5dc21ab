"""The JSON tool-call grammars: a call is a JSON object (name and arguments) between markers (Hermes'
``<tool_call>``, Llama 3's bare JSON, Mistral's ``[TOOL_CALLS]``, DeepSeek's and Kimi K2's separators, gpt-oss's harmony
recipient, TGI's function object, the JSON blocks of other templates)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from tokaudit.parsers.calls import (
    JSON_DECODER,
    MAX_CALLS,
    Call,
    Parsed,
    content_or_none,
    json_objects,
    loads_json,
    named_call,
)


def json_tags(text: str, markers: Sequence[str], tools: Any = None) -> Parsed:
    """``START {"name": N, "arguments": {...}} END``, repeated (hermes, qwen25). An unclosed last block runs
    to the end of the text."""
    start, end = markers[0], markers[1]
    first = text.find(start)
    if first < 0:
        return Parsed(content=content_or_none(text))
    calls: list[Call] = []
    pos = first
    while pos >= 0 and len(calls) < MAX_CALLS:
        body_start = pos + len(start)
        stop = text.find(end, body_start)
        body = text[body_start:stop] if stop >= 0 else text[body_start:]
        ok, obj = loads_json(body.strip())
        if not ok or not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            return Parsed(content=content_or_none(text), error=f"the text after {start} is not a JSON call")
        args = obj.get("arguments", obj.get("parameters", {}))
        if isinstance(args, str):
            ok, args = loads_json(args)
            if not ok:
                return Parsed(content=content_or_none(text), error="arguments are a string that is not JSON")
        calls.append(Call(obj["name"], args))
        if stop < 0:
            break
        pos = text.find(start, stop + len(end))
    return Parsed(tuple(calls), content_or_none(text[:first]))


def bare_json(text: str, markers: Sequence[str], tools: Any = None) -> Parsed:
    """``[PREFIX] {"name": N, "parameters": {...}}; {...}`` (Llama 3.x JSON): the output starts with the prefix
    marker or with a JSON object whose keys are name and parameters/arguments."""
    prefix = markers[0] if markers else ""
    stripped = text.lstrip()
    at = len(text) - len(stripped)
    if prefix and stripped.startswith(prefix):
        at += len(prefix)
    elif not stripped.startswith("{"):
        return Parsed(content=content_or_none(text))
    objs, _, error = json_objects(text, at)
    calls = [named_call(o) for o in objs]
    if not calls or any(c is None for c in calls):
        return Parsed(content=content_or_none(text), error=error or "no JSON object with name and parameters")
    return Parsed(tuple(c for c in calls if c is not None), None)


def json_array(text: str, markers: Sequence[str], tools: Any = None) -> Parsed:
    """``PREFIX [{"name": N, "arguments": {...}}, ...]`` (Granite 3.x, Mistral's v3 format, functionary-style)."""
    prefix = markers[0]
    first = text.find(prefix)
    if first < 0:
        return Parsed(content=content_or_none(text))
    rest = text[first + len(prefix) :].lstrip()
    try:
        value, _ = JSON_DECODER.raw_decode(rest)
    except (ValueError, RecursionError) as exc:
        return Parsed(content=content_or_none(text), error=f"the text after {prefix} is not JSON: {exc}")
    items = value if isinstance(value, list) else [value]
    calls = [named_call(o) for o in items[:MAX_CALLS]]
    if not calls or any(c is None for c in calls):
        return Parsed(content=content_or_none(text), error="a call without name and arguments")
    return Parsed(tuple(c for c in calls if c is not None), content_or_none(text[:first].rstrip()))


def name_args(text: str, markers: Sequence[str], tools: Any = None) -> Parsed:
    """``[TOOL_CALLS]N[ARGS]{...}`` repeated (Mistral v11+); an older ``[TOOL_CALLS][{...}]`` array is read too (a
    ``[CALL_ID]`` before ``[ARGS]`` stays in the name, as vLLM 0.33's parser leaves it)."""
    start, args_marker = markers[0], markers[1]
    first = text.find(start)
    if first < 0:
        return Parsed(content=content_or_none(text))
    calls: list[Call] = []
    pos = first
    while pos >= 0 and len(calls) < MAX_CALLS:
        body = pos + len(start)
        nxt = text.find(start, body)
        chunk = text[body : nxt if nxt >= 0 else len(text)]
        a = chunk.find(args_marker)
        if a < 0:
            array = json_array(chunk, ("",))
            if not array.calls:
                return Parsed(content=content_or_none(text), error=f"no {args_marker} after {start}")
            calls.extend(array.calls)
        else:
            name = chunk[:a].strip()
            try:
                value, _ = JSON_DECODER.raw_decode(chunk[a + len(args_marker) :].lstrip())
            except (ValueError, RecursionError) as exc:
                return Parsed(content=content_or_none(text), error=f"arguments are not JSON: {exc}")
            calls.append(Call(name, value))
        pos = nxt
    return Parsed(tuple(calls), content_or_none(text[:first]))


def sep_fenced(text: str, markers: Sequence[str], tools: Any = None) -> Parsed:
    """DeepSeek V3: ``CALLS_BEGIN CALL_BEGIN function SEP N\\n```json\\n{...}\\n``` CALL_END ... CALLS_END``.
    Markers: calls begin, calls end, call begin, call end, sep."""
    return _deepseek(text, markers, fenced=True)


def sep_json(text: str, markers: Sequence[str], tools: Any = None) -> Parsed:
    """DeepSeek V3.1: ``CALLS_BEGIN CALL_BEGIN N SEP {...} CALL_END ... CALLS_END``."""
    return _deepseek(text, markers, fenced=False)


def _deepseek(text: str, markers: Sequence[str], fenced: bool) -> Parsed:
    calls_begin, _calls_end, call_begin, call_end, sep = markers[:5]
    first = text.find(calls_begin)
    if first < 0:
        return Parsed(content=content_or_none(text))
    calls: list[Call] = []
    pos = text.find(call_begin, first)
    while pos >= 0 and len(calls) < MAX_CALLS:
        stop = text.find(call_end, pos)
        if stop < 0:
            break
        block = text[pos + len(call_begin) : stop]
        s = block.find(sep)
        if s < 0:
            return Parsed(content=content_or_none(text), error=f"no {sep} in a call")
        if fenced:
            kind, rest = block[:s], block[s + len(sep) :]
            m = re.match(r"([^\n]*)\n```(?:json)?\n(.*)\n```\s*$", rest, re.S)
            if kind.strip() != "function" or m is None:
                return Parsed(content=content_or_none(text), error="not the function<sep>NAME + json fence layout")
            name, raw = m.group(1).strip(), m.group(2)
        else:
            name, raw = block[:s].strip(), block[s + len(sep) :]
        ok, args = loads_json(raw)
        if not ok:
            return Parsed(content=content_or_none(text), error="arguments are not JSON")
        calls.append(Call(name, args))
        pos = text.find(call_begin, stop + len(call_end))
    if not calls:
        return Parsed(content=content_or_none(text), error=f"no complete call after {calls_begin}")
    return Parsed(tuple(calls), content_or_none(text[:first]))


_KIMI_ID = re.compile(r"^\s*(?:functions\.)?(?P<name>[^:\s]+?)(?::\d+)?\s*$", re.S)


def section_calls(text: str, markers: Sequence[str], tools: Any = None) -> Parsed:
    """Kimi K2: ``SECTION_BEGIN CALL_BEGIN functions.N:I ARG_BEGIN {...} CALL_END ... SECTION_END``.
    Markers: section begin, section end, call begin, argument begin, call end."""
    section, _section_end, call_begin, arg_begin, call_end = markers[:5]
    first = text.find(section)
    if first < 0:
        return Parsed(content=content_or_none(text))
    calls: list[Call] = []
    pos = text.find(call_begin, first)
    while pos >= 0 and len(calls) < MAX_CALLS:
        a = text.find(arg_begin, pos)
        stop = text.find(call_end, a if a >= 0 else pos)
        if a < 0 or stop < 0:
            break
        m = _KIMI_ID.match(text[pos + len(call_begin) : a])
        ok, args = loads_json(text[a + len(arg_begin) : stop])
        if m is None or not ok:
            return Parsed(content=content_or_none(text), error="a call whose id or arguments do not parse")
        calls.append(Call(m.group("name"), args))
        pos = text.find(call_begin, stop + len(call_end))
    if not calls:
        return Parsed(content=content_or_none(text), error=f"no complete call after {section}")
    return Parsed(tuple(calls), content_or_none(text[:first]))


_HARMONY_CALL = re.compile(r"to=functions\.([\w.\-]+)")


def harmony(text: str, markers: Sequence[str], tools: Any = None) -> Parsed:
    """gpt-oss (harmony): a message addressed ``to=functions.N`` whose body after MESSAGE runs to CALL (or the
    end). Markers: message, call, and the channel the recipient must follow (empty: anywhere in the header)."""
    message, call_marker = markers[0], markers[1]
    after = markers[2] if len(markers) > 2 else ""
    calls: list[Call] = []
    content_end = None
    pos = 0
    while len(calls) < MAX_CALLS:
        m = _HARMONY_CALL.search(text, pos)
        if m is None:
            break
        if after and text.rfind(after, 0, m.start()) < max(
            text.rfind(message, 0, m.start()), text.rfind(call_marker, 0, m.start()), 0
        ):
            pos = m.end()
            continue
        body = text.find(message, m.end())
        if body < 0:
            break
        stop = text.find(call_marker, body)
        raw = text[body + len(message) : stop if stop >= 0 else len(text)]
        ok, args = loads_json(raw.strip())
        if not ok:
            return Parsed(content=content_or_none(text), error="arguments are not JSON")
        if content_end is None:
            content_end = m.start()
        calls.append(Call(m.group(1), args))
        pos = body if stop < 0 else stop
    if not calls:
        return Parsed(content=content_or_none(text))
    return Parsed(tuple(calls), None)


def json_block(text: str, markers: Sequence[str], tools: Any = None, at_start: bool = False) -> Parsed:
    """``START <JSON> END``: one call object or an array of them, each ``{"name", "arguments"|"parameters"}``,
    Cohere's ``{"tool_name", "parameters"}`` or Apertus' ``{NAME: {arguments}}`` (Command R7B / A, GigaChat 3,
    Apertus). Markers: start, end (an unclosed block runs to the end of the text). ``at_start``: the block must open
    the output (GigaChat 3's parsers: a separator before it leaves the call as content)."""
    start, end = markers[0], markers[1]
    first = text.find(start)
    if first < 0 or (at_start and text[:first].strip()):
        return Parsed(content=content_or_none(text))
    body = text[first + len(start) :]
    stop = body.find(end) if end else -1
    body = (body if stop < 0 else body[:stop]).strip()
    ok, value = loads_json(body)
    if not ok:
        return Parsed(content=content_or_none(text), error=f"the text after {start} is not JSON")
    items = value if isinstance(value, list) else [value]
    calls = []
    for item in items[:MAX_CALLS]:
        call = named_call(item)
        if call is None and isinstance(item, dict) and len(item) == 1:  # {NAME: {arguments}}
            name, args = next(iter(item.items()))
            call = Call(name, args) if isinstance(args, dict) else None
        if call is None:
            return Parsed(content=content_or_none(text), error="a call without name and arguments")
        calls.append(call)
    return Parsed(tuple(calls), content_or_none(text[:first].strip()))


def tgi_json(text: str, markers: Sequence[str], tools: Any = None) -> Parsed:
    """TGI's grammar-held output: ``{"function": {"_name": N, ...arguments}}`` (router/src/chat.rs); ``no_tool``
    is its answer without a call (content)."""
    ok, value = loads_json(text.strip())
    fn = value.get("function") if ok and isinstance(value, dict) else None
    if not isinstance(fn, dict) or not isinstance(fn.get("_name"), str):
        return Parsed(
            content=content_or_none(text), error=None if not text.strip().startswith("{") else "not TGI's function JSON"
        )
    args = {k: v for k, v in fn.items() if k != "_name"}
    if fn["_name"] == "no_tool":
        return Parsed(content=content_or_none(str(args.get("content", ""))))
    return Parsed((Call(fn["_name"], args),), None)
