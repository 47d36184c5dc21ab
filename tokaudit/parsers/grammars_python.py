"""The tool-call grammars written as function calls: a Python list of calls (pythonic, Llama 4, OLMo 3),
LFM2's calls between markers, and Gemma 4's ``call:N{k:v}`` with its own quoting. Read as text or with ``ast``, never
evaluated."""

from __future__ import annotations

import ast
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
)


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
        return Parsed(content=content_or_none(text))
    try:
        tree = ast.parse(body, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return Parsed(content=content_or_none(text), error="not a Python list of calls")
    node = tree.body
    if not isinstance(node, ast.List):
        return Parsed(content=content_or_none(text), error="not a Python list of calls")
    calls: list[Call] = []
    for item in node.elts[:MAX_CALLS]:
        if not isinstance(item, ast.Call) or not isinstance(item.func, ast.Name) or item.args:
            return Parsed(content=content_or_none(text), error="an element is not a call with keyword arguments")
        try:
            args = {kw.arg: ast.literal_eval(kw.value) for kw in item.keywords if kw.arg is not None}
        except (ValueError, SyntaxError, RecursionError, MemoryError, TypeError):
            return Parsed(content=content_or_none(text), error="an argument is not a literal")
        calls.append(Call(item.func.id, args))
    return Parsed(tuple(calls), None)


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
    ok, value = loads_json(word)
    return (value if ok else word), j


_G4_CALL = re.compile(r"<\|tool_call>call:(\w+)\{(.*?)\}(?:<tool_call\|>|<turn\|>)", re.S)


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
            return Parsed(content=content_or_none(text), error="the arguments of call:" + m.group(1) + " do not parse")
        first = m.start() if first < 0 else first
        calls.append(Call(m.group(1), args))
    if not calls:
        return Parsed(content=content_or_none(text))
    return Parsed(tuple(calls), content_or_none(text[:first]))


_KW = re.compile(r"(?:^|,\s*)([A-Za-z_]\w*)=")


def lfm2(text: str, markers: Sequence[str], tools: Any = None) -> Parsed:
    """LFM2: ``START[N(k=V, ...), ...]END``, Python-style calls read leniently as vLLM's and SGLang's lfm2 parsers
    do: a value runs to the next ``, key=`` (a quoted string keeps an unescaped quote inside), JSON or a literal
    otherwise. Markers: start, end."""
    first = text.find(markers[0])
    if first < 0:
        return Parsed(content=content_or_none(text))
    stop = text.find(markers[1], first)
    body = text[first + len(markers[0]) : stop if stop >= 0 else len(text)].strip()
    if not (body.startswith("[") and body.endswith("]")):
        return Parsed(content=content_or_none(text), error="not a list of calls")
    calls: list[Call] = []
    for m in re.finditer(r"([A-Za-z_][\w.-]*)\((.*?)\)(?=\s*(?:,\s*[A-Za-z_][\w.-]*\(|\]$))", body[1:-1] + "]", re.S):
        if len(calls) >= MAX_CALLS:
            break
        inner = m.group(2)
        keys = list(_KW.finditer(inner))
        args = {
            k.group(1): loose_value(inner[k.end() : keys[n + 1].start() if n + 1 < len(keys) else len(inner)])
            for n, k in enumerate(keys)
        }
        calls.append(Call(m.group(1), args))
    if not calls:
        return Parsed(content=content_or_none(text), error="not a list of calls")
    return Parsed(tuple(calls), content_or_none(text[:first]))
