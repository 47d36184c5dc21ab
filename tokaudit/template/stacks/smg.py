"""smg (SGLang Model Gateway, the Rust router): ``process_chat_messages`` then MiniJinja.

Mirrored: smg-project/smg @f8daa88 (2026-08-22):

* messages are serde's serialization of ``ChatMessage`` (crates/protocols/src/chat.rs:25-60,
  ``skip_serializing_none``): system / user role, content, name; assistant role, content, name, tool_calls,
  reasoning_content; tool role, content, tool_call_id — a tool message's ``name`` is dropped; None-valued
  fields are absent;
* an assistant turn without content gets ``content: null`` back (model_gateway/src/routers/grpc/utils/
  chat_utils.rs:236-246); tool-call ``arguments`` are parsed to JSON (:138-174; one that does not parse fails
  the request); a list of parts is joined with ``"\\n"`` for String-format templates and kept for OpenAI-format
  ones (:283-374; the format from smg's own AST detector, approximated by vLLM's);
* ``tools`` is undefined without tools, as are ``documents`` and a special token the model lacks
  (crates/tokenizer/src/chat_template.rs:890-935): bos/eos/unk/pad only; ``chat_template_kwargs``,
  ``reasoning_effort``, ``tool_choice`` and ``response_format`` are variables; ``add_generation_prompt`` is
  always true (chat_utils.rs:502-512);
* the engine (chat_template.rs:845-866): MiniJinja 2.21.0 with loop_controls and preserve_order
  (crates/tokenizer/Cargo.toml), trim/lstrip, pycompat, ``raise_exception``, its own ``tojson`` (Python
  json.dumps separators and keyword arguments, no HTML escaping: :770-815). No ``strftime_now`` (no other
  occurrence in the repository) and no ``{% generation %}`` handling.
"""

from __future__ import annotations

from tokaudit.template.renders import EngineConfig
from tokaudit.template.stacks.profile import RequestRules, StackProfile

ENGINE = EngineConfig(
    kind="minijinja",
    name="minijinja-2.21",
    pins="MiniJinja 2.21.0 (smg)",
    tojson="python",
    strftime_now=False,
    generation_tag=False,
)

PROFILE = StackProfile(
    id="smg",
    title="smg (SGLang router)",
    version="@f8daa88 (2026-08-22), MiniJinja 2.21.0",
    source="smg-project/smg: crates/tokenizer/src/chat_template.rs, crates/protocols/src/chat.rs, "
    "model_gateway/src/routers/grpc/utils/chat_utils.rs",
    engine=ENGINE,
    rules=RequestRules(
        generation_prompt="always",
        tools_when_absent="undefined",
        tool_schema="as-sent",
        null_content="keep",
        tool_calls="keep",
        arguments="dict",
        parts="smg",
        content_format="vllm",
        name_roles=("system", "user", "assistant"),
        reasoning="keep",
        special_tokens=("bos_token", "eos_token", "unk_token", "pad_token"),
        documents=False,
    ),
    differs=(
        "content null kept, with arguments parsed to dicts",
        "tools undefined without tools",
        "no strftime_now",
        "{% generation %} does not compile",
        "a tool message's name dropped",
    ),
    parsers="smg",
)
