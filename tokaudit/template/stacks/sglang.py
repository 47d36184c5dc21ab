"""SGLang's Python server (``python -m sglang.launch_server``): ``OpenAIServingChat._apply_jinja_template``.

Mirrored: sglang 0.5.23 (the PyPI wheel), ``sglang/srt/entrypoints/openai/serving_chat.py:2011-2230``,
``protocol.py:754-800``, ``parser/jinja_template_utils.py:220-340``, rendering through transformers 5.19.0 (its
pin), whose ``apply_chat_template`` neither drops None-valued keys nor aliases reasoning:

* messages are the request's pydantic models dumped (``msg.model_dump()``): a user message keeps role and
  content only; other roles role, content, tool_call_id, name, reasoning_content, tool_calls (and ``phase``,
  ``tools``, ``prefix``) — then every top-level None-valued key is dropped
  (``process_content_for_template_format``);
* content ``null`` becomes ``""``; a list of parts is joined with ``" "`` for string-format templates and kept
  as text parts for openai-format ones (``detect_jinja_template_content_format``: the words image / audio /
  video / vision anywhere, or a loop over ``message``/``msg``/``m``'s content); a tool message's parts are
  joined with ``" "`` (``normalize_tool_content``);
* tool-call ``arguments`` are parsed and must be a JSON object (``normalize_assistant_tool_call_arguments``,
  strict);
* ``tools`` None without tools (or with tool_choice none); ``chat_template_kwargs`` and ``reasoning_effort``
  passed; ``add_generation_prompt`` on.

Not emulated: the nested ``"index": None`` a dumped tool call carries; the tool-result reordering some
templates get (``jinja_template_may_reorder_tool_results``); DeepSeek V3.2 / V4 / Kimi K3's Python encoders.
"""

from __future__ import annotations

from tokaudit.template.stacks.engines import JINJA2_TRANSFORMERS
from tokaudit.template.stacks.profile import PromptTokens, RequestRules, StackProfile

PROFILE = StackProfile(
    id="sglang",
    title="SGLang",
    version="0.5.23 (serving_chat.py) + transformers 5.19.0",
    source="sgl-project/sglang: python/sglang/srt/entrypoints/openai/serving_chat.py, parser/jinja_template_utils.py "
    "(PyPI wheel 0.5.23)",
    engine=JINJA2_TRANSFORMERS,
    rules=RequestRules(
        generation_prompt="always",
        tools_when_absent="none",
        tool_schema="as-sent",
        null_content="empty-string",
        tool_calls="keep",
        arguments="object",
        parts="sglang",
        content_format="sglang",
        name_roles=("system", "assistant", "tool"),
        drop_none_keys=True,
        reasoning="keep",
    ),
    differs=(
        'content null → ""',
        'text parts joined with " " (string format)',
        "arguments parsed (must be an object)",
        "a user message's name dropped",
        "no None-key dropping or reasoning aliases (transformers 5.19)",
    ),
    prompt_tokens=PromptTokens(
        add_special_tokens=False,
        source="serving_chat.py: add_special_tokens=False when encode('') returns special tokens",
    ),
    parsers="sglang",
)
