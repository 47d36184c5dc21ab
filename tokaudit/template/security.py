"""Static security reading of chat templates and strings: nothing is rendered.

* :func:`injection_patterns`: what sandbox-escape and introspection payloads look like in Jinja (underscore
  attributes and keys, ``|attr`` with a computed or underscore name, ``self``, attributes of the engine's own
  globals, ``include``/``import``/``extends``, str.format fields that reach attributes), read from Jinja2's parse
  tree (``env.parse``; a template Jinja2 cannot parse is read from its token stream instead).
* :func:`hidden_instructions`: prose the template writes only when a message's content matches a string.
* :func:`invisible_characters`: bidi controls, zero-width and tag characters, minus their legitimate uses (emoji
  sequences, joiners inside words of scripts that use them, marks inside right-to-left text).

Every walk is bounded (:data:`MAX_NODES` parse-tree nodes, :data:`MAX_TOKENS` tokens, :data:`MAX_CHARS` characters
parsed, :data:`MAX_HITS` results).
"""

from __future__ import annotations

import re
import unicodedata
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


@dataclass(frozen=True)
class Hidden:
    """Text written only when a message's content matches: the strings the condition tests for, the text written,
    the condition's line and the text's line."""

    triggers: tuple[str, ...]
    text: str
    condition_line: int
    line: int


@dataclass(frozen=True)
class Invisible:
    """One invisible character: 1-based line and column, the code point, its name and class."""

    line: int
    column: int
    codepoint: int
    name: str
    kind: str

    @property
    def label(self) -> str:
        return f"U+{self.codepoint:04X} {self.name}"

    def to_json(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "column": self.column,
            "codepoint": f"U+{self.codepoint:04X}",
            "name": self.name,
            "class": self.kind,
        }


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


def _walk(node: Any) -> Iterator[Any]:
    """Every node under ``node`` (itself included), depth first, at most MAX_NODES."""
    from jinja2 import nodes

    stack = [node]
    seen = 0
    while stack and seen < MAX_NODES:
        n = stack.pop()
        seen += 1
        yield n
        stack.extend(reversed([c for c in n.iter_child_nodes() if isinstance(c, nodes.Node)]))


def _const_str(node: Any) -> str | None:
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

    for n in _walk(tree):
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
            fmt = _const_str(n.node.node)
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


# ---- hidden-instruction ------------------------------------------------------------------------------------------------

_STRING_METHODS = frozenset({"startswith", "endswith", "find", "rfind", "count", "index", "rindex", "__contains__"})
_MARKUP = re.compile(r"<\|[^|]{0,60}\|>|<[^<>\s]{1,40}>|\[/?[A-Z_]{2,40}\]|\{\{.*?\}\}")
_WORD = re.compile(r"[^\W\d_]{2,}")
#: Text the template writes must hold this many words to read as an instruction (markers, names, spaces do not).
MIN_WORDS = 3


def _mentions(node: Any, names: set[str]) -> bool:
    """Whether an expression reads a message's content: ``x.content``, ``x['content']`` or an alias of one."""
    from jinja2 import nodes

    for n in _walk(node):
        if isinstance(n, nodes.Getattr) and n.attr == "content":
            return True
        if isinstance(n, nodes.Getitem) and _const_str(n.arg) == "content":
            return True
        if isinstance(n, nodes.Name) and n.ctx == "load" and n.name in names:
            return True
    return False


def _content_aliases(tree: Any) -> set[str]:
    """Names set from a message's content (``{% set content = message['content'] | trim %}``), to a fixpoint."""
    from jinja2 import nodes

    names: set[str] = set()
    assigns = [
        (n.target.name, n.node) for n in _walk(tree) if isinstance(n, nodes.Assign) and isinstance(n.target, nodes.Name)
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
    for n in _walk(test):
        if isinstance(n, nodes.Compare):
            operands = [n.expr] + [op.expr for op in n.ops]
            if not any(op.op in ("in", "notin", "eq", "ne") for op in n.ops):
                continue
            consts = [s for s in (_const_str(o) for o in operands) if s is not None and s.strip()]
            if consts and any(_mentions(o, names) for o in operands if _const_str(o) is None):
                out.extend(consts)
        elif isinstance(n, nodes.Call) and isinstance(n.node, nodes.Getattr) and n.node.attr in _STRING_METHODS:
            consts = [s for s in (_const_str(a) for a in n.args) if s is not None and s.strip()]
            if consts and _mentions(n.node.node, names):
                out.extend(consts)
    return out


def _written(body: list[Any], assigned: dict[str, list[str]]) -> Iterator[tuple[str, int]]:
    """(literal text, line) a block writes: template text and string constants it outputs (not a raise_exception
    message), and string constants it assigns to names the template outputs somewhere."""
    from jinja2 import nodes

    for stmt in body:
        for n in _walk(stmt):
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
        s = _const_str(n)
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
        for o in _walk(tree)
        if isinstance(o, nodes.Output)
        for n in _walk(o)
        if isinstance(n, nodes.Name) and n.ctx == "load"
    }
    assigned: dict[str, list[str]] = {name: [] for name in output_names}
    out: list[Hidden] = []
    for n in _walk(tree):
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


# ---- invisible-characters --------------------------------------------------------------------------------------------

_BIDI_CONTROLS = frozenset(range(0x202A, 0x202F)) | frozenset(range(0x2066, 0x206A))
_BIDI_MARKS = frozenset({0x200E, 0x200F, 0x061C})
_ZERO_WIDTH = frozenset({0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF, 0x180E, 0x2061, 0x2062, 0x2063, 0x2064})
_INVISIBLE = re.compile(
    "[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\u200b-\u200d\u2060-\u2064\ufeff\u180e\U000e0000-\U000e007f]"
)
#: The same characters as they appear escaped in a JSON file (``\\u200b``; tag characters as surrogate pairs).
JSON_ESCAPED = re.compile(
    rb"\\u(?:202[a-eA-E]|206[6-9]|200[b-fB-F]|061[cC]|206[0-4]|[fF][eE][fF][fF]|180[eE]|[dD][bB]40\\u[dD][cC][0-7])"
)
_CHARS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u180e"
UTF8_INVISIBLE = re.compile(
    b"|".join(re.escape(c.encode("utf-8")) for c in _CHARS) + rb"|\xf3\xa0[\x80\x81][\x80-\xbf]"
)


def has_invisible_bytes(data: bytes) -> bool:
    """A quick test on a file's bytes (UTF-8 or JSON-escaped) before it is decoded and walked."""
    return bool(UTF8_INVISIBLE.search(data) or JSON_ESCAPED.search(data))


def _kind(cp: int) -> str:
    if cp in _BIDI_CONTROLS:
        return "bidi-control"
    if cp in _BIDI_MARKS:
        return "bidi-mark"
    if 0xE0000 <= cp <= 0xE007F:
        return "tag"
    if cp == 0xFEFF:
        return "byte-order-mark"
    return "zero-width"


def _pictographic(c: str) -> bool:
    cp = ord(c)
    return (
        unicodedata.category(c) == "So"
        or 0x1F000 <= cp <= 0x1FAFF
        or 0x1F3FB <= cp <= 0x1F3FF
        or cp in (0xFE0F, 0x20E3)
    )


def _script_letter(c: str) -> bool:
    """A letter or mark outside Latin, Greek and Cyrillic: scripts whose words use joiners (Persian, Indic...)."""
    return unicodedata.category(c)[0] in "LM" and ord(c) > 0x052F


def _legitimate(text: str, i: int, cp: int) -> bool:
    before = text[i - 1] if i > 0 else ""
    after = text[i + 1] if i + 1 < len(text) else ""
    if cp == 0x200D and before and after and (_pictographic(before) or _pictographic(after)):
        return True  # an emoji ZWJ sequence (👨‍👩‍👧)
    if cp in (0x200C, 0x200D) and before and after and _script_letter(before) and _script_letter(after):
        return True  # a joiner inside a word (Persian, Devanagari...)
    if cp in _BIDI_MARKS and any(c and unicodedata.bidirectional(c) in ("R", "AL") for c in (before, after)):
        return True  # a mark inside right-to-left text
    if 0xE0000 <= cp <= 0xE007F:
        j = i
        while j > 0 and 0xE0000 <= ord(text[j - 1]) <= 0xE007F:
            j -= 1
        return j > 0 and text[j - 1] == "\U0001f3f4"  # a flag tag sequence (England, Scotland, Wales)
    return False


def invisible_characters(text: str) -> list[Invisible]:
    """Every invisible character of ``text`` that is not one of its legitimate uses, at most MAX_HITS."""
    out: list[Invisible] = []
    for m in _INVISIBLE.finditer(text):
        i, cp = m.start(), ord(m.group())
        if _legitimate(text, i, cp):
            continue
        line = text.count("\n", 0, i) + 1
        column = i - (text.rfind("\n", 0, i) + 1) + 1
        out.append(Invisible(line, column, cp, unicodedata.name(m.group(), f"U+{cp:04X}"), _kind(cp)))
        if len(out) >= MAX_HITS:
            break
    return out
