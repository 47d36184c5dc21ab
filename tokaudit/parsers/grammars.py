"""The tool-call syntaxes serving stacks parse, as small grammars over decoded text.

Each grammar takes the text a tool parser sees (after the reasoning parser took its part) and returns
the calls it recovers and the content left over, the way the stacks' parsers do when the text is whole
(non-streaming). Markers come from the parser's row in :mod:`tokaudit.parsers.families`, so one grammar
serves every parser that shares a syntax under other marker spellings. Arguments come back as JSON
values: a call whose arguments do not parse is not recovered (the stacks drop it or return the text).
Every loop is bounded by the text's length.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Sequence
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


def _loads(text: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(text)
    except (ValueError, RecursionError):
        return False, None


def _content(text: str) -> str | None:
    return text if text else None


def _typed(value: str, name: str, schema: dict[str, Any] | None) -> Any:
    """A parameter value written as text, converted by the tool's JSON schema (string stays text, anything
    else is read as JSON when it parses), as the XML-style parsers do."""
    kind = None
    if schema is not None:
        prop = (schema.get("properties") or {}).get(name)
        if isinstance(prop, dict):
            kind = prop.get("type")
    if kind == "string" or (isinstance(kind, list) and "string" in kind):
        return value
    ok, parsed = _loads(value)
    if ok:
        return parsed
    if kind is None or kind == "object" or kind == "array":
        try:  # Python literals, as the stacks' fallback (ast.literal_eval) reads them
            return ast.literal_eval(value)
        except (ValueError, SyntaxError, RecursionError, MemoryError, TypeError):
            return value
    return value


def schema_of(tools: Sequence[dict[str, Any]] | None, name: str) -> dict[str, Any] | None:
    for tool in tools or ():
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict) and fn.get("name") == name:
            params = fn.get("parameters")
            return params if isinstance(params, dict) else None
    return None


def json_tags(text: str, markers: Sequence[str], tools: Any = None) -> Parsed:
    """``START {"name": N, "arguments": {...}} END``, repeated (hermes, qwen25). An unclosed last block runs
    to the end of the text."""
    start, end = markers[0], markers[1]
    first = text.find(start)
    if first < 0:
        return Parsed(content=_content(text))
    calls: list[Call] = []
    pos = first
    while pos >= 0 and len(calls) < MAX_CALLS:
        body_start = pos + len(start)
        stop = text.find(end, body_start)
        body = text[body_start:stop] if stop >= 0 else text[body_start:]
        ok, obj = _loads(body.strip())
        if not ok or not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            return Parsed(content=_content(text), error=f"the text after {start} is not a JSON call")
        args = obj.get("arguments", obj.get("parameters", {}))
        if isinstance(args, str):
            ok, args = _loads(args)
            if not ok:
                return Parsed(content=_content(text), error="arguments are a string that is not JSON")
        calls.append(Call(obj["name"], args))
        if stop < 0:
            break
        pos = text.find(start, stop + len(end))
    return Parsed(tuple(calls), _content(text[:first]))


_XML_FUNCTION = re.compile(r"<function=([^>\n]+)>(.*?)(?:</function>|$)", re.S)
_XML_PARAM = re.compile(r"<parameter=([^>\n]+)>(.*?)(?:</parameter>|(?=<parameter=)|(?=</function>)|$)", re.S)


def _trim_newline(value: str) -> str:
    if value.startswith("\n"):
        value = value[1:]
    if value.endswith("\n"):
        value = value[:-1]
    return value


def xml_function(text: str, markers: Sequence[str], tools: Any = None) -> Parsed:
    """``START <function=N> <parameter=K>V</parameter>... </function> END`` (qwen3_coder, qwen3_xml, seed_oss).
    Values are text, typed by the tool's schema."""
    start, end = markers[0], markers[1]
    first = text.find(start)
    if first < 0:
        return Parsed(content=_content(text))
    calls: list[Call] = []
    pos = first
    while pos >= 0 and len(calls) < MAX_CALLS:
        stop = text.find(end, pos)
        # a parser whose start marker is <function= itself reads the block from the marker on
        block = text[
            pos + (0 if start.startswith("<function=") else len(start)) : stop + len(end) if stop >= 0 else len(text)
        ]
        m = _XML_FUNCTION.search(block)
        if m is None:
            return Parsed(content=_content(text), error=f"no <function=...> after {start}")
        name = m.group(1).strip()
        schema = schema_of(tools, name)
        args = {
            p.group(1).strip(): _typed(_trim_newline(p.group(2)), p.group(1).strip(), schema)
            for p in _XML_PARAM.finditer(m.group(2))
        }
        calls.append(Call(name, args))
        if stop < 0:
            break
        pos = text.find(start, stop + len(end))
    return Parsed(tuple(calls), _content(text[:first]))


def invoke(text: str, markers: Sequence[str], tools: Any = None) -> Parsed:
    """``START <invoke name="N"><parameter name="K">V</parameter>...</invoke> END`` (MiniMax-M2; DeepSeek V3.2's
    DSML when the markers carry its prefix). The markers are: start, end, invoke opener, invoke closer,
    parameter opener, parameter closer."""
    start, end, inv, inv_end, par, par_end = markers[:6]
    first = text.find(start)
    if first < 0:
        return Parsed(content=_content(text))
    inv_re = re.compile(re.escape(inv) + r"\s*[\"']?([^\"'>]+)[\"']?\s*>(.*?)(?:" + re.escape(inv_end) + "|$)", re.S)
    par_re = re.compile(
        re.escape(par) + r"\s*[\"']?([^\"'>]+)[\"']?((?:\s+\w+=\"[^\"]*\")*)\s*>(.*?)(?:" + re.escape(par_end) + "|$)",
        re.S,
    )
    calls: list[Call] = []
    pos = first
    while pos >= 0 and len(calls) < MAX_CALLS:
        stop = text.find(end, pos)
        block = text[pos + len(start) : stop if stop >= 0 else len(text)]
        for m in inv_re.finditer(block):
            if len(calls) >= MAX_CALLS:
                break
            name = m.group(1).strip()
            schema = schema_of(tools, name)
            args: dict[str, Any] = {}
            for p in par_re.finditer(m.group(2)):
                key, attrs, value = p.group(1).strip(), p.group(2), p.group(3)
                if 'string="true"' in attrs:
                    args[key] = value
                elif 'string="false"' in attrs:
                    ok, parsed = _loads(value)
                    args[key] = parsed if ok else value
                else:
                    args[key] = _typed(_trim_newline(value), key, schema)
            calls.append(Call(name, args))
        if stop < 0:
            break
        pos = text.find(start, stop + len(end))
    if not calls:
        return Parsed(content=_content(text), error=f"no {inv} after {start}")
    return Parsed(tuple(calls), _content(text[:first]))


_CDATA = ("<![CDATA[", "]]>")


def cdata_xml(text: str, markers: Sequence[str], tools: Any = None, json_only: bool = False) -> Parsed:
    """MiniCPM5: ``<function name="N"><param name="K">V</param>...</function>`` repeated, with no block around them; a
    value in ``<![CDATA[...]]>`` is text, any other is read as JSON, else as a Python literal, else kept as text.
    The markers are: function opener, function closer, parameter opener, parameter closer. ``json_only`` (llama.cpp's
    minicpm5): a value the tool's schema does not allow as a string must be JSON, else nothing parses."""
    fn, fn_end, par, par_end = markers[:4]
    first = text.find(fn)
    if first < 0:
        return Parsed(content=_content(text))
    fn_re = re.compile(re.escape(fn) + r"\s*[\"']([^\"']+)[\"'][^>]*>(.*?)(?:" + re.escape(fn_end) + "|$)", re.S)
    par_re = re.compile(re.escape(par) + r"\s*[\"']([^\"']+)[\"']>(.*?)" + re.escape(par_end), re.S)
    calls: list[Call] = []
    for m in fn_re.finditer(text, first):
        if len(calls) >= MAX_CALLS:
            break
        args: dict[str, Any] = {}
        schema = schema_of(tools, m.group(1).strip())
        for p in par_re.finditer(m.group(2)):
            key, value = p.group(1), p.group(2).strip()
            if value.startswith(_CDATA[0]) and value.endswith(_CDATA[1]):
                args[key] = value[len(_CDATA[0]) : -len(_CDATA[1])]
            elif not json_only:
                args[key] = _loose_value(value)
            elif (((schema or {}).get("properties") or {}).get(key) or {}).get("type") == "string":
                args[key] = value
            else:
                ok, parsed = _loads(value)
                if not ok:
                    return Parsed(content=_content(text), error=f"the value of {key} is not JSON")
                args[key] = parsed
        calls.append(Call(m.group(1).strip(), args))
    if not calls:
        return Parsed(content=_content(text), error=f"no complete {fn} block")
    return Parsed(tuple(calls), _content(text[:first].strip()))


def arg_kv(text: str, markers: Sequence[str], tools: Any = None) -> Parsed:
    """``START N <arg_key>K</arg_key><arg_value>V</arg_value>... END`` (GLM-4.5/4.6/4.7; Hy3 with its :opensource
    tags). Markers: start, end, key open, key close, value open, value close, and a separator after the name."""
    start, end, ko, kc, vo, vc = markers[:6]
    first = text.find(start)
    if first < 0:
        return Parsed(content=_content(text))
    pair = re.compile(
        re.escape(ko) + r"(.*?)" + re.escape(kc) + r"\s*" + re.escape(vo) + r"(.*?)(?:" + re.escape(vc) + "|$)", re.S
    )
    calls: list[Call] = []
    pos = first
    while pos >= 0 and len(calls) < MAX_CALLS:
        stop = text.find(end, pos)
        block = text[pos + len(start) : stop if stop >= 0 else len(text)]
        k = block.find(ko)
        name = (block if k < 0 else block[:k]).strip()
        if len(markers) > 6 and name.endswith(markers[6]):  # Hy3 writes a separator after the name
            name = name[: -len(markers[6])].strip()
        if not name:
            return Parsed(content=_content(text), error=f"no function name after {start}")
        schema = schema_of(tools, name)
        args = {m.group(1).strip(): _typed(m.group(2), m.group(1).strip(), schema) for m in pair.finditer(block)}
        calls.append(Call(name, args))
        if stop < 0:
            break
        pos = text.find(start, stop + len(end))
    return Parsed(tuple(calls), _content(text[:first]))


_DECODER = json.JSONDecoder()


def _json_objects(text: str, at: int) -> tuple[list[Any], int, str | None]:
    """JSON values from ``at`` on, separated by ``;`` or ``,`` and whitespace; the end offset."""
    out: list[Any] = []
    pos = at
    while pos < len(text) and len(out) < MAX_CALLS:
        while pos < len(text) and text[pos] in " \t\r\n;,":
            pos += 1
        if pos >= len(text) or text[pos] != "{":
            break
        try:
            value, pos = _DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError) as exc:
            return out, pos, str(exc)
        out.append(value)
    return out, pos, None


def _named(obj: Any) -> Call | None:
    if isinstance(obj, dict) and isinstance(obj.get("tool_name"), str) and "name" not in obj:  # Cohere's keys
        obj = {"name": obj["tool_name"], "parameters": obj.get("parameters")}
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return None
    args = obj.get("arguments", obj.get("parameters"))
    if args is None:
        return None
    if isinstance(args, str):
        ok, args = _loads(args)
        if not ok:
            return None
    return Call(obj["name"], args)


def bare_json(text: str, markers: Sequence[str], tools: Any = None) -> Parsed:
    """``[PREFIX] {"name": N, "parameters": {...}}; {...}`` (Llama 3.x JSON): the output starts with the prefix
    marker or with a JSON object whose keys are name and parameters/arguments."""
    prefix = markers[0] if markers else ""
    stripped = text.lstrip()
    at = len(text) - len(stripped)
    if prefix and stripped.startswith(prefix):
        at += len(prefix)
    elif not stripped.startswith("{"):
        return Parsed(content=_content(text))
    objs, _, error = _json_objects(text, at)
    calls = [_named(o) for o in objs]
    if not calls or any(c is None for c in calls):
        return Parsed(content=_content(text), error=error or "no JSON object with name and parameters")
    return Parsed(tuple(c for c in calls if c is not None), None)


def json_array(text: str, markers: Sequence[str], tools: Any = None) -> Parsed:
    """``PREFIX [{"name": N, "arguments": {...}}, ...]`` (Granite 3.x, Mistral's v3 format, functionary-style)."""
    prefix = markers[0]
    first = text.find(prefix)
    if first < 0:
        return Parsed(content=_content(text))
    rest = text[first + len(prefix) :].lstrip()
    try:
        value, _ = _DECODER.raw_decode(rest)
    except (ValueError, RecursionError) as exc:
        return Parsed(content=_content(text), error=f"the text after {prefix} is not JSON: {exc}")
    items = value if isinstance(value, list) else [value]
    calls = [_named(o) for o in items[:MAX_CALLS]]
    if not calls or any(c is None for c in calls):
        return Parsed(content=_content(text), error="a call without name and arguments")
    return Parsed(tuple(c for c in calls if c is not None), _content(text[:first].rstrip()))


def name_args(text: str, markers: Sequence[str], tools: Any = None) -> Parsed:
    """``[TOOL_CALLS]N[ARGS]{...}`` repeated (Mistral v11+); an older ``[TOOL_CALLS][{...}]`` array is read too (a
    ``[CALL_ID]`` before ``[ARGS]`` stays in the name, as vLLM 0.33's parser leaves it)."""
    start, args_marker = markers[0], markers[1]
    first = text.find(start)
    if first < 0:
        return Parsed(content=_content(text))
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
                return Parsed(content=_content(text), error=f"no {args_marker} after {start}")
            calls.extend(array.calls)
        else:
            name = chunk[:a].strip()
            try:
                value, _ = _DECODER.raw_decode(chunk[a + len(args_marker) :].lstrip())
            except (ValueError, RecursionError) as exc:
                return Parsed(content=_content(text), error=f"arguments are not JSON: {exc}")
            calls.append(Call(name, value))
        pos = nxt
    return Parsed(tuple(calls), _content(text[:first]))


def pythonic(text: str, markers: Sequence[str], tools: Any = None) -> Parsed:
    """``[f(a=1, b="x"), g()]`` (pythonic, llama4_pythonic, olmo3): a Python list of calls with literal
    keyword arguments, read with ``ast`` (never evaluated). Optional markers wrap it."""
    body = text.strip()
    if markers and body.startswith(markers[0]):
        body = body[len(markers[0]) :]
        if len(markers) > 1 and body.rstrip().endswith(markers[1]):
            body = body.rstrip()[: -len(markers[1])]
        body = body.strip()
    if not (body.startswith("[") and body.endswith("]")):
        return Parsed(content=_content(text))
    try:
        tree = ast.parse(body, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return Parsed(content=_content(text), error="not a Python list of calls")
    node = tree.body
    if not isinstance(node, ast.List):
        return Parsed(content=_content(text), error="not a Python list of calls")
    calls: list[Call] = []
    for item in node.elts[:MAX_CALLS]:
        if not isinstance(item, ast.Call) or not isinstance(item.func, ast.Name) or item.args:
            return Parsed(content=_content(text), error="an element is not a call with keyword arguments")
        try:
            args = {kw.arg: ast.literal_eval(kw.value) for kw in item.keywords if kw.arg is not None}
        except (ValueError, SyntaxError, RecursionError, MemoryError, TypeError):
            return Parsed(content=_content(text), error="an argument is not a literal")
        calls.append(Call(item.func.id, args))
    return Parsed(tuple(calls), None)


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
        return Parsed(content=_content(text))
    calls: list[Call] = []
    pos = text.find(call_begin, first)
    while pos >= 0 and len(calls) < MAX_CALLS:
        stop = text.find(call_end, pos)
        if stop < 0:
            break
        block = text[pos + len(call_begin) : stop]
        s = block.find(sep)
        if s < 0:
            return Parsed(content=_content(text), error=f"no {sep} in a call")
        if fenced:
            kind, rest = block[:s], block[s + len(sep) :]
            m = re.match(r"([^\n]*)\n```(?:json)?\n(.*)\n```\s*$", rest, re.S)
            if kind.strip() != "function" or m is None:
                return Parsed(content=_content(text), error="not the function<sep>NAME + json fence layout")
            name, raw = m.group(1).strip(), m.group(2)
        else:
            name, raw = block[:s].strip(), block[s + len(sep) :]
        ok, args = _loads(raw)
        if not ok:
            return Parsed(content=_content(text), error="arguments are not JSON")
        calls.append(Call(name, args))
        pos = text.find(call_begin, stop + len(call_end))
    if not calls:
        return Parsed(content=_content(text), error=f"no complete call after {calls_begin}")
    return Parsed(tuple(calls), _content(text[:first]))


_KIMI_ID = re.compile(r"^\s*(?:functions\.)?(?P<name>[^:\s]+?)(?::\d+)?\s*$", re.S)


def section_calls(text: str, markers: Sequence[str], tools: Any = None) -> Parsed:
    """Kimi K2: ``SECTION_BEGIN CALL_BEGIN functions.N:I ARG_BEGIN {...} CALL_END ... SECTION_END``.
    Markers: section begin, section end, call begin, argument begin, call end."""
    section, _section_end, call_begin, arg_begin, call_end = markers[:5]
    first = text.find(section)
    if first < 0:
        return Parsed(content=_content(text))
    calls: list[Call] = []
    pos = text.find(call_begin, first)
    while pos >= 0 and len(calls) < MAX_CALLS:
        a = text.find(arg_begin, pos)
        stop = text.find(call_end, a if a >= 0 else pos)
        if a < 0 or stop < 0:
            break
        m = _KIMI_ID.match(text[pos + len(call_begin) : a])
        ok, args = _loads(text[a + len(arg_begin) : stop])
        if m is None or not ok:
            return Parsed(content=_content(text), error="a call whose id or arguments do not parse")
        calls.append(Call(m.group("name"), args))
        pos = text.find(call_begin, stop + len(call_end))
    if not calls:
        return Parsed(content=_content(text), error=f"no complete call after {section}")
    return Parsed(tuple(calls), _content(text[:first]))


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
        ok, args = _loads(raw.strip())
        if not ok:
            return Parsed(content=_content(text), error="arguments are not JSON")
        if content_end is None:
            content_end = m.start()
        calls.append(Call(m.group(1), args))
        pos = body if stop < 0 else stop
    if not calls:
        return Parsed(content=_content(text))
    return Parsed(tuple(calls), None)


#: What the auto-parser tries, with the markers of the formats templates write.
_ANY = (
    ("json-tags", ("<tool_call>", "</tool_call>")),
    ("arg-kv", ("<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>")),
    ("xml-function", ("<tool_call>", "</tool_call>")),
    (
        "invoke",
        (
            "<minimax:tool_call>",
            "</minimax:tool_call>",
            "<invoke name=",
            "</invoke>",
            "<parameter name=",
            "</parameter>",
        ),
    ),
    (
        "sep-json",
        (
            "<｜tool▁calls▁begin｜>",
            "<｜tool▁calls▁end｜>",
            "<｜tool▁call▁begin｜>",
            "<｜tool▁call▁end｜>",
            "<｜tool▁sep｜>",
        ),
    ),
    (
        "sep-fenced",
        (
            "<｜tool▁calls▁begin｜>",
            "<｜tool▁calls▁end｜>",
            "<｜tool▁call▁begin｜>",
            "<｜tool▁call▁end｜>",
            "<｜tool▁sep｜>",
        ),
    ),
    ("bare-json", ("<|python_tag|>",)),
    ("json-array", ("[TOOL_CALLS]",)),
    ("json-array", ("<|tool_call|>",)),
    ("pythonic", ()),
)


def json_block(text: str, markers: Sequence[str], tools: Any = None, at_start: bool = False) -> Parsed:
    """``START <JSON> END``: one call object or an array of them, each ``{"name", "arguments"|"parameters"}``,
    Cohere's ``{"tool_name", "parameters"}`` or Apertus' ``{NAME: {arguments}}`` (Command R7B / A, GigaChat 3,
    Apertus). Markers: start, end (an unclosed block runs to the end of the text). ``at_start``: the block must open
    the output (GigaChat 3's parsers: a separator before it leaves the call as content)."""
    start, end = markers[0], markers[1]
    first = text.find(start)
    if first < 0 or (at_start and text[:first].strip()):
        return Parsed(content=_content(text))
    body = text[first + len(start) :]
    stop = body.find(end) if end else -1
    body = (body if stop < 0 else body[:stop]).strip()
    ok, value = _loads(body)
    if not ok:
        return Parsed(content=_content(text), error=f"the text after {start} is not JSON")
    items = value if isinstance(value, list) else [value]
    calls = []
    for item in items[:MAX_CALLS]:
        call = _named(item)
        if call is None and isinstance(item, dict) and len(item) == 1:  # {NAME: {arguments}}
            name, args = next(iter(item.items()))
            call = Call(name, args) if isinstance(args, dict) else None
        if call is None:
            return Parsed(content=_content(text), error="a call without name and arguments")
        calls.append(call)
    return Parsed(tuple(calls), _content(text[:first].strip()))


_G4_CALL = re.compile(r"<\|tool_call>call:(\w+)\{(.*?)\}(?:<tool_call\|>|<turn\|>)", re.S)


def _g4_value(s: str, i: int, q: str, depth: int = 0, nested_text: bool = False) -> tuple[Any, int]:
    """One Gemma 4 value at ``s[i]``: a ``q``-quoted string, {k:v,...}, [v,...], or a bare number / true / false /
    null / word; returns (value, end)."""
    if depth > 32:
        raise ValueError("nested too deep")
    if s.startswith(q, i):
        j = s.find(q, i + len(q))
        if j < 0:
            raise ValueError("unterminated string")
        return s[i + len(q) : j], j + len(q)
    if i < len(s) and s[i] in "{[":
        close = "}" if s[i] == "{" else "]"
        out: Any = {} if close == "}" else []
        i += 1
        while i < len(s) and s[i] != close:
            if close == "}":
                k = s.index(":", i)
                key = s[i:k].strip()
                value, i = _g4_value(s, k + 1, q, depth + 1, nested_text)
                out[key] = value
            else:
                value, i = _g4_value(s, i, q, depth + 1, nested_text)
                out.append(value)
            if i < len(s) and s[i] == ",":
                i += 1
        return out, i + 1
    j = i
    while j < len(s) and s[j] not in ",}]":
        j += 1
    word = s[i:j].strip()
    if nested_text and depth > 1:  # vLLM's gemma4 parser returns bare values inside {} and [] as text
        return word, j
    ok, value = _loads(word)
    return (value if ok else word), j


def gemma4(text: str, markers: Sequence[str], tools: Any = None, nested_text: bool = False) -> Parsed:
    """Gemma 4: ``<|tool_call>call:N{k:V,...}<tool_call|>``, strings between ``<|"|>`` delimiters, other values
    bare (numbers, true/false, nested {} and []). Markers: call open, call close, string delimiter. ``nested_text``:
    bare values inside nested {} and [] stay text (vLLM 0.33's parser)."""
    q = markers[2] if len(markers) > 2 else '<|"|>'
    calls: list[Call] = []
    first = -1
    for m in _G4_CALL.finditer(text):
        if len(calls) >= MAX_CALLS:
            break
        try:
            args, _ = _g4_value("{" + m.group(2) + "}", 0, q, 0, nested_text)
        except (ValueError, IndexError):
            return Parsed(content=_content(text), error="the arguments of call:" + m.group(1) + " do not parse")
        first = m.start() if first < 0 else first
        calls.append(Call(m.group(1), args))
    if not calls:
        return Parsed(content=_content(text))
    return Parsed(tuple(calls), _content(text[:first]))


_XTML_CALL = re.compile(r'<\|open\|>call tool="([^"]+)"[^<]*<\|sep\|>(.*?)<\|close\|>call<\|sep\|>', re.S)
_XTML_ARG = re.compile(
    r'<\|open\|>argument key="([^"]+)"(?: type="([^"]*)")?<\|sep\|>(.*?)<\|close\|>argument<\|sep\|>', re.S
)


def xtml(text: str, markers: Sequence[str], tools: Any = None) -> Parsed:
    """Kimi K3's XTML: ``<|open|>tools<|sep|><|open|>call tool="N" index="I"<|sep|><|open|>argument key="K"
    type="T"<|sep|>V<|close|>argument<|sep|>...<|close|>call<|sep|><|close|>tools<|sep|>``; a ``string`` value is
    the text, any other is JSON. The content is the response section's text (the think section is not content)."""
    first = text.find(markers[0] + "tools" + markers[2])
    if first < 0:
        return Parsed(content=_content(text))
    calls: list[Call] = []
    for m in _XTML_CALL.finditer(text, first):
        if len(calls) >= MAX_CALLS:
            break
        args: dict[str, Any] = {}
        for a in _XTML_ARG.finditer(m.group(2)):
            key, kind, value = a.group(1), a.group(2), a.group(3)
            if kind == "string":
                args[key] = value
            else:
                ok, parsed = _loads(value)
                args[key] = parsed if ok else value
        calls.append(Call(m.group(1), args))
    if not calls:
        return Parsed(content=_content(text), error="no call in the tools section")
    response = re.search(r"<\|open\|>response<\|sep\|>(.*?)<\|close\|>response<\|sep\|>", text[:first], re.S)
    return Parsed(tuple(calls), _content(response.group(1)) if response else None)


_MM3_TAG = re.compile(r"<([A-Za-z_][\w.-]*)>")


def _mm3_elements(
    s: str, i: int, close: str, depth: int = 0, items_text: bool = False
) -> tuple[list[tuple[str, Any]], int]:
    """The elements from ``s[i]`` up to ``close``: (tag, value) pairs, a value nested when its text starts with an
    element, else the text up to its closing tag."""
    if depth > 32:
        raise ValueError("nested too deep")
    out: list[tuple[str, Any]] = []
    while len(out) < 256:
        while i < len(s) and s[i] in " \t\r\n":
            i += 1
        if s.startswith(close, i) or i >= len(s):
            return out, i + len(close)
        m = _MM3_TAG.match(s, i)
        if m is None:
            raise ValueError("not an element")
        tag, j = m.group(1), m.end()
        end = f"</{tag}>"
        if _MM3_TAG.match(s, len(s) - len(s[j:].lstrip())):
            children, i = _mm3_elements(s, j, end, depth + 1, items_text)
            value: Any = (
                [v for _, v in children] if children and all(t == "item" for t, _ in children) else dict(children)
            )
        else:
            k = s.find(end, j)
            if k < 0:
                raise ValueError(f"no {end}")
            text = s[j:k]
            ok, parsed = _loads(text)
            value = parsed if ok and not isinstance(parsed, str) and not (items_text and tag == "item") else text
            i = k + len(end)
        out.append((tag, value))
    raise ValueError("too many elements")


def minimax_m3(text: str, markers: Sequence[str], tools: Any = None, items_text: bool = False) -> Parsed:
    """MiniMax-M3: ``<tool_call><invoke name="N"><K>V</K>...</invoke></tool_call>`` with a separator token between
    elements (``]<]minimax[>[``), nested objects as elements and arrays as ``<item>``. Markers: separator, block
    open, block close. ``items_text``: array items stay text (SGLang 0.5.23's detector)."""
    sep, start, end = markers[0], markers[1], markers[2]
    if sep + start not in text:  # the parsers find the block by the separator token before it
        return Parsed(content=_content(text))
    flat = text.replace(sep, "")
    first = flat.find(start)
    if first < 0:
        return Parsed(content=_content(text))
    stop = flat.find(end, first)
    block = flat[first + len(start) : stop if stop >= 0 else len(flat)]
    calls: list[Call] = []
    for m in re.finditer(r'<invoke name="([^"]+)">', block):
        if len(calls) >= MAX_CALLS:
            break
        schema = schema_of(tools, m.group(1))
        try:
            elements, _ = _mm3_elements(block, m.end(), "</invoke>", 0, items_text)
        except ValueError as exc:
            return Parsed(content=_content(text), error=f"the arguments do not parse: {exc}")
        args = {k: _typed(v, k, schema) if isinstance(v, str) else v for k, v in elements}
        calls.append(Call(m.group(1), args))
    if not calls:
        return Parsed(content=_content(text), error="no invoke in the tool call")
    return Parsed(tuple(calls), _content(flat[:first]))


_KW = re.compile(r"(?:^|,\s*)([A-Za-z_]\w*)=")


def _loose_value(raw: str) -> Any:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    ok, value = _loads(raw)
    if ok:
        return value
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError, RecursionError, MemoryError, TypeError):
        return raw


def lfm2(text: str, markers: Sequence[str], tools: Any = None) -> Parsed:
    """LFM2: ``START[N(k=V, ...), ...]END``, Python-style calls read leniently as vLLM's and SGLang's lfm2 parsers
    do: a value runs to the next ``, key=`` (a quoted string keeps an unescaped quote inside), JSON or a literal
    otherwise. Markers: start, end."""
    first = text.find(markers[0])
    if first < 0:
        return Parsed(content=_content(text))
    stop = text.find(markers[1], first)
    body = text[first + len(markers[0]) : stop if stop >= 0 else len(text)].strip()
    if not (body.startswith("[") and body.endswith("]")):
        return Parsed(content=_content(text), error="not a list of calls")
    calls: list[Call] = []
    for m in re.finditer(r"([A-Za-z_][\w.-]*)\((.*?)\)(?=\s*(?:,\s*[A-Za-z_][\w.-]*\(|\]$))", body[1:-1] + "]", re.S):
        if len(calls) >= MAX_CALLS:
            break
        inner = m.group(2)
        keys = list(_KW.finditer(inner))
        args = {
            k.group(1): _loose_value(inner[k.end() : keys[n + 1].start() if n + 1 < len(keys) else len(inner)])
            for n, k in enumerate(keys)
        }
        calls.append(Call(m.group(1), args))
    if not calls:
        return Parsed(content=_content(text), error="not a list of calls")
    return Parsed(tuple(calls), _content(text[:first]))


def _no_prefix(parsed: Parsed) -> Parsed:
    """The calls without the text before them (vLLM's muse_glimmer returns no content around its calls)."""
    return Parsed(parsed.calls, None, parsed.error) if parsed.calls else parsed


def tgi_json(text: str, markers: Sequence[str], tools: Any = None) -> Parsed:
    """TGI's grammar-held output: ``{"function": {"_name": N, ...arguments}}`` (router/src/chat.rs); ``no_tool``
    is its answer without a call (content)."""
    ok, value = _loads(text.strip())
    fn = value.get("function") if ok and isinstance(value, dict) else None
    if not isinstance(fn, dict) or not isinstance(fn.get("_name"), str):
        return Parsed(
            content=_content(text), error=None if not text.strip().startswith("{") else "not TGI's function JSON"
        )
    args = {k: v for k, v in fn.items() if k != "_name"}
    if fn["_name"] == "no_tool":
        return Parsed(content=_content(str(args.get("content", ""))))
    return Parsed((Call(fn["_name"], args),), None)


def any_format(text: str, markers: Sequence[str], tools: Any = None) -> Parsed:
    """The first of the known formats that recovers a call (llama.cpp's auto-parser derives its parser from the
    template, so it reads whatever format the template writes)."""
    for name, marks in _ANY:
        parsed = GRAMMARS[name](text, marks, tools)
        if parsed.calls:
            return parsed
    return Parsed(content=_content(text))


GRAMMARS: dict[str, Callable[[str, Sequence[str], Any], Parsed]] = {
    "any": any_format,
    "json-tags": json_tags,
    "xml-function": xml_function,
    "invoke": invoke,
    "arg-kv": arg_kv,
    "bare-json": bare_json,
    "json-array": json_array,
    "name-args": name_args,
    "pythonic": pythonic,
    "sep-fenced": sep_fenced,
    "sep-json": sep_json,
    "section-calls": section_calls,
    "harmony": harmony,
    "tgi-json": tgi_json,
    "json-block": json_block,
    "json-block-at-start": lambda text, markers, tools: json_block(text, markers, tools, at_start=True),
    "gemma4": gemma4,
    "gemma4-nested-text": lambda text, markers, tools: gemma4(text, markers, tools, nested_text=True),
    "xtml": xtml,
    "minimax-m3": minimax_m3,
    "minimax-m3-items-text": lambda text, markers, tools: minimax_m3(text, markers, tools, items_text=True),
    "lfm2": lfm2,
    "invoke-no-prefix": lambda text, markers, tools: _no_prefix(invoke(text, markers, tools)),
    "cdata-xml": cdata_xml,
    # vLLM's minicpm5 returns only what follows the thinking block, and none of it around a call
    "cdata-xml-no-prefix": lambda text, markers, tools: _no_prefix(cdata_xml(text, markers, tools)),
    "cdata-xml-json": lambda text, markers, tools: cdata_xml(text, markers, tools, json_only=True),
}
