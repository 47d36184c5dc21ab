"""mistral.rs: ``parse_request`` (mistralrs-server-core) then ``apply_chat_template_to`` (mistralrs-core).

Mirrored: EricLBuehler/mistral.rs @9e92262 (2026-08-22):

* messages (mistralrs-server-core/src/chat_completion.rs:631-708): role, content, reasoning_content,
  tool_calls, tool_call_id, name, in that order; ``content: null`` becomes ``""`` (a message with neither
  content nor tool calls is refused); tool-call ``arguments`` are parsed when they parse to an object
  (mistralrs-core/src/pipeline/chat_template.rs:494-525, 764);
* a list of parts (user messages only) becomes one text part, the texts joined with ``" "``
  (chat_completion.rs:826-948);
* tools are rebuilt (chat_template.rs:527-563): name, description, parameters (type, properties, required,
  additionalProperties first, then alphabetical), strict; ``tools`` is absent without tools (:844-855);
* variables: messages, add_generation_prompt, bos/eos/unk (none when absent), ``date_string`` (today,
  ``%d, %B, %Y``), ``enable_thinking`` (true unless the request or ``chat_template_kwargs`` says otherwise:
  request.rs:146-186), ``reasoning_effort``; no ``documents``, no other ``chat_template_kwargs``;
* the text (:783-801): ``namespace(name=tcid if tcid else '')`` parenthesised, ``[::-1]`` → ``|reverse``,
  ``range(X, -1, -1)`` → ``range(X)|reverse``, GLM-4's meta lines removed, every ``{% generation %}`` tag
  removed;
* the engine (:709-806): MiniJinja 2.14.0 *without* loop_controls (Cargo.toml: features builtins, json,
  preserve_order), trim/lstrip, pycompat 2.14 (``dict.get`` takes one argument), ``raise_exception``,
  ``strftime_now``, its own ``tojson`` (Python separators, no HTML escaping, ``indent`` only: :358-428).

Not emulated: the Gemma 4 tool-message rewrite (``preprocess_gemma4_tool_messages``) and the LFM2 content
clearing: templates with their markers are not rendered for mistral.rs.
"""

from __future__ import annotations

from tokaudit.template.renders import EngineConfig
from tokaudit.template.stacks.profile import RequestRules, StackProfile

ENGINE = EngineConfig(
    kind="minijinja",
    name="minijinja-2.14",
    pins="MiniJinja 2.14.0 without loop_controls (mistral.rs)",
    loop_controls=False,
    tojson="python-spacing",
    generation_tag=False,
    get_default=False,
)

PROFILE = StackProfile(
    id="mistral.rs",
    title="mistral.rs",
    version="@9e92262 (2026-08-22), MiniJinja 2.14.0",
    source="EricLBuehler/mistral.rs: mistralrs-core/src/pipeline/chat_template.rs, "
    "mistralrs-server-core/src/chat_completion.rs",
    engine=ENGINE,
    rules=RequestRules(
        generation_prompt="always",
        tools_when_absent="undefined",
        tool_schema="mistral.rs",
        null_content="empty-string",
        tool_calls="keep",
        arguments="object-if-parses",
        parts="one-part-space",
        reasoning="keep",
        special_tokens=("bos_token", "eos_token", "unk_token"),
        missing_special_token="none",
        documents=False,
        chat_template_kwargs="thinking",
        fixed=(("date_string", "%d, %B, %Y"), ("enable_thinking", True)),
    ),
    rewrites=("mistral.rs",),
    differs=(
        "no loop_controls: break / continue do not compile",
        'content null → ""',
        "tools absent without tools",
        'content parts → one text part joined with " "',
        "{% generation %} stripped",
        "dict.get(key, default) fails",
        "enable_thinking always set (true by default)",
    ),
    not_emulated=(
        ("<|tool_call>", "mistral.rs rewrites Gemma 4 tool messages (not emulated)"),
        ("<|tool_call_start|>", "mistral.rs clears LFM2 tool-call content (not emulated)"),
    ),
)
