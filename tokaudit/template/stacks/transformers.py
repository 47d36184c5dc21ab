"""transformers: ``tokenizer.apply_chat_template(messages, tools=..., add_generation_prompt=..., **kwargs)``.

Mirrored: transformers 5.24.0 (the wheel on PyPI), ``src/transformers/tokenization_utils_base.py`` and
``src/transformers/utils/chat_template_utils.py``:

* every message's None-valued keys are dropped (``_normalize_chat_messages``, chat_template_utils.py:711-724,
  called at tokenization_utils_base.py:3161): an assistant turn's ``content: null`` is absent;
* a message's reasoning, under ``reasoning_content``, ``thinking`` or ``reasoning``, is set under all of
  ``thinking``, ``reasoning_content`` and the name it came in (``_alias_reasoning_fields``, :677-686);
* the variables are the messages, ``tools`` (None without tools), ``documents`` (None),
  ``add_generation_prompt`` and the caller's keyword arguments over ``self.special_tokens_map`` (:3176): the
  named special tokens a file sets (absent ones are undefined);
* the engine: the sandbox of :data:`~tokaudit.template.stacks.engines.JINJA2_TRANSFORMERS`.

The caller: tool-call ``arguments`` are passed as dicts, as transformers' chat-template documentation asks
("arguments should be a dict"); content, tools and names as the request has them. A client that passes the
wire format's JSON-string arguments unchanged gets what vLLM's parsing spares the others.
"""

from __future__ import annotations

from tokaudit.template.stacks.engines import JINJA2_TRANSFORMERS
from tokaudit.template.stacks.profile import PromptTokens, RequestRules, StackProfile

PROFILE = StackProfile(
    id="transformers",
    title="transformers",
    version="5.24.0 (apply_chat_template)",
    source="huggingface/transformers: tokenization_utils_base.py, utils/chat_template_utils.py (PyPI wheel 5.24.0)",
    engine=JINJA2_TRANSFORMERS,
    rules=RequestRules(
        generation_prompt="request",
        tools_when_absent="none",
        tool_schema="as-sent",
        null_content="keep",
        tool_calls="keep",
        arguments="dict-if-parses",
        parts="raw",
        drop_none_keys=True,
        reasoning="aliases",
    ),
    differs=(
        "content null dropped (None-valued keys removed)",
        "arguments as dicts (its documented convention)",
        "content parts passed as a list",
        "reasoning aliased as reasoning_content / thinking / reasoning",
    ),
    prompt_tokens=PromptTokens(add_special_tokens=False, source="tokenization_utils_base.py:3197 (tokenize=True)"),
)
