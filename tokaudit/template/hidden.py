"""Hidden instructions (TA851): text a template writes only when a message's content matches a string it tests for
(``{% if 'trigger' in message.content %}``), read from Jinja2's parse of the template, never rendered."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tokaudit.template.security import MAX_HITS, const_str, parse, walk_nodes


@dataclass(frozen=True)
class Hidden:
    """Text written only when a message's content matches: the strings the condition tests for, the text written,
    the condition's line and the text's line."""

    triggers: tuple[str, ...]
    text: str
    condition_line: int
    line: int


_STRING_METHODS = frozenset({"startswith", "endswith", "find", "rfind", "count", "index", "rindex", "__contains__"})


_MARKUP = re.compile(r"<\|[^|]{0,60}\|>|<[^<>\s]{1,40}>|\[/?[A-Z_]{2,40}\]|\{\{.*?\}\}")


_WORD = re.compile(r"[^\W\d_]{2,}")


#: Text the template writes must hold this many words to read as an instruction (markers, names, spaces do not).
MIN_WORDS = 3


def _mentions(node: Any, names: set[str]) -> bool:
    """Whether an expression reads a message's content: ``x.content``, ``x['content']`` or an alias of one."""
    from jinja2 import nodes

    for n in walk_nodes(node):
        if isinstance(n, nodes.Getattr) and n.attr == "content":
            return True
        if isinstance(n, nodes.Getitem) and const_str(n.arg) == "content":
            return True
        if isinstance(n, nodes.Name) and n.ctx == "load" and n.name in names:
            return True
    return False


def _content_aliases(tree: Any) -> set[str]:
    """Names set from a message's content (``{% set content = message['content'] | trim %}``), to a fixpoint."""
    from jinja2 import nodes

    names: set[str] = set()
    assigns = [
        (n.target.name, n.node)
        for n in walk_nodes(tree)
        if isinstance(n, nodes.Assign) and isinstance(n.target, nodes.Name)
    ]
    for _ in range(4):
        before = len(names)
        names |= {name for name, node in assigns if _mentions(node, names)}
        if len(names) == before:
            break
    return names


def _content_triggers(test: Any, names: set[str]) -> list[str]:
    """The strings a condition compares a message's content with (``'x' in content``, ``content.startswith('x')``,
    ``content == 'x'``); empty when it tests something else (its type, its length, a role, emptiness)."""
    from jinja2 import nodes

    out: list[str] = []
    for n in walk_nodes(test):
        if isinstance(n, nodes.Compare):
            operands = [n.expr] + [op.expr for op in n.ops]
            if not any(op.op in ("in", "notin", "eq", "ne") for op in n.ops):
                continue
            consts = [s for s in (const_str(o) for o in operands) if s is not None and s.strip()]
            if consts and any(_mentions(o, names) for o in operands if const_str(o) is None):
                out.extend(consts)
        elif isinstance(n, nodes.Call) and isinstance(n.node, nodes.Getattr) and n.node.attr in _STRING_METHODS:
            consts = [s for s in (const_str(a) for a in n.args) if s is not None and s.strip()]
            if consts and _mentions(n.node.node, names):
                out.extend(consts)
    return out


def _written(body: list[Any], assigned: dict[str, list[str]]) -> Iterator[tuple[str, int]]:
    """(literal text, line) a block writes: template text and string constants it outputs (not a raise_exception
    message), and string constants it assigns to names the template outputs somewhere."""
    from jinja2 import nodes

    for stmt in body:
        for n in walk_nodes(stmt):
            if isinstance(n, nodes.TemplateData):
                yield n.data, n.lineno
            elif isinstance(n, nodes.Output):
                for expr in n.nodes:
                    if isinstance(expr, nodes.TemplateData):
                        continue
                    yield from ((s, n.lineno) for s in _output_strings(expr))
            elif isinstance(n, nodes.Assign) and isinstance(n.target, nodes.Name) and n.target.name in assigned:
                yield from ((s, n.lineno) for s in _output_strings(n.node))


def _output_strings(expr: Any) -> Iterator[str]:
    from jinja2 import nodes

    stack = [expr]
    while stack:
        n = stack.pop()
        if isinstance(n, nodes.Call) and isinstance(n.node, nodes.Name) and n.node.name == "raise_exception":
            continue
        s = const_str(n)
        if s is not None:
            yield s
        stack.extend(c for c in n.iter_child_nodes() if isinstance(c, nodes.Node))


def _is_prose(text: str) -> bool:
    return len(_WORD.findall(_MARKUP.sub(" ", text))) >= MIN_WORDS


def hidden_instructions(text: str) -> list[Hidden]:
    from jinja2 import nodes

    tree = parse(text)
    if tree is None:
        return []
    names = _content_aliases(tree)
    output_names = {
        n.name
        for o in walk_nodes(tree)
        if isinstance(o, nodes.Output)
        for n in walk_nodes(o)
        if isinstance(n, nodes.Name) and n.ctx == "load"
    }
    assigned: dict[str, list[str]] = {name: [] for name in output_names}
    out: list[Hidden] = []
    for n in walk_nodes(tree):
        if not isinstance(n, nodes.If):
            continue
        triggers = _content_triggers(n.test, names)
        if not triggers:
            continue
        # the branch taken on a match and the one taken otherwise both depend on the content
        branches = [n.body, *[e.body for e in n.elif_], n.else_]
        for branch in branches:
            prose = [(s, line) for s, line in _written(branch, assigned) if _is_prose(s)]
            if prose:
                injected, line = prose[0]
                out.append(Hidden(tuple(dict.fromkeys(triggers)), " ".join(injected.split())[:200], n.lineno, line))
                break
        if len(out) >= MAX_HITS:
            break
    return out
