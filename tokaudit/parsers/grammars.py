"""The tool-call syntaxes serving stacks parse, as small grammars over decoded text.

Each grammar takes the text a tool parser sees (after the reasoning parser took its part) and returns
the calls it recovers and the content left over, the way the stacks' parsers do when the text is whole
(non-streaming). Markers come from the parser's row in :mod:`tokaudit.parsers.tool_table`, so one grammar
serves every parser that shares a syntax under other marker spellings. Arguments come back as JSON
values: a call whose arguments do not parse is not recovered (the stacks drop it or return the text).
Every loop is bounded by the text's length.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tokaudit.parsers.calls import (
    Parsed,
    content_or_none,
)
from tokaudit.parsers.grammars_xml import arg_kv, cdata_xml, invoke, minimax_m3, xml_function, xtml
from tokaudit.parsers.grammars_json import (
    bare_json,
    harmony,
    json_array,
    json_block,
    json_tags,
    name_args,
    section_calls,
    sep_fenced,
    sep_json,
    tgi_json,
)
from tokaudit.parsers.grammars_python import gemma4, lfm2, pythonic


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


def _no_prefix(parsed: Parsed) -> Parsed:
    """The calls without the text before them (vLLM's muse_glimmer returns no content around its calls)."""
    return Parsed(parsed.calls, None, parsed.error) if parsed.calls else parsed


def any_format(text: str, markers: Sequence[str], tools: Any = None) -> Parsed:
    """The first of the known formats that recovers a call (llama.cpp's auto-parser derives its parser from the
    template, so it reads whatever format the template writes)."""
    for name, marks in _ANY:
        parsed = GRAMMARS[name](text, marks, tools)
        if parsed.calls:
            return parsed
    return Parsed(content=content_or_none(text))


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
