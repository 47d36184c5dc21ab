"""Rewrites some stacks apply to a chat template's text before compiling it (named in a profile's ``rewrites``).

* ``tgi`` (router/src/infer/chat_template.rs:40-53 @db931fc): ``messages[0]['content'][0]['text']`` becomes
  ``messages[0]['content']`` (Gemma 3), ``[::-1]`` becomes ``|reverse`` (Qwen3), and the exact spellings
  ``{% generation %}`` / ``{% endgeneration %}`` are removed;
* ``mistral.rs`` (mistralrs-core/src/pipeline/chat_template.rs:463-468, 783-801 @9e92262): ``namespace(name=tcid if
  tcid else '')`` parenthesised, ``[::-1]`` becomes ``|reverse``, ``range(X, -1, -1)`` becomes
  ``range(X)|reverse``, GLM-4's ``meta`` lines removed, and every ``{% generation %}`` / ``{% endgeneration %}``
  tag (with or without ``-``) removed;
* ``dynamo`` (lib/llm/src/preprocessor/prompt/template/formatters.rs ``remove_known_non_jinja2_tags``): the exact
  spellings ``{% generation %}`` / ``{% endgeneration %}`` removed.

Most steps change nothing Jinja2 would render (``[::-1]`` and ``|reverse`` agree, Jinja2 renders a
``{% generation %}`` block's body): Jinja2's reference render of a stack's variables (TA802) then uses the
template as published and shares its compiled form; the steps that change what renders (``semantic``) are
applied to it too.
"""

from __future__ import annotations

import re
from collections.abc import Callable


def _gemma3_content(text: str) -> str:
    return text.replace("messages[0]['content'][0]['text']", "messages[0]['content']")


def _reverse_slice(text: str) -> str:
    return text.replace("[::-1]", "|reverse")


def _exact_generation(text: str) -> str:
    return text.replace("{% generation %}", "").replace("{% endgeneration %}", "")


def _namespace_parens(text: str) -> str:
    return text.replace("namespace(name=tcid if tcid else '')", "namespace(name=(tcid if tcid else ''))")


def _descending_range(text: str) -> str:
    return re.sub(r"range\((?P<expr>[^,]+),\s*-1,\s*-1\)", lambda m: f"range({m.group('expr')})|reverse", text)


def _glm_meta(text: str) -> str:
    if "{{ meta }}" in text:
        text = text.replace('{%- set meta = message.get("metadata", "") %}', "").replace("{{ meta }}", "")
    return text


def _any_generation(text: str) -> str:
    return re.sub(r"\{%-?\s*(?:end)?generation\s*-?%\}", "", text)


#: (step, changes what Jinja2 renders) per rewrite, in the stack's order.
REWRITES: dict[str, tuple[tuple[Callable[[str], str], bool], ...]] = {
    "tgi": ((_gemma3_content, True), (_reverse_slice, False), (_exact_generation, False)),
    "mistral.rs": (
        (_namespace_parens, False),
        (_reverse_slice, False),
        (_descending_range, False),
        (_glm_meta, True),
        (_any_generation, False),
    ),
    "dynamo": ((_exact_generation, False),),
}


def rewrite(text: str, names: tuple[str, ...], semantic_only: bool = False) -> str:
    """The text the stack compiles (``semantic_only``: only the steps that change what Jinja2 renders)."""
    for name in names:
        for step, semantic in REWRITES[name]:
            if semantic or not semantic_only:
                text = step(text)
    return text
