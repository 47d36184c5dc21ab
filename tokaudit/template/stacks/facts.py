"""What the stacks read from a template's text before rendering it: the content format vLLM, SGLang and smg
detect (whether content reaches the template as a string or a list of parts), and the variables the template
reads (a variable it never names cannot change its output, so contexts are compared without it).

A pure function of the text, computed once per template with Jinja2's parser (never rendered)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TemplateFacts:
    #: vLLM's ``_detect_content_format`` (smg's detector agrees on the templates tokaudit has seen): ``string`` or
    #: ``openai``.
    vllm_format: str
    #: SGLang's ``detect_jinja_template_content_format``.
    sglang_format: str
    #: The variables the template reads (None when Jinja2 cannot parse it: every variable is kept).
    variables: frozenset[str] | None


_FACTS: dict[str, TemplateFacts] = {}


def template_facts(text: str, ast: Any = None) -> TemplateFacts:
    """The facts of a template (cached per text); ``ast``: Jinja2's parse of it when the caller has one, None
    when it does not parse."""
    hit = _FACTS.get(text)
    if hit is None:
        if len(_FACTS) > 64:
            _FACTS.clear()
        hit = _FACTS[text] = _facts(text, ast if ast is not None else _parse(text))
    return hit


def unparsed_facts(text: str) -> TemplateFacts:
    """The facts of a template Jinja2 cannot parse (or that is not parsed): every variable kept."""
    return TemplateFacts("string", _sglang_keywords(text) or "string", None)


def _facts(text: str, ast: Any) -> TemplateFacts:
    if ast is None:
        return unparsed_facts(text)
    import jinja2.meta

    try:
        variables: frozenset[str] | None = frozenset(jinja2.meta.find_undeclared_variables(ast))
    except Exception:  # noqa: BLE001 - a template Jinja2 parses but cannot analyse keeps every variable
        variables = None
    return TemplateFacts(_vllm_format(ast), _sglang_keywords(text) or _sglang_format(ast), variables)


def _parse(text: str) -> Any:
    from tokaudit.template.engine_jinja2 import jinja_parse

    try:
        return jinja_parse(text)
    except Exception:  # noqa: BLE001 - a template Jinja2 cannot parse: its facts are the defaults
        return None


def _unwrap(node: Any) -> Any:
    """Through filters, tests and slices to the value they apply to (as the detectors do)."""
    import jinja2.nodes as n

    while True:
        if isinstance(node, (n.Filter, n.Test)) and node.node is not None:
            node = node.node
        elif isinstance(node, n.Getitem) and isinstance(node.arg, n.Slice):
            node = node.node
        else:
            return node


def _content_of(node: Any, names: set[str]) -> bool:
    """``X.content`` / ``X['content']`` for X one of ``names``."""
    import jinja2.nodes as n

    node = _unwrap(node)
    if isinstance(node, n.Getattr) and node.attr == "content":
        base = node.node
    elif isinstance(node, n.Getitem) and isinstance(node.arg, n.Const) and node.arg.value == "content":
        base = node.node
    else:
        return False
    return isinstance(base, n.Name) and base.name in names


def _vllm_format(ast: Any) -> str:
    """``openai`` when a loop iterates a message's content (the message being a loop variable over
    ``messages``, or the content first assigned to a variable); else ``string``."""
    import jinja2.nodes as n

    message_vars = {"message"}
    for loop in ast.find_all(n.For):
        it = _unwrap(loop.iter)
        if isinstance(it, n.Name) and it.name == "messages" and isinstance(loop.target, n.Name):
            message_vars.add(loop.target.name)
    content_vars = set()
    for assign in ast.find_all(n.Assign):
        if isinstance(assign.target, n.Name) and _content_of(assign.node, message_vars):
            content_vars.add(assign.target.name)
    for loop in ast.find_all(n.For):
        it = _unwrap(loop.iter)
        if _content_of(it, message_vars) or (isinstance(it, n.Name) and it.name in content_vars):
            return "openai"
    return "string"


def _sglang_keywords(text: str) -> str | None:
    return "openai" if any(word in text for word in ("image", "audio", "video", "vision")) else None


def _sglang_format(ast: Any) -> str:
    import jinja2.nodes as n

    for loop in ast.find_all(n.For):
        if _content_of(loop.iter, {"message", "msg", "m"}):
            return "openai"
    return "string"
