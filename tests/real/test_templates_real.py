"""llama.cpp's 70 real chat templates (vendor/llama.cpp/models/templates of the pinned llama-cpp-python 0.3.36 sdist,
extracted without building, the sdist sha256-checked: scripts/real_tokenizers.lock.json ``templates``), rendered for
every stack profile with the real tokenizer of their family the suite has (qwen3, llama3, gemma3, deepseek-v3, gpt-oss,
mistral-7b-json; another family's template gets qwen3's, for its special tokens only).

Every error finding they raise is listed below with why it is true, checked against the stack's source (the profile
modules cite the files and lines). The rules that depend on which tokens the tokenizer registers (TA205, TA803, TA804)
are left out: these pairings are a family's tokenizer, not each template's own (Hermes 2 Pro registers <|im_start|>,
Llama 3's tokenizer does not). Renders are text-level, as in scan (no tokenization).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.real import realkit
from tokaudit.records import Provenance
from tokaudit.template.common import Tokens
from tokaudit.template.engine_findings import divergences, render_errors
from tokaudit.template.turn_findings import dropped_tool_calls, prefix_instability
from tokaudit.template.rendering import TemplateRun, render_template
from tokaudit.template.requests import builtin_requests
from tokaudit.template.source import TemplateSource, special_token_context
from tokaudit.template.structure import structure_findings
from tokaudit.template.stacks import PROFILES

pytestmark = pytest.mark.real

#: The stacks tokaudit renders for (llama.cpp with its own server code and engine, built from the sdist).
RENDERED = ("transformers", "vllm", "sglang", "smg", "tgi", "mistral.rs", "llama.cpp", "dynamo")


def family(stem: str) -> str:
    """The real tokenizer a template is rendered with: its family's, else qwen3's (special tokens only)."""
    n = stem.lower()
    if "gpt-oss" in n:
        return "gpt-oss"
    if "distill-qwen" in n:
        return "qwen3"
    if "distill-llama" in n:
        return "llama3"
    if "deepseek" in n:
        return "deepseek-v3"
    if any(k in n for k in ("qwen", "qwq", "mimo")):
        return "qwen3"
    if any(k in n for k in ("llama-3", "hermes", "firefunction", "functionary")):
        return "llama3"
    if "gemma" in n:
        return "gemma3"
    if any(k in n for k in ("mistral", "ministral", "devstral")):
        return "mistral-7b-json"
    return "qwen3"


# ---- why each error is true (the stack's source; the profile modules give files and lines) ------------------------

DYNAMO_TOJSON = (
    "Dynamo registers its own tojson (lib/llm/src/preprocessor/prompt/template/tokcfg.rs): serde_json compact, "
    "then < > & ' escaped as \\u003c ...; the tool definitions reach the model in another form than "
    "transformers' json.dumps gives"
)
TGI_TOJSON = (
    "TGI registers no tojson: MiniJinja 2.8.0's builtin (filters.rs: compact, HTML-escaping) writes the tools, "
    "and TGI's MiniJinja has no preserve_order (Cargo.lock: no indexmap), so maps are in key order"
)
TGI_TRIM = "TGI's Environment::new() sets neither trim_blocks nor lstrip_blocks (router/src/infer/chat_template.rs:33)"
TGI_TOJSON_TRIM = f"{TGI_TOJSON}; {TGI_TRIM}"
TGI_SORTED = "TGI's MiniJinja has no preserve_order: the template iterates a map in key order"
TGI_SORTED_TRIM = f"{TGI_SORTED}; {TGI_TRIM}"
SMG_NO_STRFTIME_DATE = (
    "smg registers no strftime_now (crates/tokenizer/src/chat_template.rs build_environment): the "
    "template's `strftime_now is defined` branch is not taken and the date line differs"
)
SMG_NONE_ITERABLE = (
    "smg keeps content: null; MiniJinja treats none as iterable (tests.rs is_iterable) where Jinja2 does not, "
    "so the template's string-or-parts branch prints nothing where Jinja2 prints None"
)
MARKUP_ESCAPE = (
    "the template concatenates '...'|safe with text: Jinja2's Markup escapes the text (&lt;celsius&gt;), MiniJinja "
    "without auto-escape does not; smg and mistral.rs render the tool descriptions raw (TGI and Dynamo differ by "
    "their tojson first)"
)
DROPS_CALLS = (
    "the template writes an assistant turn's content only (or only for content null): the past call the stack "
    "passed never reaches the prompt, then its result follows"
)
SMG_NO_STRFTIME = (
    "smg registers no strftime_now (chat_template.rs build_environment, no other occurrence in the repository)"
)
SMG_NO_STRFTIME_CALL = f"{SMG_NO_STRFTIME}: the template calls it, and calling undefined fails"
MISTRALRS_NO_LOOP_CONTROLS = (
    "mistral.rs builds MiniJinja 2.14 without the loop_controls feature (Cargo.toml): {% break %} does not compile"
)
NO_GENERATION_TAG = (
    "MiniJinja has no {% generation %} tag: smg does nothing about it, TGI and Dynamo remove only the exact "
    "spelling `{% generation %}` and the template writes `{%- generation -%}` (mistral.rs' regex strips both)"
)
TGI_TOOLS_NULL = (
    "TGI passes tools: null without tools (router/src/lib.rs:1204-1211) and `none | length` fails in MiniJinja; "
    "smg leaves tools undefined and mistral.rs omits it (length 0)"
)
OLD_PYCOMPAT_GET = (
    "MiniJinja-contrib's pycompat dict.get takes one argument before 2.15 (#852): TGI pins 2.8.0, mistral.rs 2.14.0"
)
FIREFUNCTION_FUNCTIONS = (
    "the template reads a `functions` variable no stack passes (firefunction-v2's own server passed it): "
    "every required request fails everywhere"
)

#: Every error finding of the render rules, per template: (code, stacks, what: the error, the causes, the missing
#: marks) -> why it is true.
EXPECTED_ERRORS: dict[str, dict[tuple[str, tuple[str, ...], str], str]] = {
    "Apertus-8B-Instruct": {
        ("TA801", ("smg",), "unknown function: strftime_now is unknown (in chat:170)"): SMG_NO_STRFTIME,
    },
    "Apriel-1.6-15b-Thinker-fixed": {
        (
            "TA801",
            ("tgi",),
            "too many arguments: dict.get(key, default) takes one argument in MiniJinja-contrib's pycompat before "
            "2.15 (MiniJinja 2.8.0 (TGI))",
        ): OLD_PYCOMPAT_GET,
        (
            "TA801",
            ("mistral.rs",),
            "too many arguments: dict.get(key, default) takes one argument in MiniJinja-contrib's pycompat before "
            "2.15 (MiniJinja 2.14.0 without loop_controls (mistral.rs))",
        ): OLD_PYCOMPAT_GET,
        ("TA802", ("tgi",), "trim_blocks"): TGI_TRIM,
    },
    "Bielik-11B-v3.0-Instruct": {},
    "ByteDance-Seed-OSS": {
        ("TA802", ("tgi",), "trim_blocks"): TGI_TRIM,
    },
    "Cohere2MoE": {
        (
            "TA801",
            ("mistral.rs",),
            "syntax error: unknown statement break (in chat:257); MiniJinja 2.14.0 without loop_controls (mistral.rs) "
            "is built without the loop_controls feature",
        ): MISTRALRS_NO_LOOP_CONTROLS,
        ("TA802", ("tgi",), "trim_blocks"): TGI_TRIM,
    },
    "CohereForAI-c4ai-command-r-plus-tool_use": {},
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use": {},
    "GLM-4.6": {
        ("TA802", ("tgi",), "trim_blocks"): TGI_TRIM,
        ("TA802", ("smg",), ""): SMG_NONE_ITERABLE,
    },
    "GLM-4.7-Flash": {
        ("TA802", ("tgi",), "trim_blocks"): TGI_TRIM,
        ("TA802", ("smg",), ""): SMG_NONE_ITERABLE,
    },
    "GigaChat3-10B-A1.8B": {},
    "GigaChat3.1-10B-A1.8B": {},
    "HuggingFaceTB-SmolLM3-3B": {
        ("TA802", ("tgi",), "trim_blocks"): TGI_TRIM,
        (
            "TA806",
            ("transformers", "vllm", "sglang", "smg", "mistral.rs", "llama.cpp", "dynamo"),
            "get_weather,Centro",
        ): DROPS_CALLS,
    },
    "Kimi-K2-Instruct": {
        ("TA802", ("tgi",), "trim_blocks"): TGI_TRIM,
    },
    "Kimi-K2-Thinking": {},
    "Kimi-K3": {
        (
            "TA801",
            ("mistral.rs",),
            "syntax error: unknown statement break (in chat:243); MiniJinja 2.14.0 without loop_controls (mistral.rs) "
            "is built without the loop_controls feature",
        ): MISTRALRS_NO_LOOP_CONTROLS,
    },
    "LFM2-8B-A1B": {
        (
            "TA806",
            ("transformers", "vllm", "sglang", "smg", "mistral.rs", "llama.cpp", "dynamo"),
            "get_weather,Centro",
        ): DROPS_CALLS,
    },
    "LFM2.5-8B-A1B": {
        (
            "TA801",
            ("smg", "tgi", "dynamo"),
            "syntax error: unknown statement generation (in chat:77)",
        ): NO_GENERATION_TAG,
    },
    "LFM2.5-Instruct": {
        (
            "TA806",
            ("transformers", "vllm", "sglang", "smg", "mistral.rs", "llama.cpp", "dynamo"),
            "get_weather,Centro",
        ): DROPS_CALLS,
    },
    "MiMo-VL": {},
    "MiniMax-M1": {
        ("TA802", ("tgi",), "trim_blocks"): TGI_TRIM,
        ("TA802", ("tgi",), "tojson,sorted_maps,trim_blocks"): TGI_TOJSON_TRIM,
    },
    "MiniMax-M2": {
        ("TA802", ("tgi",), "trim_blocks"): TGI_TRIM,
        ("TA802", ("smg",), ""): SMG_NONE_ITERABLE,
    },
    "MiniMax-M3": {},
    "Mistral-Small-3.2-24B-Instruct-2506": {
        ("TA801", ("smg",), "unknown function: strftime_now is unknown (in chat:1)"): SMG_NO_STRFTIME,
    },
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": {
        (
            "TA801",
            ("tgi",),
            "invalid operation: cannot calculate length of value of type none (in chat:47)",
        ): TGI_TOOLS_NULL,
        ("TA802", ("tgi",), "trim_blocks"): TGI_TRIM,
    },
    "NVIDIA-Nemotron-Nano-v2": {},
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use": {},
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use": {},
    "Qwen-QwQ-32B": {},
    "Qwen-Qwen2.5-7B-Instruct": {},
    "Qwen-Qwen3-0.6B": {},
    "Qwen3-Coder": {
        (
            "TA801",
            ("tgi",),
            "invalid operation: cannot calculate length of value of type none (in chat:31)",
        ): TGI_TOOLS_NULL,
        (
            "TA801",
            ("tgi",),
            "invalid operation: cannot calculate length of value of type none (in chat:27)",
        ): TGI_TOOLS_NULL,
        ("TA802", ("tgi",), "trim_blocks"): TGI_TRIM,
    },
    "Qwen3.5-4B": {},
    "Reka-Edge": {
        (
            "TA801",
            ("tgi",),
            "too many arguments: dict.get(key, default) takes one argument in MiniJinja-contrib's pycompat before "
            "2.15 (MiniJinja 2.8.0 (TGI))",
        ): OLD_PYCOMPAT_GET,
        (
            "TA801",
            ("mistral.rs",),
            "syntax error: unknown statement break (in chat:36); MiniJinja 2.14.0 without loop_controls (mistral.rs) "
            "is built without the loop_controls feature",
        ): MISTRALRS_NO_LOOP_CONTROLS,
    },
    "Spark2.5": {},
    "StepFun3.5-Flash": {
        ("TA802", ("tgi",), "trim_blocks"): TGI_TRIM,
    },
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B": {
        (
            "TA806",
            ("transformers", "vllm", "sglang", "smg", "mistral.rs", "llama.cpp", "dynamo"),
            "get_weather,Centro",
        ): DROPS_CALLS,
    },
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B": {},
    "deepseek-ai-DeepSeek-V3.1": {},
    "deepseek-ai-DeepSeek-V3.2": {},
    "deepseek-ai-DeepSeek-V4-Flash-0731": {},
    "deepseek-ai-DeepSeek-V4": {},
    "fireworks-ai-llama-3-firefunction-v2": {
        (
            "TA801",
            ("transformers", "vllm", "sglang"),
            "UndefinedError: 'functions' is undefined",
        ): FIREFUNCTION_FUNCTIONS,
        (
            "TA801",
            ("smg", "tgi", "mistral.rs", "dynamo"),
            "invalid operation: tried to use + operator on unsupported types string and undefined (`functions` is "
            "undefined) (in chat:21)",
        ): FIREFUNCTION_FUNCTIONS,
    },
    "google-gemma-2-2b-it": {},
    "google-gemma-4-31B-it-interleaved": {},
    "google-gemma-4-31B-it": {},
    "ibm-granite-granite-3.3-2B-Instruct": {
        ("TA801", ("smg",), "unknown function: strftime_now is unknown (in chat:9)"): SMG_NO_STRFTIME,
        (
            "TA806",
            ("transformers", "vllm", "sglang", "smg", "mistral.rs", "llama.cpp", "dynamo"),
            "get_weather,Centro",
        ): DROPS_CALLS,
    },
    "ibm-granite-granite-4.0": {},
    "ibm-granite-granite-4.1": {},
    "inclusionai-ling-3.0-flash": {
        ("TA802", ("tgi",), "trim_blocks"): TGI_TRIM,
    },
    "llama-cpp-deepseek-r1": {},
    "llama-cpp-rwkv-world": {},
    "meetkai-functionary-medium-v3.1": {
        ("TA802", ("smg", "mistral.rs"), ""): MARKUP_ESCAPE,
        ("TA802", ("tgi",), "tojson,sorted_maps"): TGI_TOJSON,
        ("TA802", ("dynamo",), "tojson"): DYNAMO_TOJSON,
    },
    "meetkai-functionary-medium-v3.2": {},
    "meta-llama-Llama-3.1-8B-Instruct": {},
    "meta-llama-Llama-3.2-3B-Instruct": {
        ("TA802", ("smg",), "strftime_now"): SMG_NO_STRFTIME_DATE,
    },
    "meta-llama-Llama-3.3-70B-Instruct": {},
    "microsoft-Phi-3.5-mini-instruct": {},
    "mistralai-Ministral-3-14B-Reasoning-2512": {},
    "mistralai-Mistral-Nemo-Instruct-2407": {
        ("TA802", ("tgi",), "sorted_maps"): TGI_SORTED,
    },
    "moonshotai-Kimi-K2": {},
    "muse-glimmer": {
        ("TA802", ("smg",), "strftime_now"): SMG_NO_STRFTIME_DATE,
    },
    "openai-gpt-oss-120b": {
        (
            "TA801",
            ("smg",),
            "invalid operation: value of type undefined is not callable (in chat:202)",
        ): SMG_NO_STRFTIME_CALL,
    },
    "openbmb-MiniCPM5-1B": {},
    "poolside-Laguna-S-2.1": {
        (
            "TA801",
            ("smg", "tgi", "dynamo"),
            "syntax error: unknown statement generation (in chat:45)",
        ): NO_GENERATION_TAG,
    },
    "poolside-Laguna-XS-2.1": {
        (
            "TA801",
            ("smg", "tgi", "dynamo"),
            "syntax error: unknown statement generation (in chat:55)",
        ): NO_GENERATION_TAG,
    },
    "poolside-Laguna-XS.2": {
        (
            "TA801",
            ("smg", "tgi", "dynamo"),
            "syntax error: unknown statement generation (in chat:55)",
        ): NO_GENERATION_TAG,
    },
    "tencent-Hy3": {},
    "unsloth-Apriel-1.5": {
        ("TA802", ("tgi",), "sorted_maps,trim_blocks"): TGI_SORTED_TRIM,
    },
    "unsloth-mistral-Devstral-Small-2507": {},
    "upstage-Solar-Open-100B": {
        (
            "TA801",
            ("smg",),
            "invalid operation: value of type undefined is not callable (in chat:23)",
        ): SMG_NO_STRFTIME_CALL,
    },
}

# ---- errors no other shape excuses (issue 35): a tool-call turn in the form a stack sends it fails for a stack that
# renders the template's tools; and the structural rules (TA810, TA811)

TRANSFORMERS_NULL = (
    "transformers drops every None-valued message key (_normalize_chat_messages, chat_template_utils.py:711-724): "
    "the OpenAI SDKs' content: null on a tool-call turn becomes no content key, and the template reads message.content"
)
DYNAMO_NULL = (
    "Dynamo leaves content: null out of the message (async-openai types serialized with None fields skipped) and "
    "MiniJinja fails on the undefined content the template reads"
)
SMG_NULL_DICT = (
    "smg keeps content: null and parses the arguments to a dict: the template's string operations on them fail "
    "(test_smg_content_null_with_dict_arguments)"
)
KIMI_APPEND = (
    "the template (llama.cpp's copy) calls tool_response_queue.ids.append(...): transformers' "
    "ImmutableSandboxedEnvironment, "
    "which vLLM and SGLang render with too, refuses to mutate a list, and MiniJinja's sequences have no append method"
)
FUNCTIONARY_DICT = (
    "the stacks pass the arguments parsed to a dict (transformers, vLLM, SGLang, smg and Dynamo parse JSON arguments) "
    "and functionary-v3.2 concatenates them to a string"
)
DEVSTRAL_VLLM_NULL = (
    "vLLM makes content: null an empty list of parts for an openai-format template (its content format detection) "
    "and the template reads content[0]"
)
TGI_NO_CALL_ID = (
    "TGI passes no tool_call_id to the template (router/src/infer/chat_template.rs: its Message has none); "
    "the template requires it"
)
TGI_NO_TOOL_CALLS = (
    "TGI passes no tool_calls key (a content: null turn's calls become its JSON content): the tool message that "
    "follows "
    "has no call before it, which the template refuses"
)
TGI_EMPTY_CALLS_DROPPED = (
    'TGI drops the tool calls of a turn whose content is "": the assistant message has neither, '
    "which the template refuses"
)
TOOL_THEN_USER = (
    "a user message right after a tool result (chatlint's tool_then_user: an agent loop that lets the user "
    "interject): the template refuses the order (roles must alternate) though it renders the same conversation "
    "without that message, and Mistral's reference encoder takes it (mistral_common 1.13.1 validator.py "
    "_validate_message_order: tool may be followed by user); the tool-call-multi-turn refusal is TGI's alone "
    "(it passes no tool_calls)"
)
NEMO_SYSTEM_DROPPED = (
    "the template writes the system prompt into the last user message; a conversation that ends with a tool "
    "result has no user message after it, so the system prompt is lost"
)
TGI_GEMMA4_RESULT = (
    "TGI passes no tool_calls and no tool_call_id, and Gemma 4's template writes a tool result only inside the call "
    "it answers: the result never reaches the prompt"
)

VLLM_TEXT_PARTS = (
    "vLLM detects an openai content format (the template loops over a message's content: _detect_content_format, "
    "checked with vLLM 0.33.0's own function) and then hands every content but a tool result's to the template as a "
    "list of text parts (parse_chat_message_content); this spot prints the content whole, so Python's repr of the "
    "list reaches the prompt"
)

SHAPE_ERRORS: dict[str, dict[tuple[str, tuple[str, ...], str], str]] = {
    "Bielik-11B-v3.0-Instruct": {
        (
            "TA801",
            ("smg",),
            "invalid operation: cannot perform a containment check on this value (in chat:43)",
        ): SMG_NULL_DICT,
    },
    "Kimi-K2-Instruct": {
        (
            "TA801",
            ("smg", "mistral.rs", "dynamo"),
            "unknown method: sequence has no method named append (in chat:41)",
        ): KIMI_APPEND,
        (
            "TA801",
            ("tgi",),
            "too many arguments: dict.get(key, default) takes one argument in MiniJinja-contrib's pycompat before "
            "2.15 (MiniJinja 2.8.0 (TGI))",
        ): OLD_PYCOMPAT_GET,
        (
            "TA801",
            ("transformers", "vllm", "sglang"),
            "SecurityError: access to attribute 'append' of 'list' object is unsafe.",
        ): KIMI_APPEND,
    },
    "Kimi-K2-Thinking": {
        (
            "TA801",
            ("mistral.rs",),
            "too many arguments: dict.get(key, default) takes one argument in MiniJinja-contrib's pycompat before "
            "2.15 (MiniJinja 2.14.0 without loop_controls (mistral.rs))",
        ): OLD_PYCOMPAT_GET,
        (
            "TA801",
            ("smg", "mistral.rs", "dynamo"),
            "unknown method: sequence has no method named append (in chat:35)",
        ): KIMI_APPEND,
        (
            "TA801",
            ("tgi",),
            "too many arguments: dict.get(key, default) takes one argument in MiniJinja-contrib's pycompat before "
            "2.15 (MiniJinja 2.8.0 (TGI))",
        ): OLD_PYCOMPAT_GET,
        (
            "TA801",
            ("transformers", "vllm", "sglang"),
            "SecurityError: access to attribute 'append' of 'list' object is unsafe.",
        ): KIMI_APPEND,
    },
    "LFM2-8B-A1B": {
        ("TA801", ("transformers",), "TypeError: Object of type Undefined is not JSON serializable"): TRANSFORMERS_NULL,
    },
    "LFM2.5-Instruct": {
        ("TA801", ("transformers",), "TypeError: Object of type Undefined is not JSON serializable"): TRANSFORMERS_NULL,
    },
    "Mistral-Small-3.2-24B-Instruct-2506": {
        (
            "TA801",
            ("transformers", "vllm", "sglang", "tgi", "mistral.rs", "dynamo"),
            "raise_exception: After the optional system message, conversation roles must alternate "
            "user/assistant/user/assistant/...",
        ): TOOL_THEN_USER,
        (
            "TA801",
            ("llama.cpp",),
            "After the optional system message, conversation roles must alternate user/assistant/user/assistant/... "
            "(CallExpression at line 52, column 32)",
        ): TOOL_THEN_USER,
        (
            "TA801",
            ("tgi",),
            "raise_exception: Tool call IDs should be alphanumeric strings with length 9!",
        ): TGI_NO_CALL_ID,
    },
    "Qwen-QwQ-32B": {
        (
            "TA801",
            ("dynamo",),
            "unknown method: undefined has no method named split (`message.content` is undefined) (in chat:31)",
        ): DYNAMO_NULL,
        ("TA801", ("smg",), "unknown method: none has no method named split (in chat:31)"): SMG_NULL_DICT,
        ("TA801", ("transformers",), "UndefinedError: 'dict object' has no attribute 'content'"): TRANSFORMERS_NULL,
    },
    "Qwen-Qwen3-0.6B": {
        (
            "TA801",
            ("dynamo",),
            "invalid operation: tried to use + operator on unsupported types string and undefined (`message.content` "
            "is undefined, from line 29) (in chat:43)",
        ): DYNAMO_NULL,
        (
            "TA801",
            ("dynamo",),
            "invalid operation: tried to use + operator on unsupported types string and undefined (`message.content` "
            "is undefined, from line 29) (in chat:46)",
        ): DYNAMO_NULL,
        (
            "TA801",
            ("smg",),
            "invalid operation: cannot perform a containment check on this value (in chat:34)",
        ): SMG_NULL_DICT,
        ("TA801", ("transformers",), "UndefinedError: 'dict object' has no attribute 'content'"): TRANSFORMERS_NULL,
    },
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B": {
        (
            "TA801",
            ("dynamo",),
            "invalid operation: tried to use + operator on unsupported types string and undefined "
            "(`message['content']` is undefined, from line 27) (in chat:30)",
        ): DYNAMO_NULL,
        (
            "TA801",
            ("smg",),
            "invalid operation: tried to use + operator on unsupported types string and map (in chat:17)",
        ): SMG_NULL_DICT,
        ("TA801", ("transformers",), "UndefinedError: 'dict object' has no attribute 'content'"): TRANSFORMERS_NULL,
    },
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B": {
        (
            "TA801",
            ("dynamo",),
            "invalid operation: tried to use + operator on unsupported types string and undefined "
            "(`message['content']` is undefined, from line 30) (in chat:33)",
        ): DYNAMO_NULL,
        ("TA801", ("transformers",), "UndefinedError: 'dict object' has no attribute 'content'"): TRANSFORMERS_NULL,
    },
    "google-gemma-4-31B-it": {
        ("TA811", ("tgi",), "dropped:tool:3"): TGI_GEMMA4_RESULT,
        ("TA810", ("vllm",), "messages[0].content as text parts"): VLLM_TEXT_PARTS,  # the system turn: `content | trim`
    },
    "google-gemma-4-31B-it-interleaved": {
        ("TA810", ("vllm",), "messages[0].content as text parts"): VLLM_TEXT_PARTS,  # the system turn: `content | trim`
    },
    "moonshotai-Kimi-K2": {
        # the assistant's text beside its tool calls: `{{ message['content'] }}` (line 18)
        ("TA810", ("vllm",), "messages[2].content as text parts"): VLLM_TEXT_PARTS,
    },
    "ibm-granite-granite-3.3-2B-Instruct": {
        (
            "TA801",
            ("dynamo",),
            "invalid operation: tried to use + operator on unsupported types string and undefined "
            "(`message['content']` is undefined) (in chat:50)",
        ): DYNAMO_NULL,
        (
            "TA801",
            ("smg",),
            "invalid operation: tried to use + operator on unsupported types string and none (in chat:50)",
        ): SMG_NULL_DICT,
        ("TA801", ("transformers",), "UndefinedError: 'dict object' has no attribute 'content'"): TRANSFORMERS_NULL,
    },
    "meetkai-functionary-medium-v3.2": {
        (
            "TA801",
            ("smg", "dynamo"),
            "invalid operation: tried to use + operator on unsupported types string and map (in chat:281)",
        ): FUNCTIONARY_DICT,
        (
            "TA801",
            ("transformers", "vllm", "sglang"),
            'TypeError: can only concatenate str (not "dict") to str',
        ): FUNCTIONARY_DICT,
    },
    "mistralai-Ministral-3-14B-Reasoning-2512": {
        (
            "TA801",
            ("smg",),
            "invalid operation: cannot calculate length of value of type none (in chat:90)",
        ): SMG_NULL_DICT,
        (
            "TA801",
            ("transformers", "vllm", "sglang", "smg", "tgi", "mistral.rs", "dynamo"),
            "raise_exception: After the optional system message, conversation roles must alternate user and assistant "
            "roles except for tool calls and results.",
        ): TOOL_THEN_USER,
        (
            "TA801",
            ("llama.cpp",),
            "After the optional system message, conversation roles must alternate user and assistant roles except for "
            "tool calls and results. (CallExpression at line 48, column 32)",
        ): TOOL_THEN_USER,
        (
            "TA801",
            ("tgi",),
            "raise_exception: Assistant message must have a string or a list of chunks in content or a list of tool "
            "calls.",
        ): TGI_EMPTY_CALLS_DROPPED,
    },
    "mistralai-Mistral-Nemo-Instruct-2407": {
        (
            "TA801",
            ("transformers", "vllm", "sglang", "smg", "tgi", "mistral.rs", "dynamo"),
            "raise_exception: After the optional system message, conversation roles must alternate "
            "user/assistant/user/assistant/...",
        ): TOOL_THEN_USER,
        (
            "TA801",
            ("llama.cpp",),
            "After the optional system message, conversation roles must alternate user/assistant/user/assistant/... "
            "(CallExpression at line 18, column 32)",
        ): TOOL_THEN_USER,
        (
            "TA801",
            ("tgi",),
            "raise_exception: Tool call IDs should be alphanumeric strings with length 9!",
        ): TGI_NO_CALL_ID,
        (
            "TA811",
            ("transformers", "vllm", "sglang", "smg", "mistral.rs", "llama.cpp", "dynamo"),
            "dropped:system:0",
        ): NEMO_SYSTEM_DROPPED,
    },
    "openai-gpt-oss-120b": {
        (
            "TA801",
            ("tgi",),
            "raise_exception: Message has tool role, but there was no previous assistant message with a tool call!",
        ): TGI_NO_TOOL_CALLS,
    },
    "unsloth-mistral-Devstral-Small-2507": {
        ("TA801", ("dynamo",), "undefined value: `message['content']` is undefined (in chat:74)"): DYNAMO_NULL,
        ("TA801", ("smg",), "undefined value: `message['content'][0]` is undefined (in chat:74)"): SMG_NULL_DICT,
        ("TA801", ("transformers",), "UndefinedError: 'dict object' has no attribute 'content'"): TRANSFORMERS_NULL,
        ("TA801", ("vllm",), "UndefinedError: list object has no element 0"): DEVSTRAL_VLLM_NULL,
    },
    "upstage-Solar-Open-100B": {
        (
            "TA801",
            ("tgi",),
            "invalid operation: tried to use + operator on unsupported types string and undefined "
            "(`message.tool_call_id` is undefined) (in chat:116)",
        ): TGI_NO_CALL_ID,
    },
    # the template writes the calls only when content is null: with the assistant's text beside them they are lost
    # (the Jinja2 stacks fail on it earlier: a generator the template passes to tojson)
    "llama-cpp-deepseek-r1": {
        ("TA806", ("smg", "mistral.rs", "llama.cpp", "dynamo"), "get_weather,Centro"): DROPS_CALLS,
    },
}

for _name, _more in SHAPE_ERRORS.items():
    EXPECTED_ERRORS[_name].update(_more)


#: The templates with a TA807, each checked by hand (see the note of issue 29; DeepSeek-V3.1, Hy3 and Solar Open from
#: issue 35's system-midway: they gather every system message at the top, so a later one rewrites the start).
PREFIX_UNSTABLE = [
    "Apertus-8B-Instruct",
    "Apriel-1.6-15b-Thinker-fixed",
    "Bielik-11B-v3.0-Instruct",
    "ByteDance-Seed-OSS",
    "Cohere2MoE",
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use",
    "GLM-4.6",
    "GLM-4.7-Flash",
    "LFM2.5-8B-A1B",
    "MiniMax-M2",
    "Mistral-Small-3.2-24B-Instruct-2506",
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
    "NVIDIA-Nemotron-Nano-v2",
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use",
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use",
    "Qwen-QwQ-32B",
    "Qwen-Qwen3-0.6B",
    "Qwen3.5-4B",
    "Spark2.5",
    "StepFun3.5-Flash",
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B",
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B",
    "deepseek-ai-DeepSeek-V3.1",
    "deepseek-ai-DeepSeek-V3.2",
    "deepseek-ai-DeepSeek-V4",
    "deepseek-ai-DeepSeek-V4-Flash-0731",
    "google-gemma-4-31B-it",
    "google-gemma-4-31B-it-interleaved",
    "llama-cpp-deepseek-r1",
    "llama-cpp-rwkv-world",
    "microsoft-Phi-3.5-mini-instruct",
    "mistralai-Mistral-Nemo-Instruct-2407",
    "openai-gpt-oss-120b",
    "openbmb-MiniCPM5-1B",
    "poolside-Laguna-XS-2.1",
    "poolside-Laguna-XS.2",
    "tencent-Hy3",
    "unsloth-Apriel-1.5",
    "upstage-Solar-Open-100B",
]


_RUNS: dict[str, TemplateRun] = {}


@pytest.fixture(scope="module")
def templates(real_dirs: dict[str, Path]) -> dict[str, TemplateRun]:
    """Every template rendered for every profile (once per module: ~20 s of renders for the 70)."""
    fetch = realkit.fetch_module()
    try:
        directory = fetch.fetch_templates()["llamacpp-chat-templates"]
    except fetch.OfflineError as exc:
        pytest.skip(f"llama.cpp's templates cannot be downloaded: {exc}")
    if not _RUNS:
        from tokaudit.model.load import load_model

        models: dict[str, Any] = {}
        start = time.perf_counter()
        for path in sorted(directory.glob("*.jinja")):
            name = family(path.stem)
            model = models.get(name) or models.setdefault(name, load_model(str(real_dirs[name])))
            # a *-tool_use template is the named tool_use template: a stack uses it only when tools are offered
            kind = "tool_use" if path.stem.endswith("tool_use") else "default"
            t = TemplateSource(kind, path.read_text(encoding="utf-8"), Provenance(path.name, line=1))
            _RUNS[path.stem] = render_template(
                t, builtin_requests(t.text, kind), list(PROFILES), special_token_context(model)
            )
        print(f"70 templates rendered for {len(PROFILES)} profiles in {time.perf_counter() - start:.1f} s")
    return _RUNS


def errors(run: TemplateRun) -> dict[tuple[str, tuple[str, ...], str], str]:
    """The error findings of the render rules, keyed as EXPECTED_ERRORS is (the message is the value)."""
    tokens = Tokens(None)
    out = {}
    for f in [
        *render_errors([run]),
        *divergences([run], tokens),
        *dropped_tool_calls([run]),
        *structure_findings([run]),
    ]:
        if f.severity.value != "error":
            continue
        d = f.details
        key = {
            "TA801": d.get("error"),
            "TA802": ",".join(d.get("causes") or []),
            "TA806": ",".join(d.get("missing") or []),
            "TA810": d.get("value"),
            "TA811": f"{d.get('problem')}:{d.get('role')}:{d.get('message')}",
            "TA812": f"{d.get('problem')}:{d.get('marker')}",
        }[f.code]
        out[(f.code, tuple(d["stacks"]), key)] = f.message
    return out


def failing(run: TemplateRun, stack: str) -> list[str]:
    return [r.label for r in run.requests if stack in r.stacks and not r.stacks[stack].render.ok]


def test_the_70_templates_are_pinned(templates: dict[str, TemplateRun]) -> None:
    lock = realkit.fetch_module().load_lock()
    (entry,) = lock["templates"]
    assert len(entry["files"]) == len(templates) == len(EXPECTED_ERRORS) == 70
    assert sorted(Path(f).stem for f in entry["files"].values()) == sorted(templates)


@pytest.mark.parametrize("name", sorted(EXPECTED_ERRORS))
def test_every_error_is_listed_with_its_reason(name: str, templates: dict[str, TemplateRun]) -> None:
    found = errors(templates[name])
    assert sorted(found) == sorted(EXPECTED_ERRORS[name]), "\n".join(f"{k}: {v}" for k, v in found.items())


def test_how_many_templates_each_stack_renders_whole(templates: dict[str, TemplateRun]) -> None:
    """Per stack, the templates for which every request it receives renders (optional features included)."""
    whole = {s: sum(1 for run in templates.values() if s in run.stacks and not failing(run, s)) for s in RENDERED}
    # (with issue 35's shapes: the assistant's text beside a call, parallel calls, reasoning with content: null)
    # (session 3: reasoning-only goes to every template, smg and TGI keep its null and Dynamo leaves it out; and
    # system-midway, a second system message, which templates that allow one system message refuse)
    assert whole == {
        "transformers": 34,
        "vllm": 54,
        "sglang": 55,
        "smg": 39,
        "tgi": 30,
        "mistral.rs": 27,
        "llama.cpp": 61,
        "dynamo": 39,
    }
    # mistral.rs' Gemma 4 and LFM2 code paths are not emulated: those templates are not rendered for it
    assert sorted(n for n, run in templates.items() if "mistral.rs" in run.skipped) == [
        "LFM2.5-8B-A1B",
        "google-gemma-4-31B-it",
        "google-gemma-4-31B-it-interleaved",
    ]
    assert not any(run.skipped.get("llama.cpp") for run in templates.values())


SMG_NULL_CONTENT = (
    "Qwen-Qwen3-0.6B",
    "Qwen-QwQ-32B",
    "Bielik-11B-v3.0-Instruct",
    "ibm-granite-granite-3.3-2B-Instruct",
    "mistralai-Ministral-3-14B-Reasoning-2512",
    "microsoft-Phi-3.5-mini-instruct",
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B",
    "unsloth-mistral-Devstral-Small-2507",
)


@pytest.mark.parametrize("name", SMG_NULL_CONTENT)
def test_smg_content_null_with_dict_arguments(name: str, templates: dict[str, TemplateRun]) -> None:
    """smg restores content: null on a tool-call turn and parses the arguments to a dict: these templates fail on it
    (errors: smg serves their tools, and no other form excuses the one it sends), while SGLang ("" content) renders
    the same request (vLLM too, but for Devstral, an openai-format template whose null content vLLM makes an empty
    list of parts)."""
    run = templates[name]
    assert "tool-call" in failing(run, "smg") and "tool-call" not in failing(run, "sglang")
    assert ("tool-call" in failing(run, "vllm")) == (name == "unsloth-mistral-Devstral-Small-2507")
    # (Phi-3.5's smg finding names TGI too: both fail the same way, TGI on the reasoning-only null it keeps)
    (f,) = [
        f for f in render_errors([run]) if "smg" in f.details["stacks"] and "tool-call" in f.details["conversations"]
    ]
    # smg renders the template's tools (tools-offered): the form it sends must render too (issue 35); Phi-3.5's
    # template offers no tools (a tool request is optional there)
    assert f.severity.value == ("warning" if name == "microsoft-Phi-3.5-mini-instruct" else "error")
    assert run.offers_tools == (name != "microsoft-Phi-3.5-mini-instruct")


def test_the_failures_are_found_for_exactly_the_stacks_that_fail(templates: dict[str, TemplateRun]) -> None:
    every = {"system-user", "user-only", "multi-turn", "empty-content", "content-parts", "long-non-ascii"}
    # smg has no strftime_now: every request fails
    for name in ("Mistral-Small-3.2-24B-Instruct-2506", "upstage-Solar-Open-100B"):
        assert every <= set(failing(templates[name], "smg")) and not every & set(failing(templates[name], "vllm"))
    # mistral.rs has no loop controls: nothing compiles
    for name in ("Cohere2MoE", "CohereForAI-c4ai-command-r7b-12-2024-tool_use", "Kimi-K3", "Reka-Edge"):
        run = templates[name]
        assert failing(run, "mistral.rs") == [r.label for r in run.requests if "mistral.rs" in r.stacks]
        assert {r.stacks["mistral.rs"].render.kind for r in run.requests if "mistral.rs" in r.stacks} == {"syntax"}
    # vLLM always turns arguments into a dict: functionary-v3.2 concatenates them
    assert failing(templates["meetkai-functionary-medium-v3.2"], "vllm") == [
        "tool-call",
        "tool-call-empty-content",
        "tool-call-multi-turn",
        "tool-call-with-content",
        "parallel-tool-calls",
        "tool-result-then-user",
    ]
    # tools: null fails `tools | length` for TGI only
    for name in ("Qwen3-Coder", "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"):
        run = templates[name]
        assert "system-user" in failing(run, "tgi") and not {"system-user"} & set(
            failing(run, "smg") + failing(run, "mistral.rs")
        )
    # {% generation %}: smg and TGI fail, mistral.rs strips it, transformers and vLLM render its body
    run = templates["LFM2.5-8B-A1B"]
    assert "system-user" in failing(run, "smg") and "system-user" in failing(run, "tgi")
    assert not {"system-user"} & set(failing(run, "mistral.rs") + failing(run, "transformers") + failing(run, "vllm"))
    # TGI renames the tool schema's parameters to arguments (a JSON string)
    assert failing(templates["ByteDance-Seed-OSS"], "tgi")[:1] == ["tools-offered"]
    # stray whitespace without trim_blocks / lstrip_blocks: TGI only
    trim = sorted(n for n, run in templates.items() for k in errors(run) if k[0] == "TA802" and "trim_blocks" in k[2])
    assert len(trim) == 15 and all(
        k[1] == ("tgi",) for run in templates.values() for k in errors(run) if "trim_blocks" in k[2]
    )


def test_tojson_is_blamed_only_where_the_stack_prompts_with_it(templates: dict[str, TemplateRun]) -> None:
    """smg and mistral.rs register a non-escaping tojson and are never named for it; TGI is named for the tool
    definitions it renders (every such finding includes tools-offered), never for tool-call arguments it never
    passes."""
    for run in templates.values():
        for f in divergences([run], Tokens(None)):
            if "tojson" in f.details["causes"]:
                assert f.details["stacks"] in (["tgi"], ["dynamo"]), f.message
                if f.details["stacks"] == ["tgi"]:
                    assert "tools-offered" in f.details["conversations"], f.message


def test_tool_call_dropped_and_prefix_instability(templates: dict[str, TemplateRun]) -> None:
    dropped = sorted(n for n, run in templates.items() if dropped_tool_calls([run]))
    assert dropped == [
        "HuggingFaceTB-SmolLM3-3B",
        "LFM2-8B-A1B",
        "LFM2.5-Instruct",
        "deepseek-ai-DeepSeek-R1-Distill-Llama-8B",
        "ibm-granite-granite-3.3-2B-Instruct",
        "llama-cpp-deepseek-r1",
    ]
    unstable = {n: run for n, run in templates.items() if prefix_instability([run], Tokens(None))}
    assert sorted(unstable) == PREFIX_UNSTABLE
    for clean in (
        "Qwen-Qwen2.5-7B-Instruct",
        "meta-llama-Llama-3.1-8B-Instruct",
        "meta-llama-Llama-3.2-3B-Instruct",
        "meta-llama-Llama-3.3-70B-Instruct",
    ):
        assert clean not in dropped and clean not in unstable
    # Qwen3: thinking prompts re-rendered without their thinking block; Mistral-Nemo: the system prompt moves
    causes = {n: {f.details["cause"] for f in prefix_instability([run], Tokens(None))} for n, run in unstable.items()}
    assert any(c.startswith("the template writes a thinking block") for c in causes["Qwen-Qwen3-0.6B"])
    assert (
        "the system prompt moves (it is rendered next to the last user message)"
        in causes["mistralai-Mistral-Nemo-Instruct-2407"]
    )


def test_functionary_none_is_not_a_ta205(
    real_dirs: dict[str, Path], templates: dict[str, TemplateRun], tmp_path: Path
) -> None:
    """functionary-v3.2's macros compare values with '<|NONE|>' but never write it: TA205 counts only literals a
    rendered prompt holds."""
    directory = realkit.fetch_module().fetch_templates()["llamacpp-chat-templates"]
    model = tmp_path / "functionary"
    model.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (model / name).write_bytes((real_dirs["llama3"] / name).read_bytes())
    (model / "chat_template.jinja").write_bytes((directory / "meetkai-functionary-medium-v3.2.jinja").read_bytes())
    out = run_cli("scan", str(model), "--format", "json", "--select", "TA205")
    assert "<|NONE|>" in (model / "chat_template.jinja").read_text(encoding="utf-8")
    assert [f["details"]["token"] for f in json.loads(out.stdout)["findings"]] == []


def test_mistral_nemo_loses_the_system_prompt_on_an_assistant_prefill(templates: dict[str, TemplateRun]) -> None:
    """chatlint's assistant_prefill: Nemo's template writes the system prompt into the last message when it is a user
    message; a conversation that ends with the assistant's own start has none, so transformers and vLLM (both
    continue_final_message) lose the system prompt. llama-server's prefill renders the conversation before the final
    message and appends it, so its prompt keeps it. The stacks that always add the generation prompt are not sent it.
    transformers' own apply_chat_template gives the same prompt."""
    from transformers.utils.chat_template_utils import render_jinja_template

    run = templates["mistralai-Mistral-Nemo-Instruct-2407"]
    (rrun,) = [r for r in run.requests if r.request.name == "assistant-prefill"]
    assert sorted(rrun.stacks) == ["llama.cpp", "transformers", "vllm"]
    prompt = "<s>[INST]What is the capital of France?[/INST]The capital of France is"
    assert rrun.stacks["transformers"].render.text == rrun.stacks["vllm"].render.text == prompt
    assert rrun.stacks["llama.cpp"].render.text == (
        "<s>[INST]You are a helpful assistant.\n\nWhat is the capital of France?[/INST]The capital of France is"
    )
    (rendered,), _ = render_jinja_template(
        conversations=[rrun.request.messages],
        chat_template=run.template.text,
        continue_final_message=True,
        bos_token="<s>",
        eos_token="</s>",
    )
    assert rendered == prompt
    (f,) = [
        f for f in structure_findings([run]) if f.code == "TA811" and "assistant-prefill" in f.details["conversations"]
    ]
    assert (f.severity.value, f.details["stacks"], f.details["conversations"], f.details["role"]) == (
        "warning",
        ["transformers", "vllm"],
        ["assistant-prefill"],
        "system",
    )
