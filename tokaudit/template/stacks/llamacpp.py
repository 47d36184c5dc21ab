"""llama.cpp's server (``llama-server --jinja``): ``common_chat_templates_apply`` with llama.cpp's own Jinja
engine (``common/jinja``).

Mirrored: llama.cpp as vendored in llama-cpp-python 0.3.36 (the pinned sdist), ``common/chat.cpp``:

* variables (``common_chat_template_direct_apply_impl``, chat.cpp:905-967): messages (normalized for the
  template's capabilities), ``bos_token``, ``eos_token``, ``enable_thinking`` (true unless the request turns
  it off), ``tools`` only when the request has some, ``add_generation_prompt`` only when true, then
  ``chat_template_kwargs``; a leading BOS is cut from the rendered text when the vocabulary adds one
  (:959-961);
* messages (``common_chat_msg::to_json_oaicompat``, :225-262): content ``""`` when null, reasoning_content,
  name, tool_call_id, tool_calls with ``arguments`` as the JSON string.

tokaudit renders this profile with llama.cpp itself (:mod:`tokaudit.template.llamacpp_engine`, built once per
machine from the sdist): the request goes through llama-server's own request parsing and ``common_chat_templates_apply``
(content parts, developer→system, the system-role and null-content workarounds, the specialised handlers,
``reasoning_format`` deepseek, ``prefill_assistant``), so the rules below document what the engine is given; they are
not applied by tokaudit. Without a compiler or the sdist the profile is not checked (the reason is shown).
"""

from __future__ import annotations

from tokaudit.template.renders import EngineConfig
from tokaudit.template.stacks.profile import PromptTokens, RequestRules, StackProfile

ENGINE = EngineConfig(
    kind="llama.cpp", name="llama.cpp-jinja", pins="llama.cpp's common/jinja (llama-cpp-python 0.3.36)"
)

PROFILE = StackProfile(
    id="llama.cpp",
    title="llama.cpp server",
    version="llama-cpp-python 0.3.36's vendored llama.cpp",
    source="ggml-org/llama.cpp: common/chat.cpp, common/jinja (sdist llama_cpp_python-0.3.36)",
    engine=ENGINE,
    rules=RequestRules(
        generation_prompt="request",
        tools_when_absent="undefined",
        tool_schema="as-sent",
        null_content="empty-string",
        tool_calls="keep",
        arguments="as-sent",
        parts="raw",
        reasoning="keep",
        special_tokens=("bos_token", "eos_token"),
        documents=False,
        fixed=(("enable_thinking", True),),
    ),
    differs=(
        "its own Jinja engine, after llama-server's own message normalisation",
        "tools absent without tools",
        "enable_thinking always set",
        "a leading BOS cut from the prompt",
    ),
    prompt_tokens=PromptTokens(add_special_tokens=True, strips_leading_bos=True, source="common/chat.cpp:959-961"),
    parsers="llama.cpp",
)
