"""The ``tojson`` filter as each stack's engine spells it: transformers' json.dumps, MiniJinja 2's serde with HTML
escaping, Dynamo's, mistral.rs' (see :mod:`tokaudit.template.stacks.engines` for who uses which)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


def tojson_python(
    x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None, sort_keys: bool = False
) -> str:
    """transformers' (and smg's) ``tojson``: ``json.dumps`` with its keyword arguments, no HTML escaping."""
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


_HTML_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "'": "\\u0027"})


def _serde(x: Any, indent: Any) -> str:
    """serde_json: compact ``{"a":1}``, or pretty with ``indent`` spaces (its PrettyFormatter)."""
    if indent is None or indent is False:
        return json.dumps(x, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(x, ensure_ascii=False, indent=2 if indent is True else int(indent))


class _FilterError(Exception):
    """A filter called with arguments the pinned engine refuses (the message is MiniJinja's)."""


def tojson_minijinja2(x: Any, *args: Any, **kwargs: Any) -> str:
    """MiniJinja 2.x's builtin: an optional ``indent``; any other keyword argument is an error."""
    indent = args[0] if args else kwargs.pop("indent", None)
    for key in kwargs:
        raise _FilterError(f"too many arguments: unknown keyword argument '{key}'")
    return _serde(x, indent).translate(_HTML_SAFE)


def tojson_serde_escaped(x: Any, *args: Any, **kwargs: Any) -> str:
    """Dynamo's ``tojson`` (tokcfg.rs): reads ``indent`` only, ignores other keyword arguments, escapes."""
    return _serde(x, kwargs.get("indent")).translate(_HTML_SAFE)


def tojson_python_spacing(x: Any, *args: Any, **kwargs: Any) -> str:
    """mistral.rs' ``tojson``: Python's separators without ``indent``, serde's pretty form with it, no escaping."""
    indent = kwargs.get("indent")
    if indent is not None:
        return _serde(x, indent)
    return json.dumps(x, ensure_ascii=False)


TOJSON: dict[str, Callable[..., str]] = {
    "python": tojson_python,
    "minijinja-2": tojson_minijinja2,
    "serde-escaped": tojson_serde_escaped,
    "python-spacing": tojson_python_spacing,
}
