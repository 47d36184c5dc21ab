"""vLLM's OpenAI server: ``parse_chat_messages`` then transformers' ``apply_chat_template``.

Mirrored: vllm-project/vllm ``vllm/entrypoints/chat_utils.py`` @001eadcf (``_parse_chat_message_content``,
``_parse_chat_message_content_parts``, ``_postprocess_messages``, ``parse_chat_messages``), rendering through
transformers 5.24 (:mod:`tokaudit.template.stacks.transformers`):

* each message is rebuilt with role, content, and ``tool_calls`` (assistant), ``tool_call_id`` (tool),
  ``name`` (any role, when a string); other keys are not kept;
* content: ``null`` becomes an empty list of parts, then ``""`` for string-format templates, ``[]`` for
  openai-format ones; text parts are joined with ``"\\n"`` for string-format templates; for openai-format
  templates every content, a string too, becomes a list of ``{"type": "text", "text": ...}`` parts, except a tool
  result's, whose text parts are joined back with ``"\\n"`` (0.33.0 ``renderers/chat_utils/chat_message.py``
  ``parse_chat_message_content``, kept as parts only when one is not text). The format
  is the template's, detected from its AST (a loop over a message's content: ``_detect_content_format``);
* tool-call ``arguments`` (a JSON string) are parsed to a dict (``_postprocess_messages``; an empty one becomes
  ``{}``, one that does not parse fails the request);
* reasoning: only a message's ``reasoning`` is read, and written as ``reasoning`` and ``reasoning_content``: a
  client's ``reasoning_content`` does not reach the template;
* ``tools`` None without tools, ``documents`` and ``chat_template_kwargs`` passed; then transformers 5.24
  drops None-valued keys and aliases reasoning.
"""

from __future__ import annotations

from tokaudit.template.stacks.engines import JINJA2_TRANSFORMERS
from tokaudit.template.stacks.profile import PromptTokens, RequestRules, StackProfile

PROFILE = StackProfile(
    id="vllm",
    title="vLLM",
    version="0.33 (chat_utils.py @001eadcf) + transformers 5.24",
    source="vllm-project/vllm: vllm/entrypoints/chat_utils.py @001eadcf",
    engine=JINJA2_TRANSFORMERS,
    rules=RequestRules(
        generation_prompt="request",
        tools_when_absent="none",
        tool_schema="as-sent",
        null_content="by-format",
        tool_calls="keep",
        arguments="dict",
        parts="vllm",
        content_format="vllm",
        drop_none_keys=True,
        reasoning="vllm",
    ),
    differs=(
        'content null → "" (string-format templates) or [] (openai-format)',
        "arguments parsed to dicts",
        'text parts joined with "\\n" (string format); every content but a tool result\'s a list of parts (openai '
        "format)",
        "a client's reasoning_content dropped (only `reasoning` is read)",
    ),
    prompt_tokens=PromptTokens(
        add_special_tokens=False, source="ChatCompletionRequest.add_special_tokens defaults to False"
    ),
    parsers="vllm",
)
