"""TGI (text-generation-inference, in maintenance mode): ``ChatTemplate::apply``.

Mirrored: huggingface/text-generation-inference @db931fc (2026-01-08):

* a message reaches the template as ``TextMessage {role, content: String}`` (router/src/lib.rs:1284-1319): no
  ``tool_calls``, no ``name``, and no ``tool_call_id`` (the conversion leaves it None, serialized away). A
  message's body is an untagged enum, content first (:1245-1258): an assistant turn with ``content: null``
  parses as tool calls, which are serialized into the content as JSON (``FunctionDefinition`` writes its
  ``arguments`` value as a string: a JSON-string argument is encoded twice, :1183-1192); with any other
  content the calls are dropped;
* a list of parts is joined with ``""`` (:1305-1314);
* tools (:1178-1202): ``parameters`` is read as ``arguments`` and serialized to a JSON string; tool_choice
  auto appends a ``no_tool`` function (router/src/infer/tool_grammar.rs:29-53); the default tool prompt is
  appended to the last message (router/src/infer/chat_template.rs:84-103, lib.rs:962-990, 1071-1073);
* variables (lib.rs:1204-1211): messages, ``bos_token`` / ``eos_token`` (null when absent),
  ``add_generation_prompt`` always true, ``tools`` (null without tools). No ``documents``, no
  ``chat_template_kwargs``;
* the text (chat_template.rs:40-53): ``messages[0]['content'][0]['text']`` → ``messages[0]['content']``,
  ``[::-1]`` → ``|reverse``, and only the exact spellings ``{% generation %}`` / ``{% endgeneration %}``
  removed;
* the engine (chat_template.rs:33-57): ``Environment::new()`` — no trim_blocks, no lstrip_blocks — pycompat,
  ``raise_exception``, ``strftime_now``, and MiniJinja's builtin ``tojson`` (HTML-escaping, compact in 2.8);
  MiniJinja 2.8.0 with loop_controls, without preserve_order (Cargo.lock: maps iterate in key order), pycompat
  2.8.0 (``dict.get`` takes one argument).
"""

from __future__ import annotations

from tokaudit.template.renders import EngineConfig
from tokaudit.template.stacks.profile import PromptTokens, RequestRules, StackProfile

ENGINE = EngineConfig(
    kind="minijinja",
    name="minijinja-2.8",
    pins="MiniJinja 2.8.0 (TGI)",
    trim_blocks=False,
    lstrip_blocks=False,
    tojson="minijinja-2",
    generation_tag=False,
    sorted_maps=True,
    get_default=False,
)

PROFILE = StackProfile(
    id="tgi",
    title="TGI",
    version="@db931fc (2026-01-08), MiniJinja 2.8.0",
    source="huggingface/text-generation-inference: router/src/infer/chat_template.rs, router/src/lib.rs, "
    "router/src/infer/tool_grammar.rs",
    engine=ENGINE,
    rules=RequestRules(
        generation_prompt="always",
        tools_when_absent="none",
        tool_schema="tgi",
        null_content="keep",
        tool_calls="tgi",
        arguments="as-sent",
        parts="join-empty",
        name_roles=(),
        tool_call_id=False,
        reasoning="drop",
        special_tokens=("bos_token", "eos_token"),
        missing_special_token="none",
        documents=False,
        chat_template_kwargs="none",
    ),
    rewrites=("tgi",),
    differs=(
        "no tool_calls: serialized into content when content is null, dropped otherwise",
        "tool parameters renamed arguments (a JSON string), no_tool added, tool prompt appended",
        "no trim_blocks / lstrip_blocks",
        "MiniJinja's escaping tojson (compact)",
        "maps in key order",
        "dict.get(key, default) fails",
        "no reasoning_content, tool_call_id or name",
        "the tool prompt goes to whichever message is last: it moves every turn (prefix caches miss)",
    ),
    prompt_tokens=PromptTokens(add_special_tokens=False, source="router/src/lib.rs ChatRequest::try_into_generate"),
    parsers="tgi",
)
