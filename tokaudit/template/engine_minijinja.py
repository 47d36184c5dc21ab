"""MiniJinja (the Rust stacks' engine) through its Python binding, as each stack pins and configures it: the context
copied into values no Python method can change, ``.get(k, d)`` renamed where the pinned pycompat takes one argument,
and its fuel as the step budget (:mod:`tokaudit.template.engines` describes both engines)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tokaudit.template.engine_base import (
    Failed,
    TemplateRaised,
    first_line,
    raise_exception,
    strftime_now,
)
from tokaudit.template.renders import Budget, EngineConfig, Prepared, Render
from tokaudit.template.tojson import TOJSON

#: What a two-argument ``.get(`` is renamed to when the pinned pycompat takes one argument.
_GET_WITH_DEFAULT = "get_with_default_needs_minijinja_2_15"


def length_or_zero(value: Any) -> int:
    """Dynamo's ``length``: 0 for none and undefined, else the length (0 when it has none)."""
    try:
        return len(value) if value is not None else 0
    except TypeError:
        return 0


_LOOP_CONTROL = r"\{%[-+]?\s*(break|continue)\s*[-+]?%\}"  # compiled on first use


def rename_get_with_default(template: str) -> str:
    """``x.get(key, default)`` inside ``{{ }}`` / ``{% %}`` renamed to a method no map has, so the render fails
    where MiniJinja-contrib < 2.15 fails (its ``get`` takes one argument). Bounded: one pass over the text."""
    out: list[str] = []
    i, n = 0, len(template)
    while i < n:
        start = template.find("{", i)
        if start < 0 or start + 1 >= n:
            out.append(template[i:])
            break
        closer = {"{": "}}", "%": "%}"}.get(template[start + 1])
        if closer is None:
            out.append(template[i : start + 1])
            i = start + 1
            continue
        end = _tag_end(template, start + 2, closer)
        out.append(template[i:start])
        out.append(_rename_in_tag(template[start:end]))
        i = end
    return "".join(out)


def _tag_end(text: str, i: int, closer: str) -> int:
    """The index just past ``closer``, skipping string literals; the text's end when it never closes."""
    n = len(text)
    while i < n:
        c = text[i]
        if c in "'\"":
            i = _string_end(text, i)
            continue
        if text.startswith(closer, i):
            return i + len(closer)
        i += 1
    return n


def _string_end(text: str, i: int) -> int:
    quote, i, n = text[i], i + 1, len(text)
    while i < n and text[i] != quote:
        i += 2 if text[i] == "\\" else 1
    return min(i + 1, n)


def _rename_in_tag(tag: str) -> str:
    out, i, n = [], 0, len(tag)
    while i < n:
        c = tag[i]
        if c in "'\"":
            j = _string_end(tag, i)
            out.append(tag[i:j])
            i = j
            continue
        if tag.startswith(".get(", i) and _top_level_commas(tag, i + 5) > 0:
            out.append(f".{_GET_WITH_DEFAULT}(")
            i += 5
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _top_level_commas(tag: str, i: int) -> int:
    """Commas at depth 0 between ``i`` (just past an opening parenthesis) and its closing one."""
    depth, commas, n = 0, 0, len(tag)
    while i < n:
        c = tag[i]
        if c in "'\"":
            i = _string_end(tag, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return commas
            depth -= 1
        elif c == "," and depth == 0:
            commas += 1
        i += 1
    return commas


def _no_attribute(kind: type, what: str, name: str) -> AttributeError:
    """The error of a method a context value does not offer: MiniJinja's words for one the Python type has
    (a template calling it would change the context), Python's for one it has not (as before the copy)."""
    if hasattr(kind, name):
        return AttributeError(f"unknown method: {what} has no method named {name}")
    return AttributeError(f"'{kind.__name__}' object has no attribute '{name}'")


class _Sequence(list):
    """A list of the context as MiniJinja holds a sequence: no Python method a template could call to change it
    (the binding calls a Python object's methods: ``messages.extend(messages)`` doubled a list 40 times)."""

    __slots__ = ()
    _METHODS = frozenset({"count", "index"})

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("__") or name in _Sequence._METHODS:
            return list.__getattribute__(self, name)
        raise _no_attribute(list, "sequence", name)


class _Map(dict):
    """A dict of the context as MiniJinja holds a map: only pycompat's reading methods."""

    __slots__ = ()
    _METHODS = frozenset({"get", "keys", "values", "items"})

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("__") or name in _Map._METHODS:
            return dict.__getattribute__(self, name)
        raise _no_attribute(dict, "map", name)


def plain_copy(value: Any, sort: bool = False) -> Any:
    """The context as MiniJinja values: lists and dicts without methods that change them, recursively; ``sort``:
    every map in key order (a MiniJinja built without ``preserve_order`` iterates so)."""
    if isinstance(value, dict):
        keys = sorted(value, key=str) if sort else value
        return _Map((k, plain_copy(value[k], sort)) for k in keys)
    if isinstance(value, list):
        return _Sequence(plain_copy(v, sort) for v in value)
    return value


@dataclass
class _MiniPrepared:
    config: EngineConfig
    env: Any
    budget: Budget

    def render(self, context: dict[str, Any]) -> Render:
        name = self.config.name
        context = plain_copy(context, self.config.sorted_maps)
        try:
            text = self.env.render_template("chat", **context)
        except TemplateRaised as exc:
            return Render(name, None, f"raise_exception: {exc}", "raise")
        except Exception as exc:  # noqa: BLE001 - minijinja.TemplateError and Python errors of callbacks
            message = first_line(exc)
            if _GET_WITH_DEFAULT in message:
                message = (
                    "too many arguments: dict.get(key, default) takes one argument in MiniJinja-contrib's pycompat "
                    f"before 2.15 ({self.config.pins})"
                )
            kind = "budget" if "out of fuel" in message or "recursion limit" in message else "error"
            if "syntax error" in message:
                kind = "syntax"
            return Render(name, None, message, kind)
        if len(text) > self.budget.max_chars:
            return Render(name, None, f"output exceeds {self.budget.max_chars} characters", "budget")
        return Render(name, text)


def prepare_minijinja(config: EngineConfig, template: str, budget: Budget) -> Prepared:
    from minijinja import Environment

    if not config.loop_controls:
        m = re.search(_LOOP_CONTROL, template)
        if m is not None:
            line = template.count("\n", 0, m.start()) + 1
            return Failed(
                config.name,
                f"syntax error: unknown statement {m.group(1)} (in chat:{line}); "
                f"{config.pins} is built without the loop_controls feature",
                "syntax",
            )
    if not config.get_default and ".get(" in template:
        template = rename_get_with_default(template)
    env = Environment()
    env.trim_blocks = config.trim_blocks
    env.lstrip_blocks = config.lstrip_blocks
    env.pycompat = True
    env.fuel = budget.fuel
    env.add_function("raise_exception", raise_exception)  # type: ignore[attr-defined]  # not in minijinja's stub
    if config.strftime_now:
        env.add_function("strftime_now", strftime_now)  # type: ignore[attr-defined]  # not in minijinja's stub
    env.add_filter("tojson", TOJSON[config.tojson])
    if config.length_of_none_is_zero:
        env.add_filter("length", length_or_zero)
    try:
        env.add_template("chat", template)
    except Exception as exc:  # noqa: BLE001 - minijinja.TemplateError on a syntax error
        return Failed(config.name, first_line(exc), "syntax")
    return _MiniPrepared(config, env, budget)
