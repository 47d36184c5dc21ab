"""Whether a stack's server starts the output inside reasoning, decided as that server decides it: from the chat
template's thinking toggle and the request's ``chat_template_kwargs``, not from the generation prompt's text.

- SGLang 0.5.23 (``parser/template_detection.py`` REASONING_MODE_RULES, read at start-up; per request
  ``OpenAIServingChat._get_reasoning_from_request``): the first rule whose test the template passes gives an always-on
  mode or a toggle (its kwarg and its default); with no rule, the reasoning parser's own default (its detector's
  ``reasoning_default``, :attr:`ReasoningParser.default`) and the request's kwargs decide.
- smg f8daa88 (``crates/tokenizer/src/chat_template.rs`` detect_thinking_toggle; ``should_mark_reasoning_started``):
  a template that names ``enable_thinking`` (or a ``thinking`` variable) has a toggle, on unless it sets it false;
  with no toggle the parser is never marked as started.

The rules are restated here as data and small tests on the template's text; each names the rule it stands for.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import jinja2
import jinja2.ext
import jinja2.nodes

from tokaudit.jinja_generation import Generation
from tokaudit.parsers.families import ReasoningParser


@dataclass(frozen=True)
class Toggle:
    """A template's thinking switch: ``param`` (the chat-template kwarg) and whether thinking is on when the request
    does not set it; or a ``special`` mode ("always", "mistral", "hunyuan_effort")."""

    param: str | None = None
    default_on: bool | None = None
    special: str | None = None


@lru_cache(maxsize=32)
def _default_filters(template: str) -> tuple[Any, ...]:
    """The template's ``default`` / ``d`` filter nodes (parsed once per template; none when Jinja cannot parse it)."""
    try:
        tree = jinja2.Environment(extensions=[jinja2.ext.loopcontrols, Generation]).parse(template)
    except Exception:  # noqa: BLE001 - a template Jinja cannot parse has no detectable toggle (as SGLang decides)
        return ()
    return tuple(n for n in tree.find_all(jinja2.nodes.Filter) if n.name in ("default", "d"))


def _defaults_to(template: str, param: str, value: bool) -> bool:
    """The template applies Jinja's ``default`` filter to ``param`` with a working toggle defaulting to ``value``
    (``{% set enable_thinking = enable_thinking | default(false) %}``); ``default(true, true)`` is no toggle (an
    explicit false becomes true). Read from the parsed template, so comments and strings do not count."""
    if param not in template or "default" not in template and "|d(" not in template.replace(" ", ""):
        return False
    for node in _default_filters(template):
        if node.dyn_args or node.dyn_kwargs:
            continue
        if not isinstance(node.node, jinja2.nodes.Name) or node.node.name != param or not node.args:
            continue
        first = node.args[0]
        if not isinstance(first, jinja2.nodes.Const) or not isinstance(first.value, bool):
            continue
        flag = node.args[1] if len(node.args) > 1 else next((k.value for k in node.kwargs if k.key == "boolean"), None)
        if flag is not None and not isinstance(flag, jinja2.nodes.Const):
            continue
        if flag is not None and bool(flag.value) and first.value:
            continue
        if first.value is value:
            return True
    return False


def _has(template: str, pattern: str, flags: int = 0) -> bool:
    return re.search(pattern, template, flags) is not None


def _explicit(param: str, value: str) -> str:
    return (
        rf"{{%\s*if\s+not\s+{param}\s+is\s+defined\s*%}}.*?{{%\s*set\s+{param}\s*=\s*(?:{value}|{value.title()})\s*%}}"
    )


def _default_true(template: str, param: str) -> bool:
    return (
        _has(template, _explicit(param, "true"), re.DOTALL)
        or _has(template, rf"set\s+{param}\s*=\s*{param}\s+if\s+{param}\s+is\s+defined\s+else\s+(?:true|True)")
        or _has(template, rf"{param}\s+is\s+defined\s+and\s+(?:{param}\s+is\s+false|not\s+{param})")
        or _has(template, rf"{param}\s+is\s+not\s+defined\s+or\s+{param}")
        or _has(template, rf"namespace\([^)]*{param}\s*=\s*true")
        or _defaults_to(template, param, True)
    )


def _glm53(t: str) -> bool:
    return (
        all(s in t for s in ("[gMASK]<sop>", "Reasoning Effort:", "<tool_call>", "<arg_key>", "<arg_value>"))
        and "enable_thinking" not in t
    )


#: SGLang 0.5.23's REASONING_MODE_RULES, in its order: (rule name, the toggle it gives, the test on the template).
SGLANG_RULES: tuple[tuple[str, Toggle, Callable[[str], bool]], ...] = (
    (
        "k2_v3_reasoning_effort",
        Toggle(special="always"),
        lambda t: all(s in t for s in ("<ifm|think>", "<ifm|think_fast>", "reasoning_effort")),
    ),
    ("gpt_oss_channel_markers", Toggle(special="always"), lambda t: "<|channel|>" in t),
    (
        "force_reasoning_pattern",
        Toggle(special="always"),
        lambda t: _has(t, r"<\|im_start\|>assistant\\n<think>\\n") and "thinking" not in t,
    ),
    ("glm53_always_think", Toggle(special="always"), _glm53),
    ("mistral_reasoning_effort", Toggle(special="mistral"), lambda t: "reasoning_effort" in t and "[THINK]" in t),
    (
        "hunyuan_reasoning_effort",
        Toggle(special="hunyuan_effort"),
        lambda t: all(s in t for s in ("reasoning_effort", "reasoning_mode_token", "no_think")),
    ),
    (
        "explicit_enable_thinking_default_false",
        Toggle("enable_thinking", False),
        lambda t: (
            _has(t, _explicit("enable_thinking", "false"), re.DOTALL) or _defaults_to(t, "enable_thinking", False)
        ),
    ),
    (
        "nemotron_3_super_low_effort",
        Toggle("enable_thinking", True),
        lambda t: "low_effort" in t and "truncate_history_thinking" in t,
    ),
    ("enable_thinking_default_true", Toggle("enable_thinking", True), lambda t: _default_true(t, "enable_thinking")),
    (
        "explicit_thinking_default_false",
        Toggle("thinking", False),
        lambda t: _has(t, _explicit("thinking", "false"), re.DOTALL) or _defaults_to(t, "thinking", False),
    ),
    ("thinking_default_true", Toggle("thinking", True), lambda t: _default_true(t, "thinking")),
)


@lru_cache(maxsize=32)
def sglang_toggle(template: str) -> tuple[str, Toggle] | None:
    """The first of SGLang's reasoning-mode rules the template passes: (rule name, toggle), or None."""
    return next(((name, toggle) for name, toggle, test in SGLANG_RULES if test(template)), None)


@lru_cache(maxsize=32)
def smg_toggle(template: str) -> Toggle | None:
    """smg's detect_thinking_toggle: the kwarg the template reads and its default, or None (no toggle)."""
    enable = "enable_thinking" in template
    # a `thinking` variable, not thinking_mode / thinking_budget
    variable = any(s in template for s in ("if thinking ", "thinking is ", "thinking ==", "set thinking "))
    if not enable and not variable:
        return None
    off = any(
        s in template
        for s in (
            "set thinking = false",
            "set thinking=false",
            "set enable_thinking = false",
            "set enable_thinking=false",
        )
    )
    return Toggle("enable_thinking" if enable else "thinking", not off)


def _toggle_on(toggle: Toggle, kwargs: dict[str, Any]) -> bool:
    """A toggle's value for a request: on by default unless the kwarg is False; off by default unless it is True."""
    value = kwargs.get(toggle.param or "")
    return value is not False if toggle.default_on else value is True


def _sglang_forces(parser: ReasoningParser, template: str, kwargs: dict[str, Any], effort: str | None) -> bool:
    found = sglang_toggle(template)
    if found is not None and found[1].special == "always":
        return True  # the template manager's force_reasoning
    if parser.name == "minimax-m3":  # its template prefills <mm:think> only for thinking_mode "enabled"
        return kwargs.get("thinking_mode") == "enabled"
    if parser.name == "hunyuan":  # the effort decides; unset counts as on only with Hy3's effort template
        off = (
            ("none", "no_think")
            if found is not None and found[1].special == "hunyuan_effort"
            else (None, "none", "no_think")
        )
        return effort not in off
    if found is None:  # no toggle in the template: the parser's own default
        mode = parser.default
        if mode == "always":
            return True
        if mode == "mistral":
            return effort not in (None, "none")
        if mode in ("thinking", "enable_thinking"):
            return _toggle_on(Toggle(mode, True), kwargs)
        if mode in ("explicit_thinking", "explicit_enable_thinking"):
            return _toggle_on(Toggle(mode[len("explicit_") :], False), kwargs)
        return False
    toggle = found[1]
    if toggle.special == "mistral":
        return effort not in (None, "none")
    if toggle.param is None or toggle.default_on is None:
        return False
    return _toggle_on(toggle, kwargs)


def forces_reasoning(
    parser: ReasoningParser | None, template: str | None, kwargs: dict[str, Any] | None, effort: str | None = None
) -> bool | None:
    """Whether the parser's server starts this request's output inside reasoning (SGLang: its force_reasoning; smg:
    mark_reasoning_started), or None where the stack decides it from the generation prompt (or the template is not
    known). ``effort``: the request's ``reasoning_effort`` (tokaudit's requests send none)."""
    if parser is None or template is None:
        return None
    kwargs = kwargs or {}
    if parser.stack == "sglang":
        return _sglang_forces(parser, template, kwargs, effort)
    if parser.stack == "smg":
        toggle = smg_toggle(template)
        return toggle is not None and _toggle_on(toggle, kwargs)
    return None
