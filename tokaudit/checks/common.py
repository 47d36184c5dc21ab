"""Helpers shared by the rules: token shapes, content lookups, the chat template's markers."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from threading import Lock

from tokaudit.records import Provenance
from tokaudit.model.id_table import IdTable, Layer
from tokaudit.model.tokenizer_model import TokenizerModel

#: Shapes of control tokens (llama.cpp ``does_token_look_special`` plus fullwidth DeepSeek markers):
#: ``<|im_end|>``, ``<｜end▁of▁sentence｜>``, ``[INST]``, ``[/INST]``, ``<think>``, ``</s>``, ``<end_of_turn>``, and
#: Gemma 4's one-sided pairs ``<|turn>`` ... ``<turn|>`` (``<|tool_call>``, ``<channel|>``: the bar marks the open
#: side).
_CONTROL = re.compile(
    r"<\|[^<>|\s]{1,80}\|>|<\|[A-Za-z][A-Za-z0-9_.:-]{0,40}>|<[A-Za-z][A-Za-z0-9_.:-]{0,40}\|>|"
    r"<｜[^<>｜\s]{1,80}｜>|\[/?[A-Z][A-Z0-9_]{0,40}\]|</?[A-Za-z][A-Za-z0-9_.:-]{0,40}>"
)
_CONTROL_FULL = re.compile(f"(?:{_CONTROL.pattern})")

#: Reserved placeholders: ``<|reserved_token_7|>``, ``<|reserved_special_token_3|>``, ``<|extra_12|>``,
#: ``<|dummy_4|>``, ``[PAD123]``, ``<unused5>``, ``<SPECIAL_7>``, ``[unused9]``.
PLACEHOLDER = re.compile(
    r"<\|(?:reserved(?:_special)?_token|extra|dummy|unused)_?\d+\|>|\[(?:PAD|unused|UNUSED|RESERVED)\d+\]|"
    r"<(?:unused|SPECIAL_|reserved_?|extra_id_)\d+>"
)

#: Markers that parsers need to see (so they are often deliberately not special).
_TOOL_OR_REASONING = re.compile(r"tool|function|call|think|reason|argument|response|code|python|ipython", re.IGNORECASE)


def looks_control(content: str) -> bool:
    return bool(_CONTROL_FULL.fullmatch(content))


def is_placeholder(content: str) -> bool:
    return bool(PLACEHOLDER.fullmatch(content))


def is_tool_or_reasoning_marker(content: str) -> bool:
    return bool(_TOOL_OR_REASONING.search(content))


_reverse_lock = Lock()
_reverse: dict[int, tuple[Mapping[int, bytes], dict[bytes, int]]] = {}


def _reversed(layer: Layer) -> dict[bytes, int]:
    """bytes -> lowest id of a layer, built once per layer (a base vocabulary costs O(vocab) once)."""
    key = id(layer.tokens)
    with _reverse_lock:
        hit = _reverse.get(key)
        if hit is not None and hit[0] is layer.tokens:
            return hit[1]
    rev: dict[bytes, int] = {}
    for i, token in sorted(layer.tokens.items()):
        rev.setdefault(token, i)
    with _reverse_lock:
        if len(_reverse) > 64:
            _reverse.clear()
        _reverse[key] = (layer.tokens, rev)
    return rev


def find_content(table: IdTable, content: str) -> tuple[int, Layer] | None:
    """The id a table gives a token's text, smallest layers (added tokens, specials) first."""
    data = content.encode("utf-8")
    for layer in sorted(table.layers, key=lambda layer: len(layer.tokens)):
        if len(layer.tokens) <= 4096:
            hit = next((i for i, token in layer.tokens.items() if token == data), None)
        else:
            hit = _reversed(layer).get(data)
        if hit is not None:
            return hit, layer
    return None


@dataclass(frozen=True)
class Marker:
    """A control-token-shaped literal of a chat template, and where it is."""

    text: str
    source: Provenance


def chat_template(model: TokenizerModel) -> tuple[str, str, bool] | None:
    """(template text, file name, is a separate file) from chat_template.jinja or tokenizer_config.json."""
    a = model.artifacts
    if a.chat_template is not None:
        return a.chat_template.text, a.chat_template.name, True
    if a.tokenizer_config is not None and a.tokenizer_config.chat_template:
        return a.tokenizer_config.chat_template, a.tokenizer_config.name, False
    if a.gguf_only and a.gguf.chat_templates.get("default"):  # type: ignore[union-attr]  # gguf_only: a GGUF
        return a.gguf.chat_templates["default"], a.gguf.path.name, False  # type: ignore[union-attr]  # as above
    return None


def template_key(file: str) -> str:
    """The key that holds a chat template inside a file: GGUF's ``tokenizer.chat_template``, else ``chat_template``."""
    return "tokenizer.chat_template" if file.endswith(".gguf") else "chat_template"


_JINJA_COMMENT = re.compile(r"\{#.*?#\}", re.DOTALL)


def template_markers(model: TokenizerModel) -> list[Marker]:
    """Control-token-shaped literals in the chat template, first occurrence of each, in order."""
    found = chat_template(model)
    if found is None:
        return []
    text, name, separate = found
    text = _JINJA_COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)
    seen: dict[str, Marker] = {}
    for m in _CONTROL.finditer(text):
        if m.group() in seen:
            continue
        line = text.count("\n", 0, m.start()) + 1
        src = Provenance(name, line=line) if separate else Provenance(name, key=template_key(name))
        seen[m.group()] = Marker(m.group(), src)
    return list(seen.values())


#: Turn terminators of well-known templates, most specific first.
KNOWN_TERMINATORS = (
    "<|im_end|>",
    "<|eot_id|>",
    "<end_of_turn>",
    "<turn|>",
    "<|end|>",
    "<|eot|>",
    "<|end_of_turn|>",
    "<｜end▁of▁sentence｜>",
    "</s>",
    "<|endoftext|>",
    "[EOT]",
)


def turn_terminator(model: TokenizerModel) -> Marker | None:
    """The literal the template writes at the end of each message (Llama-3 ``<|eot_id|>``, Kimi ``<|im_end|>``).

    A known terminator used in the template wins; otherwise the last marker inside the
    ``for message in messages`` loop.
    """
    found = chat_template(model)
    if found is None:
        return None
    markers = template_markers(model)
    by_text = {m.text: m for m in markers}
    for name in KNOWN_TERMINATORS:
        if name in by_text:
            return by_text[name]
    text = found[0]
    loop = re.search(r"\{%-?\s*for\s+\w+\s+in\s+messages\b.*?%\}(.*?)\{%-?\s*endfor\s*-?%\}", text, re.DOTALL)
    if loop is None:
        return None
    inner = [m.group() for m in _CONTROL.finditer(loop.group(1))]
    return by_text.get(inner[-1]) if inner else None
