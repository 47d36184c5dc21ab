"""Static security reading of chat templates and strings: nothing is rendered.

* :func:`injection_patterns`: what sandbox-escape and introspection payloads look like in Jinja (underscore
  attributes and keys, ``|attr`` with a computed or underscore name, ``self``, attributes of the engine's own
  globals, ``include``/``import``/``extends``, str.format fields that reach attributes), read from Jinja2's parse
  tree (``env.parse``; a template Jinja2 cannot parse is read from its token stream instead).
* :func:`~tokaudit.template.hidden.hidden_instructions`: prose the template writes only when a message's content
  matches a string.
* :func:`~tokaudit.template.invisible.invisible_characters`: bidi controls, zero-width and tag characters, minus
  their legitimate uses (emoji sequences, joiners inside words of scripts that use them, marks inside right-to-left
  text).

Every walk is bounded (:data:`MAX_NODES` parse-tree nodes, :data:`MAX_TOKENS` tokens, :data:`MAX_CHARS` characters
parsed, :data:`MAX_HITS` results).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

MAX_NODES = 200_000
MAX_TOKENS = 500_000
MAX_HITS = 50
#: Templates longer than this are read from the token stream of their first MAX_CHARS characters only (real chat
#: templates are under 50 KB; Jinja2's parser is not bounded in time on megabytes).
MAX_CHARS = 1_000_000

#: Attributes whose only use in a template is reaching Python internals.
INTROSPECTION_ATTRS = frozenset(
    {
        "mro",
        "func_globals",
        "func_code",
        "f_globals",
        "f_locals",
        "f_back",
        "f_builtins",
        "f_code",
        "gi_frame",
        "gi_code",
        "cr_frame",
        "cr_code",
        "ag_frame",
        "co_code",
        "tb_frame",
        "tb_next",
        "im_func",
        "im_self",
    }
)
#: The engines' own callables: a template calls them; reading an attribute of one is introspection.
ENGINE_GLOBALS = frozenset(
    {"cycler", "joiner", "lipsum", "namespace", "range", "dict", "raise_exception", "strftime_now"}
)
#: Filters that take an attribute name (first positional argument or ``attribute=``).
ATTRIBUTE_FILTERS = frozenset({"map", "selectattr", "rejectattr", "sort", "groupby", "sum", "unique", "min", "max"})
_FORMAT_FIELD = re.compile(r"\{[^{}]*[.\[][^{}]*\}")


@dataclass(frozen=True)
class Pattern:
    """One injection pattern: its kind, the text that shows it, the template line."""

    kind: str
    text: str
    line: int


# ---- parsing -----------------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _environment() -> Any:
    import jinja2
    from jinja2.ext import Extension

    class Generation(Extension):
        """transformers' ``{% generation %}`` tag: its body, as a plain block (parse only)."""

        tags = {"generation"}

        def parse(self, parser: Any) -> Any:
            next(parser.stream)
            return parser.parse_statements(("name:endgeneration",), drop_needle=True)

    # the options transformers renders with: the literal text (TemplateData) is what the prompt gets
    return jinja2.Environment(
        trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols", "jinja2.ext.do", Generation]
    )


@lru_cache(maxsize=32)
def parse(text: str) -> Any:
    """Jinja2's parse tree of a template, or None when Jinja2 cannot parse it (deeply nested: RecursionError too)."""
    import jinja2

    if len(text) > MAX_CHARS:
        return None
    try:
        return _environment().parse(text)
    except (jinja2.TemplateSyntaxError, RecursionError, MemoryError):
        return None


def walk_nodes(node: Any) -> Iterator[Any]:
    """Every node under ``node`` (itself included), depth first, at most MAX_NODES."""
    from jinja2 import nodes

    stack = [node]
    seen = 0
    while stack and seen < MAX_NODES:
        n = stack.pop()
        seen += 1
        yield n
        stack.extend(reversed([c for c in n.iter_child_nodes() if isinstance(c, nodes.Node)]))


def const_str(node: Any) -> str | None:
    from jinja2 import nodes

    return node.value if isinstance(node, nodes.Const) and isinstance(node.value, str) else None


def _folded(node: Any, depth: int = 0) -> str | None:
    """A string built from constants only (``'__cla' ~ 'ss__'``, ``'__cla' + 'ss__'``, ``['__', 'class', '__']|join``):
    how payloads spell a name that no constant holds."""
    from jinja2 import nodes

    if depth > 50:
        return None
    if isinstance(node, nodes.Const):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, nodes.Concat):
        parts = [_folded(n, depth + 1) for n in node.nodes]
        folded = [p for p in parts if p is not None]
        return "".join(folded) if len(folded) == len(parts) else None
    if isinstance(node, nodes.Add):
        left, right = _folded(node.left, depth + 1), _folded(node.right, depth + 1)
        return None if left is None or right is None else left + right
    if isinstance(node, nodes.Filter) and node.name == "join" and isinstance(node.node, nodes.List) and not node.kwargs:
        sep = _folded(node.args[0], depth + 1) if node.args else ""
        items = [_folded(n, depth + 1) for n in node.node.items]
        folded = [i for i in items if i is not None]
        return None if sep is None or len(folded) != len(items) else sep.join(folded)
    return None


# ---- template-injection --------------------------------------------------------------------------------------------


def injection_patterns(text: str) -> list[Pattern]:
    tree = parse(text)
    found = _tree_patterns(tree) if tree is not None else _token_patterns(text)
    out: dict[tuple[str, str, int], Pattern] = {}
    for p in found:
        out.setdefault((p.kind, p.text, p.line), p)
        if len(out) >= MAX_HITS:
            break
    return sorted(out.values(), key=lambda p: (p.line, p.kind, p.text))


def _tree_patterns(tree: Any) -> Iterator[Pattern]:
    from jinja2 import nodes

    for n in walk_nodes(tree):
        line = getattr(n, "lineno", 0) or 0
        if isinstance(n, nodes.Getattr):
            if n.attr.startswith("_"):
                yield Pattern("underscore-attribute", f".{n.attr}", line)
            elif n.attr in INTROSPECTION_ATTRS:
                yield Pattern("introspection-attribute", f".{n.attr}", line)
            if isinstance(n.node, nodes.Name) and n.node.name in ENGINE_GLOBALS:
                yield Pattern("engine-global-attribute", f"{n.node.name}.{n.attr}", line)
        elif isinstance(n, nodes.Getitem):
            key = _folded(n.arg)
            if key is not None and key.startswith("__"):
                spelled = "" if isinstance(n.arg, nodes.Const) else " (spelled from pieces)"
                yield Pattern("underscore-key", f"[{key!r}]{spelled}", line)
        elif isinstance(n, nodes.Filter) and n.name == "attr":
            arg = n.args[0] if n.args else None
            name = _folded(arg) if arg is not None else None
            if name is None:
                yield Pattern("attr-filter", "|attr(<computed name>)", line)
            elif name.startswith("_") or name in INTROSPECTION_ATTRS:
                yield Pattern("attr-filter", f"|attr({name!r})", line)
        elif isinstance(n, nodes.Filter) and n.name in ATTRIBUTE_FILTERS:
            values = [_folded(a) for a in n.args[:1]] + [_folded(k.value) for k in n.kwargs if k.key == "attribute"]
            for name in values:
                if name is not None and (name.startswith("_") or ("._" in name)):
                    yield Pattern("attribute-argument", f"|{n.name}({name!r})", line)
        elif isinstance(n, nodes.Name) and n.ctx == "load" and (n.name == "self" or n.name.startswith("__")):
            yield Pattern("underscore-name" if n.name != "self" else "self", n.name, line)
        elif isinstance(n, (nodes.Include, nodes.Import, nodes.FromImport, nodes.Extends)):
            yield Pattern(type(n).__name__.lower(), f"{{% {type(n).__name__.lower()} %}}", line)
        elif (
            isinstance(n, nodes.Call) and isinstance(n.node, nodes.Getattr) and n.node.attr in ("format", "format_map")
        ):
            fmt = const_str(n.node.node)
            field = _FORMAT_FIELD.search(fmt) if fmt is not None else None
            if field:
                yield Pattern("format-field", field.group()[:40], line)


def _token_patterns(text: str) -> Iterator[Pattern]:
    """The same patterns, as far as the token stream shows them (a template Jinja2's parser refuses)."""
    import jinja2

    previous: list[tuple[int, str, str]] = []
    try:
        for i, (line, kind, value) in enumerate(_environment().lex(text[:MAX_CHARS])):
            if i >= MAX_TOKENS:
                return
            last = previous[-1] if previous else None
            if kind == "name":
                if last and last[2] == "." and (value.startswith("_") or value in INTROSPECTION_ATTRS):
                    yield Pattern(
                        "underscore-attribute" if value.startswith("_") else "introspection-attribute",
                        f".{value}",
                        line,
                    )
                elif last and last[2] == "|" and value == "attr":
                    yield Pattern("attr-filter", "|attr(...)", line)
                elif last and last[1] == "block_begin" and value in ("include", "import", "extends", "from"):
                    yield Pattern(value if value != "from" else "fromimport", f"{{% {value} %}}", line)
                elif value == "self" or value.startswith("__"):
                    yield Pattern("self" if value == "self" else "underscore-name", value, line)
            elif kind == "string" and value.strip("'\"").startswith("__") and last and last[2] == "[":
                yield Pattern("underscore-key", f"[{value}]", line)
            if kind != "whitespace":
                previous = previous[-1:] + [(line, kind, value)]
    except jinja2.TemplateSyntaxError:
        return
