"""Dynamo's frontend (``python -m dynamo.frontend``): the default Rust preprocessor's MiniJinja formatter.

Mirrored: ai-dynamo/dynamo ``lib/llm/src/preprocessor/prompt/template/`` — formatters.rs @074c2b53,
tokcfg.rs @4c42d740, and the oai.rs that parses tool-call arguments (``normalize_tool_arguments_in_messages``)
and adds the generation prompt unless the last message is the assistant's — with the workspace of 1.2.0
(Cargo.toml @0230a315), which builds smg's ``llm-tokenizer`` crate and so unifies MiniJinja to 2.21 with
loop_controls and preserve_order:

* messages are the async-openai request types serialized (None fields skipped): an assistant turn's
  ``content: null`` is absent, a tool message keeps content and tool_call_id (no name); text-only part lists
  are joined with ``"\\n"`` (``may_be_fix_msg_content``); ``arguments`` are parsed when they are JSON;
* ``tools`` is none without tools (``context!`` of an Option); a ``parameters`` object without ``type`` /
  ``properties`` gets them (``may_be_fix_tool_schema``); bos/eos/unk from tokenizer_config.json (none when
  absent); ``chat_template_kwargs`` merged last;
* the engine (formatters.rs ``with_options``): trim/lstrip, pycompat, ``raise_exception``, ``strftime_now``,
  a ``length`` filter that gives 0 for none and undefined, and its own ``tojson`` (tokcfg.rs: serde_json,
  compact, HTML-escaping ``< > & '``, ``indent`` only); the exact ``{% generation %}`` spellings removed.

With ``--dyn-chat-processor vllm`` the frontend preprocesses with vLLM's own code instead: the ``vllm`` profile.
Not emulated: reasoning injected as ``<think>`` blocks for templates that do not read ``reasoning_content``
(formatters.rs ``template_handles_reasoning``); reasoning_content is assumed not to reach the template.
"""

from __future__ import annotations

from tokaudit.template.renders import EngineConfig
from tokaudit.template.stacks.profile import RequestRules, StackProfile

ENGINE = EngineConfig(
    kind="minijinja",
    name="minijinja-dynamo",
    pins="MiniJinja 2.x (Dynamo 1.2)",
    tojson="serde-escaped",
    generation_tag=False,
    length_of_none_is_zero=True,
)

PROFILE = StackProfile(
    id="dynamo",
    title="Dynamo",
    version="1.2.0 (Rust preprocessor)",
    source="ai-dynamo/dynamo: lib/llm/src/preprocessor/prompt/template/{formatters,tokcfg,oai}.rs",
    engine=ENGINE,
    rules=RequestRules(
        generation_prompt="always",
        tools_when_absent="none",
        tool_schema="dynamo",
        null_content="drop",
        tool_calls="keep",
        arguments="dict-if-parses",
        parts="join-newline",
        name_roles=("system", "user", "assistant"),
        reasoning="drop",
        special_tokens=("bos_token", "eos_token", "unk_token"),
        missing_special_token="none",
        documents=False,
    ),
    rewrites=("dynamo",),
    differs=(
        "MiniJinja with an HTML-escaping, compact tojson",
        "length of none is 0",
        "content null absent",
        "a tool message's name dropped",
        "reasoning_content not passed",
    ),
    parsers="dynamo",
)
