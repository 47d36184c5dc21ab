"""The tool-call parsers of each serving stack, one row each (:class:`~tokaudit.parsers.families.ToolParser`), and
the lookups over them. The markers each family writes come first; a row's ``source`` is the file it was read from,
under the stack's repository (:data:`~tokaudit.parsers.families.STACKS`)."""

from __future__ import annotations

from tokaudit.parsers.families import ToolParser

_HERMES = ("<tool_call>", "</tool_call>")
_DS_CALLS = (
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁calls▁end｜>",
    "<｜tool▁call▁begin｜>",
    "<｜tool▁call▁end｜>",
    "<｜tool▁sep｜>",
)
_KIMI = (
    "<|tool_calls_section_begin|>",
    "<|tool_calls_section_end|>",
    "<|tool_call_begin|>",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
)
_GLM = ("<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>")
_MINIMAX = (
    "<minimax:tool_call>",
    "</minimax:tool_call>",
    "<invoke name=",
    "</invoke>",
    "<parameter name=",
    "</parameter>",
)
_DSML = (
    "<｜DSML｜function_calls>",
    "</｜DSML｜function_calls>",
    "<｜DSML｜invoke name=",
    "</｜DSML｜invoke>",
    "<｜DSML｜parameter name=",
    "</｜DSML｜parameter>",
)
_DSML4 = ("<｜DSML｜tool_calls>", "</｜DSML｜tool_calls>", *_DSML[2:])
_SEED = ("<seed:tool_call>", "</seed:tool_call>")
#: Gemma 4: the call block and the string delimiter of its argument syntax
_GEMMA4 = ("<|tool_call>", "<tool_call|>", '<|"|>')
#: Kimi K3's XTML: open, close, separator
_KIMI_K3 = ("<|open|>", "<|close|>", "<|sep|>")
#: MiniMax-M3: the separator token between elements, the call block
_MINIMAX_M3 = ("]<]minimax[>[", "<tool_call>", "</tool_call>")
_COHERE = ("<|START_ACTION|>", "<|END_ACTION|>")
_GIGACHAT = ("function call<|role_sep|>", "<|message_sep|>")
_APERTUS = ("<|tools_prefix|>", "<|tools_suffix|>")
_LFM2 = ("<|tool_call_start|>", "<|tool_call_end|>")
#: Hy3: call block, key and value tags, the separator after the name (all with the :opensource suffix)
_HY3 = (
    "<tool_call:opensource>",
    "</tool_call:opensource>",
    "<arg_key:opensource>",
    "</arg_key:opensource>",
    "<arg_value:opensource>",
    "</arg_value:opensource>",
    "<tool_sep:opensource>",
)
_MUSE = (
    "<atem:function_calls>",
    "</atem:function_calls>",
    "<atem:invoke name=",
    "</atem:invoke>",
    "<atem:parameter name=",
    "</atem:parameter>",
)
#: MiniCPM5: function opener, closer, parameter opener, closer (no block around the calls)
_MINICPM5 = ("<function name=", "</function>", "<param name=", "</param>")

#: where each stack's tool parsers live in its repository
_V = "vllm/tool_parsers/"
_VP = "vllm/parser/"
_S = "python/sglang/srt/function_call/"
_L = "common/parsers/"
_O = "model/parsers/"
_M = "crates/tool_parser/src/parsers/"
_D = "lib/parsers/src/tool_calling/"

# fmt: off
TOOL_PARSERS: tuple[ToolParser, ...] = (
    # vLLM 0.33.0 (vllm/tool_parsers/__init__.py names them)
    ToolParser("vllm", "hermes", "json-tags", _HERMES, source=_V + "hermes_tool_parser.py"),
    ToolParser("vllm", "qwen3_json", "json-tags", _HERMES, source=_V + "__init__.py", note="an alias of hermes"),
    ToolParser("vllm", "qwen3_coder", "xml-function", _HERMES, keep_special="always", source=_VP + "qwen3.py"),
    ToolParser("vllm", "qwen3_xml", "xml-function", _HERMES, keep_special="always", source=_VP + "qwen3.py",
               note="the same engine as qwen3_coder"),
    ToolParser("vllm", "llama3_json", "bare-json", ("<|python_tag|>",), keep_special="never",
               requires=("<|python_tag|>",), source=_V + "llama_tool_parser.py"),
    ToolParser("vllm", "llama4_json", "bare-json", ("<|python_tag|>",), keep_special="never",
               requires=("<|python_tag|>",), source=_V + "llama_tool_parser.py", note="the llama3_json class"),
    ToolParser("vllm", "pythonic", "pythonic", (), keep_special="never", source=_V + "pythonic_tool_parser.py"),
    ToolParser("vllm", "llama4_pythonic", "pythonic", ("<|python_start|>", "<|python_end|>"), keep_special="never",
               source=_V + "llama4_pythonic_tool_parser.py"),
    ToolParser("vllm", "mistral", "name-args", ("[TOOL_CALLS]", "[ARGS]"), by_id=("[TOOL_CALLS]",),
               requires=("[TOOL_CALLS]",), source=_VP + "mistral.py"),
    ToolParser("vllm", "deepseek_v3", "sep-fenced", _DS_CALLS, keep_special="never", requires=_DS_CALLS[:4],
               source=_V + "deepseekv3_tool_parser.py"),
    ToolParser("vllm", "deepseek_v31", "sep-json", _DS_CALLS, keep_special="never", requires=_DS_CALLS[:4],
               stream_drops_tail=True, source=_V + "deepseekv31_tool_parser.py"),
    ToolParser("vllm", "deepseek_v32", "invoke", _DSML, keep_special="always", source=_VP + "deepseek_v32.py"),
    ToolParser("vllm", "deepseek_v4", "invoke", _DSML4, keep_special="always", source=_VP + "deepseek_v4.py"),
    ToolParser("vllm", "kimi_k2", "section-calls", _KIMI, source=_V + "kimi_k2_tool_parser.py"),
    ToolParser("vllm", "glm45", "arg-kv", _GLM, keep_special="always", source=_VP + "glm47_moe.py"),
    ToolParser("vllm", "glm47", "arg-kv", _GLM, keep_special="always", source=_VP + "glm47_moe.py"),
    ToolParser("vllm", "openai", "harmony", ("<|message|>", "<|call|>"), keep_special="never", harmony_only=True,
               source=_VP + "harmony.py", note="reads the harmony token ids, so the calls survive skip_special_tokens"),
    ToolParser("vllm", "minimax_m2", "invoke", _MINIMAX, keep_special="always", source=_VP + "minimax_m2.py"),
    ToolParser("vllm", "granite", "json-array", ("<|tool_call|>",), keep_special="always", source=_VP + "granite.py"),
    ToolParser("vllm", "granite4", "json-tags", _HERMES, source=_V + "granite4_tool_parser.py"),
    ToolParser("vllm", "seed_oss", "xml-function", ("<function=", "</function>"), keep_special="always",
               source=_VP + "seed_oss.py",
               note="reads <function=...> blocks whatever wraps them (<seed:tool_call> or <tool_call>)"),
    # the Cohere parsers are tool and reasoning parser in one (DelegatingParser): no other reasoning parser with them
    ToolParser("vllm", "cohere_command3", "json-block", _COHERE, keep_special="always", reasoning="cohere_command3",
               source=_VP + "cohere_command.py"),
    ToolParser("vllm", "cohere_command4", "json-block", _COHERE, keep_special="always", reasoning="cohere_command4",
               source=_VP + "cohere_command.py"),
    ToolParser("vllm", "gigachat3", "json-block-at-start", _GIGACHAT, source=_V + "gigachat3_tool_parser.py"),
    ToolParser("vllm", "apertus", "json-block", _APERTUS, source=_V + "apertus_tool_parser.py"),
    ToolParser("vllm", "gemma4", "gemma4-nested-text", _GEMMA4, keep_special="always", source=_VP + "gemma4.py"),
    ToolParser("vllm", "kimi_k3", "xtml", _KIMI_K3, source=_V + "kimi_k3_tool_parser.py"),
    ToolParser("vllm", "minimax_m3", "minimax-m3", _MINIMAX_M3, keep_special="never", source=_VP + "minimax_m3.py"),
    # needs the tokenizer's token_suffix (":opensource") to find its markers
    ToolParser("vllm", "hy_v3", "arg-kv", _HY3, keep_special="never",
               requires=("<tool_calls:opensource>", "</tool_calls:opensource>"), source=_V + "hy_v3_tool_parser.py"),
    ToolParser("vllm", "muse_glimmer", "invoke-no-prefix", _MUSE, source=_V + "muse_tool_parser.py"),
    ToolParser("vllm", "lfm2", "lfm2", _LFM2, requires=_LFM2, source=_V + "lfm2_tool_parser.py"),
    ToolParser("vllm", "minicpm5", "cdata-xml-no-prefix", _MINICPM5, source=_V + "minicpm5xml_tool_parser.py"),
    # SGLang 0.5.23 (FunctionCallParser.ToolCallParserEnum)
    ToolParser("sglang", "hermes", "json-tags", _HERMES, source=_S + "hermes_detector.py"),
    ToolParser("sglang", "qwen25", "json-tags", _HERMES, source=_S + "qwen25_detector.py"),
    ToolParser("sglang", "qwen3_coder", "xml-function", _HERMES, source=_S + "qwen3_coder_detector.py"),
    ToolParser("sglang", "llama3", "bare-json", ("<|python_tag|>",), source=_S + "llama32_detector.py"),
    ToolParser("sglang", "pythonic", "pythonic", (), source=_S + "pythonic_detector.py"),
    ToolParser("sglang", "mistral", "json-array", ("[TOOL_CALLS]",), source=_S + "mistral_detector.py"),
    ToolParser("sglang", "deepseekv3", "sep-fenced", _DS_CALLS, source=_S + "deepseekv3_detector.py"),
    ToolParser("sglang", "deepseekv31", "sep-json", _DS_CALLS, source=_S + "deepseekv31_detector.py"),
    ToolParser("sglang", "deepseekv32", "invoke", _DSML, source=_S + "deepseekv32_detector.py"),
    ToolParser("sglang", "deepseekv4", "invoke", _DSML4, source=_S + "deepseekv4_detector.py"),
    ToolParser("sglang", "kimi_k2", "section-calls", _KIMI, source=_S + "kimik2_detector.py"),
    ToolParser("sglang", "glm45", "arg-kv", _GLM, source=_S + "glm4_moe_detector.py"),
    ToolParser("sglang", "glm47", "arg-kv", _GLM, source=_S + "glm47_moe_detector.py"),
    ToolParser("sglang", "gpt-oss", "harmony", ("<|message|>", "<|call|>", "<|channel|>commentary"),
               source=_S + "gpt_oss_detector.py", note="expects the recipient after the commentary channel, not in "
                    "the role header as the gpt-oss template writes it"),
    ToolParser("sglang", "minimax-m2", "invoke", _MINIMAX, source=_S + "minimax_m2.py"),
    ToolParser("sglang", "step3p5", "xml-function", _HERMES, source=_S + "function_call_parser.py",
               note="the qwen3_coder detector"),
    ToolParser("sglang", "cohere_command4", "json-block", _COHERE, source=_S + "cohere_command4_detector.py"),
    ToolParser("sglang", "gigachat3", "json-block-at-start", _GIGACHAT, source=_S + "gigachat3_detector.py"),
    ToolParser("sglang", "apertus2509", "json-block", _APERTUS, source=_S + "apertus2509_detector.py"),
    ToolParser("sglang", "gemma4", "gemma4", _GEMMA4, source=_S + "gemma4_detector.py"),
    ToolParser("sglang", "kimi_k3", "xtml", _KIMI_K3, source=_S + "kimi_k3_detector.py"),
    ToolParser("sglang", "minimax-m3", "minimax-m3-items-text", _MINIMAX_M3, source=_S + "minimax_m3_detector.py"),
    ToolParser("sglang", "hunyuan", "arg-kv", _HY3, source=_S + "hunyuan_detector.py"),
    ToolParser("sglang", "muse", "invoke", _MUSE, source=_S + "muse_glimmer_detector.py"),
    ToolParser("sglang", "lfm2", "lfm2", _LFM2, source=_S + "lfm2_detector.py"),
    ToolParser("sglang", "minicpm5", "cdata-xml", _MINICPM5, source=_S + "minicpm5_detector.py"),
    # llama.cpp's server takes no parser flag: common/chat.cpp picks a specialised parser by markers in the template
    # (common_chat_try_specialized_template, in this order), else its auto-parser derives one from the template
    # itself (chat-auto-parser-generator.cpp), stood for here by every grammar in turn
    ToolParser("llama.cpp", "ministral3", "name-args", ("[TOOL_CALLS]", "[ARGS]"),
               detect=("[SYSTEM_PROMPT]", "[TOOL_CALLS]", "[ARGS]"), source=_L + "ministral3.cpp"),
    ToolParser("llama.cpp", "gpt-oss", "harmony", ("<|message|>", "<|call|>"), detect=("<|channel|>",),
               source=_L + "gpt-oss.cpp"),
    ToolParser("llama.cpp", "muse-glimmer", "invoke", _MUSE, detect=("<atem:function_calls>", "<|eom|>"),
               source=_L + "muse-glimmer.cpp"),
    ToolParser("llama.cpp", "kimi-k2", "section-calls", _KIMI,
               detect=("<|tool_calls_section_begin|>", "<|tool_call_begin|>"), source=_L + "kimi-k2.cpp"),
    ToolParser("llama.cpp", "kimi-k3", "xtml", _KIMI_K3, detect=("<|open|>", "<|close|>", "<|end_of_msg|>"),
               source=_L + "kimi-k3.cpp"),
    ToolParser("llama.cpp", "cohere2moe", "json-block", _COHERE, detect=("<|START_TEXT|>", "<|START_ACTION|>"),
               source=_L + "cohere2moe.cpp"),
    ToolParser("llama.cpp", "lfm2", "lfm2", _LFM2, detect=("<|tool_call_start|>", "<|tool_list_start|>"),
               source=_L + "lfm2.cpp"),
    ToolParser("llama.cpp", "gigachat-v3", "json-block", _GIGACHAT, detect=("<|role_sep|>", "<|message_sep|>"),
               detect_not=("<|function_call|>",), source=_L + "gigachat-v3.cpp", note="reads the call after the "
                                                                                      "content, not only at the start"),
    ToolParser("llama.cpp", "minimax-m3", "minimax-m3", _MINIMAX_M3,
               detect=("]<]minimax[>[", "<tool_call>", "<invoke name="), source=_L + "minimax-m3.cpp"),
    ToolParser("llama.cpp", "deepseek-v3.2", "invoke", _DSML, detect=("dsml_token", "DSML", "function_calls"),
               source=_L + "deepseek.cpp"),
    ToolParser("llama.cpp", "deepseek-v4", "invoke", _DSML4, detect=("dsml_token", "DSML"), source=_L + "deepseek.cpp",
               note="the deepseek-v3.2 parser with a tool_calls block, when the template has no function_calls"),
    ToolParser("llama.cpp", "gemma4", "gemma4", _GEMMA4, detect=("'<|tool_call>call:'",), source=_L + "gemma4.cpp"),
    ToolParser("llama.cpp", "minicpm5", "cdata-xml-json", _MINICPM5,
               detect=("Tool usage guidelines:", '<function name="', '<param name="'), source=_L + "minicpm5.cpp",
               note="a value the schema does not type as a string must be JSON"),
    ToolParser("llama.cpp", "qwen3-coder", "xml-function", _HERMES, detect=("<tool_call>", "<function=", "<parameter="),
               source=_L + "qwen3-coder.cpp"),
    ToolParser("llama.cpp", "auto", "any", (), source="common/chat-auto-parser-generator.cpp",
               note="the auto-parser reads the format from the template; emulated by trying every grammar"),
    # Ollama (Modelfile PARSER names, model/parsers/parsers.go)
    ToolParser("ollama", "qwen3", "json-tags", _HERMES, source=_O + "qwen3.go"),
    ToolParser("ollama", "qwen3-coder", "xml-function", _HERMES, source=_O + "qwen3coder.go"),
    ToolParser("ollama", "qwen3.5", "xml-function", _HERMES, source=_O + "qwen35.go",
               note="thinking, then the qwen3-coder XML parser"),
    ToolParser("ollama", "deepseek3", "sep-json", _DS_CALLS, source=_O + "deepseek3.go"),
    ToolParser("ollama", "glm-4.7", "arg-kv", _GLM, source=_O + "glm47.go"),
    ToolParser("ollama", "harmony", "harmony", ("<|message|>", "<|call|>"), source="harmony/harmonyparser.go"),
    ToolParser("ollama", "ministral", "name-args", ("[TOOL_CALLS]", "[ARGS]"), source=_O + "ministral.go"),
    # smg f8daa88 (crates/tool_parser/src/factory.rs register_parser); step3, sarashina, inkling have formats no
    # grammar here reads yet
    ToolParser("smg", "json", "bare-json", (), source=_M + "json.rs", note="a bare JSON object or array"),
    ToolParser("smg", "mistral", "json-array", ("[TOOL_CALLS]",), source=_M + "mistral.rs",
               note="the [TOOL_CALLS] [ array form"),
    ToolParser("smg", "qwen", "json-tags", _HERMES, source=_M + "qwen.rs"),
    ToolParser("smg", "qwen_xml", "xml-function", _HERMES, source=_M + "qwen_xml.rs"),
    ToolParser("smg", "qwen_coder", "xml-function", _HERMES, source=_M + "qwen_xml.rs", note="the qwen_xml parser"),
    ToolParser("smg", "nemotron", "xml-function", _HERMES, source=_M + "qwen_xml.rs", note="the qwen_xml parser"),
    ToolParser("smg", "pythonic", "pythonic", (), source=_M + "pythonic.rs"),
    ToolParser("smg", "llama", "bare-json", ("<|python_tag|>",), source=_M + "llama.rs"),
    ToolParser("smg", "deepseek", "sep-fenced", _DS_CALLS, source=_M + "deepseek.rs"),
    ToolParser("smg", "deepseek31", "sep-json", _DS_CALLS, source=_M + "deepseek31.rs"),
    ToolParser("smg", "deepseek32", "invoke", _DSML, source=_M + "deepseek_dsml.rs"),
    ToolParser("smg", "deepseek_v4", "invoke", _DSML4, source=_M + "deepseek_dsml.rs"),
    ToolParser("smg", "glm45_moe", "arg-kv", _GLM, source=_M + "glm4_moe.rs"),
    ToolParser("smg", "glm47_moe", "arg-kv", _GLM, source=_M + "glm4_moe.rs"),
    ToolParser("smg", "kimik2", "section-calls", _KIMI, source=_M + "kimik2.rs"),
    ToolParser("smg", "minimax_m2", "invoke", _MINIMAX, source=_M + "minimax_m2.rs"),
    ToolParser("smg", "cohere", "json-block", _COHERE, source=_M + "cohere.rs"),
    ToolParser("smg", "kimi_k3", "xtml", _KIMI_K3, source=_M + "kimi_k3.rs"),
    # TGI db931fc: no parser flag; with tools, generation is held to {"function": {"_name": N, ...arguments}}
    ToolParser("tgi", "grammar", "tgi-json", (), keep_special="never", constrained=True,
               source="router/src/infer/tool_grammar.rs", note='generation constrained to {"function": {"_name": '
                    "NAME, ...arguments}} (a no_tool function for auto)"),
    # Dynamo (lib/parsers/src/tool_calling/parsers.rs get_tool_parser_map); phi4, jamba and nemotron_deci have formats
    # no grammar here reads yet
    ToolParser("dynamo", "hermes", "json-tags", _HERMES, keep_special="never", source=_D + "json/base_json_parser.rs"),
    ToolParser("dynamo", "qwen25", "json-tags", _HERMES, keep_special="never", source=_D + "parsers.rs",
               note="the hermes configuration"),
    ToolParser("dynamo", "llama3_json", "bare-json", ("<|python_tag|>",), keep_special="never",
               source=_D + "json/base_json_parser.rs"),
    ToolParser("dynamo", "mistral", "json-array", ("[TOOL_CALLS]",), keep_special="never",
               source=_D + "json/base_json_parser.rs"),
    ToolParser("dynamo", "pythonic", "pythonic", (), keep_special="never", source=_D + "pythonic/pythonic_parser.rs"),
    ToolParser("dynamo", "harmony", "harmony", ("<|message|>", "<|call|>"), keep_special="always",
               source=_D + "harmony/harmony_parser.rs"),
    ToolParser("dynamo", "deepseek_v3", "sep-fenced", _DS_CALLS, keep_special="never",
               source=_D + "json/deepseek_v3_parser.rs"),
    ToolParser("dynamo", "deepseek_v3_1", "sep-json", _DS_CALLS, keep_special="never",
               source=_D + "json/deepseek_v3_1_parser.rs"),
    ToolParser("dynamo", "deepseek_v3_2", "invoke", _DSML, keep_special="never", source=_D + "dsml/parser.rs"),
    ToolParser("dynamo", "deepseek_v4", "invoke", _DSML4, keep_special="never", source=_D + "dsml/parser.rs"),
    ToolParser("dynamo", "qwen3_coder", "xml-function", _HERMES, keep_special="never", source=_D + "xml/parser.rs"),
    ToolParser("dynamo", "nemotron_nano", "xml-function", _HERMES, keep_special="never", source=_D + "parsers.rs",
               note="the qwen3_coder configuration"),
    ToolParser("dynamo", "minimax_m2", "invoke", _MINIMAX, keep_special="never", source=_D + "xml/parser.rs"),
    ToolParser("dynamo", "glm47", "arg-kv", _GLM, keep_special="never", source=_D + "xml/glm47_parser.rs"),
    ToolParser("dynamo", "kimi_k2", "section-calls", _KIMI, keep_special="always", source=_D + "xml/kimi_k2_parser.rs"),
    ToolParser("dynamo", "gemma4", "gemma4", _GEMMA4, keep_special="always", source=_D + "gemma4/parser.rs"),
)
# fmt: on


def tool_parsers(stack: str | None = None) -> list[ToolParser]:
    return [p for p in TOOL_PARSERS if stack is None or p.stack == stack]


def picked_by_template(stack: str, template: str) -> ToolParser | None:
    """The tool parser a stack that takes no flag (llama.cpp's server) picks for a template: the first whose
    markers the template holds, else its auto-parser."""
    rows = tool_parsers(stack)
    return next(
        (
            p
            for p in rows
            if p.detect and all(d in template for d in p.detect) and not any(d in template for d in p.detect_not)
        ),
        next((p for p in rows if not p.detect), None),
    )


def find_tool_parser(stack: str, name: str) -> ToolParser | None:
    return next((p for p in TOOL_PARSERS if p.stack == stack and p.name == name), None)
