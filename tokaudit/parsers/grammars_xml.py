"""The XML-style tool-call grammars: a call's name and each argument in tags of their own (Qwen3-Coder's
``<function=N>``, MiniMax's ``<invoke name="N">``, GLM's ``<arg_key>``, MiniCPM5's CDATA values, Kimi K3's XTML).
Values are text, typed by the tool's JSON schema where the stack's parser does so."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from tokaudit.parsers.calls import (
    MAX_CALLS,
    Call,
    Parsed,
    content_or_none,
    loads_json,
    loose_value,
    schema_of,
    trim_newline,
    typed_value,
)

_XML_FUNCTION = re.compile(r"<function=([^>\n]+)>(.*?)(?:</function>|$)", re.S)


_XML_PARAM = re.compile(r"<parameter=([^>\n]+)>(.*?)(?:</parameter>|(?=<parameter=)|(?=</function>)|$)", re.S)


def xml_function(text: str, markers: Sequence[str], tools: Any = None) -> Parsed:
    """``START <function=N> <parameter=K>V</parameter>... </function> END`` (qwen3_coder, qwen3_xml, seed_oss).
    Values are text, typed by the tool's schema."""
    start, end = markers[0], markers[1]
    first = text.find(start)
    if first < 0:
        return Parsed(content=content_or_none(text))
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
            return Parsed(content=content_or_none(text), error=f"no <function=...> after {start}")
        name = m.group(1).strip()
        schema = schema_of(tools, name)
        args = {
            p.group(1).strip(): typed_value(trim_newline(p.group(2)), p.group(1).strip(), schema)
            for p in _XML_PARAM.finditer(m.group(2))
        }
        calls.append(Call(name, args))
        if stop < 0:
            break
        pos = text.find(start, stop + len(end))
    return Parsed(tuple(calls), content_or_none(text[:first]))


def invoke(text: str, markers: Sequence[str], tools: Any = None) -> Parsed:
    """``START <invoke name="N"><parameter name="K">V</parameter>...</invoke> END`` (MiniMax-M2; DeepSeek V3.2's
    DSML when the markers carry its prefix). The markers are: start, end, invoke opener, invoke closer,
    parameter opener, parameter closer."""
    start, end, inv, inv_end, par, par_end = markers[:6]
    first = text.find(start)
    if first < 0:
        return Parsed(content=content_or_none(text))
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
                    ok, parsed = loads_json(value)
                    args[key] = parsed if ok else value
                else:
                    args[key] = typed_value(trim_newline(value), key, schema)
            calls.append(Call(name, args))
        if stop < 0:
            break
        pos = text.find(start, stop + len(end))
    if not calls:
        return Parsed(content=content_or_none(text), error=f"no {inv} after {start}")
    return Parsed(tuple(calls), content_or_none(text[:first]))


_CDATA = ("<![CDATA[", "]]>")


def cdata_xml(text: str, markers: Sequence[str], tools: Any = None, json_only: bool = False) -> Parsed:
    """MiniCPM5: ``<function name="N"><param name="K">V</param>...</function>`` repeated, with no block around them; a
    value in ``<![CDATA[...]]>`` is text, any other is read as JSON, else as a Python literal, else kept as text.
    The markers are: function opener, function closer, parameter opener, parameter closer. ``json_only`` (llama.cpp's
    minicpm5): a value the tool's schema does not allow as a string must be JSON, else nothing parses."""
    fn, fn_end, par, par_end = markers[:4]
    first = text.find(fn)
    if first < 0:
        return Parsed(content=content_or_none(text))
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
                args[key] = loose_value(value)
            elif (((schema or {}).get("properties") or {}).get(key) or {}).get("type") == "string":
                args[key] = value
            else:
                ok, parsed = loads_json(value)
                if not ok:
                    return Parsed(content=content_or_none(text), error=f"the value of {key} is not JSON")
                args[key] = parsed
        calls.append(Call(m.group(1).strip(), args))
    if not calls:
        return Parsed(content=content_or_none(text), error=f"no complete {fn} block")
    return Parsed(tuple(calls), content_or_none(text[:first].strip()))


def arg_kv(text: str, markers: Sequence[str], tools: Any = None) -> Parsed:
    """``START N <arg_key>K</arg_key><arg_value>V</arg_value>... END`` (GLM-4.5/4.6/4.7; Hy3 with its :opensource
    tags). Markers: start, end, key open, key close, value open, value close, and a separator after the name."""
    start, end, ko, kc, vo, vc = markers[:6]
    first = text.find(start)
    if first < 0:
        return Parsed(content=content_or_none(text))
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
            return Parsed(content=content_or_none(text), error=f"no function name after {start}")
        schema = schema_of(tools, name)
        args = {m.group(1).strip(): typed_value(m.group(2), m.group(1).strip(), schema) for m in pair.finditer(block)}
        calls.append(Call(name, args))
        if stop < 0:
            break
        pos = text.find(start, stop + len(end))
    return Parsed(tuple(calls), content_or_none(text[:first]))


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
        return Parsed(content=content_or_none(text))
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
                ok, parsed = loads_json(value)
                args[key] = parsed if ok else value
        calls.append(Call(m.group(1), args))
    if not calls:
        return Parsed(content=content_or_none(text), error="no call in the tools section")
    response = re.search(r"<\|open\|>response<\|sep\|>(.*?)<\|close\|>response<\|sep\|>", text[:first], re.S)
    return Parsed(tuple(calls), content_or_none(response.group(1)) if response else None)


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
            ok, parsed = loads_json(text)
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
        return Parsed(content=content_or_none(text))
    flat = text.replace(sep, "")
    first = flat.find(start)
    if first < 0:
        return Parsed(content=content_or_none(text))
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
            return Parsed(content=content_or_none(text), error=f"the arguments do not parse: {exc}")
        args = {k: typed_value(v, k, schema) if isinstance(v, str) else v for k, v in elements}
        calls.append(Call(m.group(1), args))
    if not calls:
        return Parsed(content=content_or_none(text), error="no invoke in the tool call")
    return Parsed(tuple(calls), content_or_none(flat[:first]))
