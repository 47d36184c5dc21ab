"""The tool-call and reasoning parsers each serving stack offers, by the stack's own names, as data.

A row says what the parser looks for (its markers and which grammar of :mod:`tokaudit.parsers.grammars`
reads them), whether it matches a marker by token id (then the marker must be one token, and survive
detokenization) or by text, when the stack turns ``skip_special_tokens`` off for it, whether it takes the
output to start inside reasoning, and which tokens the stack requires at start-up (it refuses to start
with a tokenizer that lacks them). Each row names the source file it was read from, at the stack version
of :data:`STACKS`; ``tests/data/parser_golden.jsonl`` holds what the real parser classes returned on the
round-trip cases (``scripts/golden_parsers.py``), and the tests hold the grammars to it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Stack:
    """A serving stack whose parsers are mirrored: the version read and where its parsers live."""

    name: str
    version: str
    repository: str
    #: when the stack turns skip_special_tokens off for a request with tools, whatever the parser ("tools"), or
    #: only when a parser asks for it ("parser")
    keep_special: str
    #: the output text the parsers see: "decoded" (the detokenizer's text) or "pieces" (every token's text,
    #: special tokens included)
    text: str
    #: how a parser learns that the prompt opened reasoning: "parser" (it reads the prompt for its own markers,
    #: vLLM) or "template" (the server decides: SGLang and smg from the template's thinking toggle and the request's
    #: kwargs, tokaudit.parsers.toggle; the others, and these two when the template is not known, from a generation
    #: prompt that opens <think>)
    prompt_check: str = "parser"
    #: the stack picks the tool parser from the template (llama.cpp's server) instead of a flag
    picks_parser: bool = False
    #: the files its parsers and its skip_special_tokens rule were read from
    source: str = ""


# fmt: off
STACKS: dict[str, Stack] = {
    "vllm": Stack("vllm", "0.33.0", "vllm-project/vllm", "parser", "decoded"),
    "sglang": Stack("sglang", "0.5.23", "sgl-project/sglang", "tools", "decoded", "template"),
    # llama.cpp's server (common/chat.cpp, common/parsers/) as vendored in llama-cpp-python 0.3.36: the chat
    # parser reads the generated pieces with special tokens rendered
    "llama.cpp": Stack("llama.cpp", "llama-cpp-python 0.3.36", "ggml-org/llama.cpp", "tools", "pieces", "template", True),
    # model/parsers/ at fb307609 (2026-08-21): chosen by the Modelfile's PARSER, not by a flag
    "ollama": Stack("ollama", "fb307609", "ollama/ollama", "tools", "pieces", "template"),
    # smg (the SGLang model gateway) parses in Rust: crates/tool_parser, crates/reasoning_parser; skip_special_tokens is
    # off for a request with tools unless tool_choice is none (model_gateway/.../chat/preparation.rs). It marks
    # reasoning started from the template's thinking toggle (chat_template.rs detect_thinking_toggle), stood for
    # here by the generation prompt's think marker
    "smg": Stack("smg", "f8daa88", "smg-project/smg", "tools", "decoded", "template",
                 source="crates/tool_parser/src/factory.rs, crates/reasoning_parser/src/factory.rs"),
    # TGI constrains a tool request's generation with a JSON grammar of its own (router/src/infer/tool_grammar.rs)
    # and reads that JSON back (router/src/chat.rs parse_output): the template's call format is never generated
    "tgi": Stack("tgi", "db931fc", "huggingface/text-generation-inference", "never", "decoded", "template",
                 source="router/src/infer/tool_grammar.rs, router/src/chat.rs"),
    # Dynamo's frontend parses in Rust (lib/parsers, tool_calling/parsers.rs get_tool_parser_map, reasoning/mod.rs);
    # it detokenizes with skip_special_tokens on unless a parser is in parser_requires_special_tokens()
    # (lib/llm/src/preprocessor.rs: harmony, gemma4, kimi_k2 / gpt_oss, kimi_k25, gemma4; PRs 9227, 10225)
    "dynamo": Stack("dynamo", "lib/parsers @0436586e", "ai-dynamo/dynamo", "parser", "decoded", "template",
                    source="lib/parsers/src/tool_calling/parsers.rs, lib/parsers/src/reasoning/mod.rs, "
                           "lib/llm/src/preprocessor.rs"),
}
# fmt: on


@dataclass(frozen=True)
class ToolParser:
    """One tool-call parser as a stack registers it."""

    stack: str
    name: str
    grammar: str
    markers: tuple[str, ...]
    #: markers the parser finds by token id (each must be one token of the tokenizer)
    by_id: tuple[str, ...] = ()
    #: "tools": skip_special_tokens is off when the request has tools (and tool_choice is not none); "always":
    #: off for every request (vLLM's parser-engine adapters); "never": the parser leaves it on (special markers
    #: are deleted before it runs)
    keep_special: str = "tools"
    #: tokens the stack requires at start-up; without them it refuses the parser
    requires: tuple[str, ...] = ()
    #: only usable for a harmony (gpt-oss) model; with another tokenizer the stack fails on it
    harmony_only: bool = False
    #: streamed in steps of several ids, the argument text that arrives in the step of the call's end marker is
    #: lost (vLLM's deepseek_v31 streaming path: the arguments come out truncated under speculative decoding)
    stream_drops_tail: bool = False
    #: llama.cpp: the texts a template must hold for the server to pick this parser (it takes no flag)
    detect: tuple[str, ...] = ()
    #: llama.cpp: texts that keep the server from picking this parser
    detect_not: tuple[str, ...] = ()
    #: the stack constrains a tool request's generation to this parser's own format with a grammar (TGI): what the
    #: template teaches is not what the model is made to generate
    constrained: bool = False
    #: the reasoning parser this tool parser brings and runs itself (vLLM's Cohere parsers): no other may be named
    reasoning: str | None = None
    source: str = ""
    note: str = ""

    @property
    def key(self) -> str:
        return f"{self.stack}:{self.name}"


@dataclass(frozen=True)
class ReasoningParser:
    """One reasoning parser as a stack registers it."""

    stack: str
    name: str
    start: str
    end: str
    #: what text before any start marker is: "reasoning" (the parser takes the prompt to have opened reasoning,
    #: as DeepSeek-R1's does), "prompt" (reasoning when the generation prompt opened it), "content", "dropped"
    #: (neither: the parser returns nothing for it)
    no_start: str = "content"
    #: what text after a start marker with no end marker is: "reasoning" or "content"
    no_end: str = "reasoning"
    #: other markers that end reasoning (Kimi's tool section)
    ends_at: tuple[str, ...] = ()
    by_id: tuple[str, ...] = ()
    keep_special: str = "never"
    requires: tuple[str, ...] = ()
    #: the streaming path reads the prompt's ids: an end marker after the last start marker of the prompt
    #: means the output is all content (vLLM); the non-streaming path does not
    stream_reads_prompt: bool = False
    #: the chat-template kwarg that turns thinking on or off for this parser, when it reads one
    kwarg: str | None = None
    #: reasoning is parsed only when the request sets one of the ``gate`` kwargs (else all is content)
    needs_kwarg: bool = False
    #: the kwargs that turn a ``needs_kwarg`` parser on (a value of "no_think" does not)
    gate: tuple[str, ...] = ("thinking", "enable_thinking")
    #: the stack checks ``requires`` at start-up even when the request leaves the parser off (vLLM's deepseek_v3 is the
    #: identity parser then, and checks nothing until a request sets thinking)
    startup_check: bool = True
    #: streamed: a start marker that arrives in one step with other ids (no end marker in that step) stays in the
    #: reasoning text (vLLM's BaseThinkingReasoningParser returns the whole delta as reasoning)
    stream_start_leaks: bool = False
    #: only usable for a harmony (gpt-oss) model; with another tokenizer the stack fails on it
    harmony_only: bool = False
    #: SGLang: a start marker anywhere puts the parser in reasoning, but only one at the very start is removed;
    #: the reasoning is all text before the end marker (vLLM drops the text before the start marker instead)
    start_only_at_beginning: bool = False
    #: SGLang: the detector's ``reasoning_default``, which decides whether the server forces reasoning when the
    #: template has no toggle its rules detect ("always", "thinking" / "enable_thinking": on unless the kwarg is
    #: false, "explicit_thinking" / "explicit_enable_thinking": only when it is true, "mistral": by reasoning_effort)
    default: str | None = None
    source: str = ""
    note: str = ""

    @property
    def key(self) -> str:
        return f"{self.stack}:{self.name}"


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
_THINK = ("<think>", "</think>")

_V = "vllm/tool_parsers/"
_VP = "vllm/parser/"
_VR = "vllm/reasoning/"
_S = "python/sglang/srt/function_call/"
_SR = "python/sglang/srt/parser/reasoning_parser.py"
_L = "common/parsers/"
_O = "model/parsers/"
_M = "crates/tool_parser/src/parsers/"
_MR = "crates/reasoning_parser/src/parsers/"
_D = "lib/parsers/src/tool_calling/"
_DR = "lib/parsers/src/reasoning/"

# fmt: off
TOOL_PARSERS: tuple[ToolParser, ...] = (
    # vLLM 0.33.0 (vllm/tool_parsers/__init__.py names them)
    ToolParser("vllm", "hermes", "json-tags", _HERMES, source=_V + "hermes_tool_parser.py"),
    ToolParser("vllm", "qwen3_json", "json-tags", _HERMES, source=_V + "__init__.py", note="an alias of hermes"),
    ToolParser("vllm", "qwen3_coder", "xml-function", _HERMES, keep_special="always", source=_VP + "qwen3.py"),
    ToolParser("vllm", "qwen3_xml", "xml-function", _HERMES, keep_special="always", source=_VP + "qwen3.py", note="the same engine as qwen3_coder"),
    ToolParser("vllm", "llama3_json", "bare-json", ("<|python_tag|>",), keep_special="never", requires=("<|python_tag|>",),
               source=_V + "llama_tool_parser.py"),
    ToolParser("vllm", "llama4_json", "bare-json", ("<|python_tag|>",), keep_special="never", requires=("<|python_tag|>",),
               source=_V + "llama_tool_parser.py", note="the llama3_json class"),
    ToolParser("vllm", "pythonic", "pythonic", (), keep_special="never", source=_V + "pythonic_tool_parser.py"),
    ToolParser("vllm", "llama4_pythonic", "pythonic", ("<|python_start|>", "<|python_end|>"), keep_special="never",
               source=_V + "llama4_pythonic_tool_parser.py"),
    ToolParser("vllm", "mistral", "name-args", ("[TOOL_CALLS]", "[ARGS]"), by_id=("[TOOL_CALLS]",), requires=("[TOOL_CALLS]",),
               source=_VP + "mistral.py"),
    ToolParser("vllm", "deepseek_v3", "sep-fenced", _DS_CALLS, keep_special="never", requires=_DS_CALLS[:4],
               source=_V + "deepseekv3_tool_parser.py"),
    ToolParser("vllm", "deepseek_v31", "sep-json", _DS_CALLS, keep_special="never", requires=_DS_CALLS[:4], stream_drops_tail=True,
               source=_V + "deepseekv31_tool_parser.py"),
    ToolParser("vllm", "deepseek_v32", "invoke", _DSML, keep_special="always", source=_VP + "deepseek_v32.py"),
    ToolParser("vllm", "deepseek_v4", "invoke", _DSML4, keep_special="always", source=_VP + "deepseek_v4.py"),
    ToolParser("vllm", "kimi_k2", "section-calls", _KIMI, source=_V + "kimi_k2_tool_parser.py"),
    ToolParser("vllm", "glm45", "arg-kv", _GLM, keep_special="always", source=_VP + "glm47_moe.py"),
    ToolParser("vllm", "glm47", "arg-kv", _GLM, keep_special="always", source=_VP + "glm47_moe.py"),
    ToolParser("vllm", "openai", "harmony", ("<|message|>", "<|call|>"), keep_special="never", harmony_only=True, source=_VP + "harmony.py",
               note="reads the harmony token ids, so the calls survive skip_special_tokens"),
    ToolParser("vllm", "minimax_m2", "invoke", _MINIMAX, keep_special="always", source=_VP + "minimax_m2.py"),
    ToolParser("vllm", "granite", "json-array", ("<|tool_call|>",), keep_special="always", source=_VP + "granite.py"),
    ToolParser("vllm", "granite4", "json-tags", _HERMES, source=_V + "granite4_tool_parser.py"),
    ToolParser("vllm", "seed_oss", "xml-function", ("<function=", "</function>"), keep_special="always", source=_VP + "seed_oss.py",
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
    ToolParser("vllm", "hy_v3", "arg-kv", _HY3, keep_special="never", requires=("<tool_calls:opensource>", "</tool_calls:opensource>"), source=_V + "hy_v3_tool_parser.py"),
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
    ToolParser("sglang", "gpt-oss", "harmony", ("<|message|>", "<|call|>", "<|channel|>commentary"), source=_S + "gpt_oss_detector.py",
               note="expects the recipient after the commentary channel, not in the role header as the gpt-oss "
                    "template writes it"),
    ToolParser("sglang", "minimax-m2", "invoke", _MINIMAX, source=_S + "minimax_m2.py"),
    ToolParser("sglang", "step3p5", "xml-function", _HERMES, source=_S + "function_call_parser.py", note="the qwen3_coder detector"),
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
    ToolParser("llama.cpp", "ministral3", "name-args", ("[TOOL_CALLS]", "[ARGS]"), detect=("[SYSTEM_PROMPT]", "[TOOL_CALLS]", "[ARGS]"),
               source=_L + "ministral3.cpp"),
    ToolParser("llama.cpp", "gpt-oss", "harmony", ("<|message|>", "<|call|>"), detect=("<|channel|>",), source=_L + "gpt-oss.cpp"),
    ToolParser("llama.cpp", "muse-glimmer", "invoke", _MUSE, detect=("<atem:function_calls>", "<|eom|>"), source=_L + "muse-glimmer.cpp"),
    ToolParser("llama.cpp", "kimi-k2", "section-calls", _KIMI, detect=("<|tool_calls_section_begin|>", "<|tool_call_begin|>"),
               source=_L + "kimi-k2.cpp"),
    ToolParser("llama.cpp", "kimi-k3", "xtml", _KIMI_K3, detect=("<|open|>", "<|close|>", "<|end_of_msg|>"), source=_L + "kimi-k3.cpp"),
    ToolParser("llama.cpp", "cohere2moe", "json-block", _COHERE, detect=("<|START_TEXT|>", "<|START_ACTION|>"), source=_L + "cohere2moe.cpp"),
    ToolParser("llama.cpp", "lfm2", "lfm2", _LFM2, detect=("<|tool_call_start|>", "<|tool_list_start|>"), source=_L + "lfm2.cpp"),
    ToolParser("llama.cpp", "gigachat-v3", "json-block", _GIGACHAT, detect=("<|role_sep|>", "<|message_sep|>"),
               detect_not=("<|function_call|>",), source=_L + "gigachat-v3.cpp", note="reads the call after the "
                                                                                      "content, not only at the start"),
    ToolParser("llama.cpp", "minimax-m3", "minimax-m3", _MINIMAX_M3, detect=("]<]minimax[>[", "<tool_call>", "<invoke name="),
               source=_L + "minimax-m3.cpp"),
    ToolParser("llama.cpp", "deepseek-v3.2", "invoke", _DSML, detect=("dsml_token", "DSML", "function_calls"), source=_L + "deepseek.cpp"),
    ToolParser("llama.cpp", "deepseek-v4", "invoke", _DSML4, detect=("dsml_token", "DSML"), source=_L + "deepseek.cpp",
               note="the deepseek-v3.2 parser with a tool_calls block, when the template has no function_calls"),
    ToolParser("llama.cpp", "gemma4", "gemma4", _GEMMA4, detect=("'<|tool_call>call:'",), source=_L + "gemma4.cpp"),
    ToolParser("llama.cpp", "minicpm5", "cdata-xml-json", _MINICPM5, detect=("Tool usage guidelines:", '<function name="', '<param name="'),
               source=_L + "minicpm5.cpp", note="a value the schema does not type as a string must be JSON"),
    ToolParser("llama.cpp", "qwen3-coder", "xml-function", _HERMES, detect=("<tool_call>", "<function=", "<parameter="),
               source=_L + "qwen3-coder.cpp"),
    ToolParser("llama.cpp", "auto", "any", (), source="common/chat-auto-parser-generator.cpp",
               note="the auto-parser reads the format from the template; emulated by trying every grammar"),
    # Ollama (Modelfile PARSER names, model/parsers/parsers.go)
    ToolParser("ollama", "qwen3", "json-tags", _HERMES, source=_O + "qwen3.go"),
    ToolParser("ollama", "qwen3-coder", "xml-function", _HERMES, source=_O + "qwen3coder.go"),
    ToolParser("ollama", "qwen3.5", "xml-function", _HERMES, source=_O + "qwen35.go", note="thinking, then the qwen3-coder XML parser"),
    ToolParser("ollama", "deepseek3", "sep-json", _DS_CALLS, source=_O + "deepseek3.go"),
    ToolParser("ollama", "glm-4.7", "arg-kv", _GLM, source=_O + "glm47.go"),
    ToolParser("ollama", "harmony", "harmony", ("<|message|>", "<|call|>"), source="harmony/harmonyparser.go"),
    ToolParser("ollama", "ministral", "name-args", ("[TOOL_CALLS]", "[ARGS]"), source=_O + "ministral.go"),
    # smg f8daa88 (crates/tool_parser/src/factory.rs register_parser); step3, sarashina, inkling have formats no
    # grammar here reads yet
    ToolParser("smg", "json", "bare-json", (), source=_M + "json.rs", note="a bare JSON object or array"),
    ToolParser("smg", "mistral", "json-array", ("[TOOL_CALLS]",), source=_M + "mistral.rs", note="the [TOOL_CALLS] [ array form"),
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
    ToolParser("tgi", "grammar", "tgi-json", (), keep_special="never", constrained=True, source="router/src/infer/tool_grammar.rs",
               note='generation constrained to {"function": {"_name": NAME, ...arguments}} (a no_tool function for '
                    'auto)'),
    # Dynamo (lib/parsers/src/tool_calling/parsers.rs get_tool_parser_map); phi4, jamba and nemotron_deci have formats
    # no grammar here reads yet
    ToolParser("dynamo", "hermes", "json-tags", _HERMES, keep_special="never", source=_D + "json/base_json_parser.rs"),
    ToolParser("dynamo", "qwen25", "json-tags", _HERMES, keep_special="never", source=_D + "parsers.rs", note="the hermes configuration"),
    ToolParser("dynamo", "llama3_json", "bare-json", ("<|python_tag|>",), keep_special="never", source=_D + "json/base_json_parser.rs"),
    ToolParser("dynamo", "mistral", "json-array", ("[TOOL_CALLS]",), keep_special="never", source=_D + "json/base_json_parser.rs"),
    ToolParser("dynamo", "pythonic", "pythonic", (), keep_special="never", source=_D + "pythonic/pythonic_parser.rs"),
    ToolParser("dynamo", "harmony", "harmony", ("<|message|>", "<|call|>"), keep_special="always", source=_D + "harmony/harmony_parser.rs"),
    ToolParser("dynamo", "deepseek_v3", "sep-fenced", _DS_CALLS, keep_special="never", source=_D + "json/deepseek_v3_parser.rs"),
    ToolParser("dynamo", "deepseek_v3_1", "sep-json", _DS_CALLS, keep_special="never", source=_D + "json/deepseek_v3_1_parser.rs"),
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

# fmt: off
REASONING_PARSERS: tuple[ReasoningParser, ...] = (
    # vLLM 0.33.0 (vllm/reasoning/__init__.py). The parser-engine ones (qwen3, glm45, kimi_k2, minimax_m2, seed_oss)
    # start in reasoning unless enable_thinking is false, and a tool-call opener ends it.
    ReasoningParser("vllm", "deepseek_r1", *_THINK, no_start="reasoning", by_id=_THINK, requires=_THINK, stream_reads_prompt=True,
                    stream_start_leaks=True, source=_VR + "deepseek_r1_reasoning_parser.py"),
    ReasoningParser("vllm", "deepseek_v3", *_THINK, no_start="reasoning", by_id=_THINK, requires=_THINK, stream_reads_prompt=True,
                    stream_start_leaks=True, kwarg="thinking", needs_kwarg=True, startup_check=False, source=_VR + "deepseek_v3_reasoning_parser.py",
                    note="deepseek_r1 when the request sets thinking or enable_thinking, else no reasoning"),
    ReasoningParser("vllm", "qwen3", *_THINK, no_start="reasoning", ends_at=("<tool_call>",), keep_special="always",
                    stream_reads_prompt=True, kwarg="enable_thinking", source=_VP + "qwen3.py"),
    ReasoningParser("vllm", "glm45", *_THINK, no_start="reasoning", ends_at=("<tool_call>",), keep_special="always",
                    stream_reads_prompt=True, kwarg="enable_thinking", source=_VP + "glm47_moe.py"),
    ReasoningParser("vllm", "kimi_k2", *_THINK, no_start="reasoning", ends_at=("<|tool_calls_section_begin|>",), keep_special="always",
                    stream_reads_prompt=True, kwarg="thinking", source=_VP + "kimi_k2.py"),
    ReasoningParser("vllm", "openai_gptoss", "<|channel|>analysis<|message|>", "<|end|>", by_id=("<|channel|>", "<|message|>", "<|end|>"),
                    harmony_only=True, source=_VR + "gptoss_reasoning_parser.py", note="only inside vLLM's harmony "
                                                                                       "path (gpt-oss)"),
    ReasoningParser("vllm", "mistral", "[THINK]", "[/THINK]", by_id=("[THINK]", "[/THINK]"), requires=("[THINK]", "[/THINK]"),
                    keep_special="tools", stream_reads_prompt=True, source=_VP + "mistral.py"),
    ReasoningParser("vllm", "cohere_command3", "<|START_THINKING|>", "<|END_THINKING|>", no_start="content", keep_special="always",
                    source=_VP + "cohere_command.py"),
    ReasoningParser("vllm", "cohere_command4", "<|START_THINKING|>", "<|END_THINKING|>", no_start="reasoning", keep_special="always",
                    source=_VP + "cohere_command.py", note="starts in reasoning: the prompt opened <|START_THINKING|>"),
    ReasoningParser("vllm", "granite", "Here is my thought process:", "Here is my response:", no_end="content", stream_reads_prompt=True,
                    source=_VR + "granite_reasoning_parser.py"),
    ReasoningParser("vllm", "minimax_m2", *_THINK, no_start="reasoning", ends_at=("<minimax:tool_call>",), keep_special="always",
                    stream_reads_prompt=True, source=_VP + "minimax_m2.py"),
    ReasoningParser("vllm", "seed_oss", "<seed:think>", "</seed:think>", no_start="reasoning", ends_at=("<seed:tool_call>",),
                    keep_special="always", source=_VP + "seed_oss.py"),
    # the new families' reasoning parsers (vllm/reasoning/__init__.py names them)
    ReasoningParser("vllm", "gemma4", "<|channel>", "<channel|>", no_start="reasoning", no_end="content", keep_special="always", kwarg="enable_thinking",
                    stream_reads_prompt=True,
                    source=_VP + "gemma4.py"),
    ReasoningParser("vllm", "kimi_k3", "<|open|>think<|sep|>", "<|close|>think<|sep|>", no_start="reasoning", kwarg="thinking", keep_special="always",
                    source=_VR + "kimi_k3_reasoning_parser.py"),
    ReasoningParser("vllm", "minimax_m3", "<mm:think>", "</mm:think>", no_start="content", requires=("<mm:think>", "</mm:think>"), source=_VR + "minimax_m3_reasoning_parser.py"),
    ReasoningParser("vllm", "hy_v3", "<think:opensource>", "</think:opensource>", no_start="reasoning", needs_kwarg=True,
                    requires=_THINK,
                    gate=("reasoning_effort",), source=_VR + "hy_v3_reasoning_parser.py",
                    note="reasoning only when the request sets a reasoning_effort other than no_think; vLLM requires "
                         "the think "
                         "markers with the tokenizer's token_suffix at start-up, modelled as the unsuffixed pair"),
    ReasoningParser("vllm", "muse", " to=self<|message|>", "<|eom|>", no_start="content", keep_special="always", source=_VR + "muse_reasoning_parser.py"),
    ReasoningParser("vllm", "muse_glimmer", " to=self<|message|>", "<|eom|>", no_start="content", keep_special="always", source=_VR + "muse_glimmer_reasoning_parser.py"),
    # SGLang 0.5.23 (ReasoningParser.DetectorMap). "prompt": reasoning when the server forces it, which it decides from
    # the template's toggle and the request's kwargs (tokaudit.parsers.toggle); deepseek-r1, gpt-oss and minimax are
    # always in reasoning whatever the server passes
    ReasoningParser("sglang", "deepseek-r1", *_THINK, no_start="reasoning", start_only_at_beginning=True, default="always", source=_SR),
    ReasoningParser("sglang", "deepseek-v3", *_THINK, no_start="prompt", kwarg="thinking", start_only_at_beginning=True,
                    default="explicit_thinking", source=_SR),
    ReasoningParser("sglang", "qwen3", *_THINK, no_start="prompt", ends_at=("<tool_call>",), kwarg="enable_thinking", start_only_at_beginning=True,
                    default="enable_thinking", source=_SR),
    ReasoningParser("sglang", "glm45", *_THINK, no_start="prompt", ends_at=("<tool_call>",), start_only_at_beginning=True,
                    default="enable_thinking", source=_SR),
    ReasoningParser("sglang", "kimi_k2", *_THINK, no_start="prompt", ends_at=("<|tool_calls_section_begin|>",), kwarg="thinking",
                    start_only_at_beginning=True, default="thinking", source=_SR),
    ReasoningParser("sglang", "gpt-oss", "<|channel|>analysis<|message|>", "<|end|>", no_start="dropped", start_only_at_beginning=True,
                    default="always", source=_SR, note="text outside the harmony channels is dropped"),
    ReasoningParser("sglang", "mistral", "[THINK]", "[/THINK]", no_start="prompt", start_only_at_beginning=True, default="mistral", source=_SR),
    ReasoningParser("sglang", "minimax", *_THINK, no_start="reasoning", ends_at=("<tool_call>",), start_only_at_beginning=True,
                    default="enable_thinking", source=_SR, note="the qwen3 detector with force_reasoning"),
    ReasoningParser("sglang", "gemma4", "<|channel>", "<channel|>", no_start="prompt", start_only_at_beginning=True,
                    default="explicit_enable_thinking", source=_SR),
    ReasoningParser("sglang", "kimi_k3", "<|open|>think<|sep|>", "<|close|>think<|sep|>", no_start="prompt", ends_at=("<|open|>tools<|sep|>",),
                    start_only_at_beginning=True, default="thinking", source=_SR),
    ReasoningParser("sglang", "minimax-m3", "<mm:think>", "</mm:think>", no_start="prompt", start_only_at_beginning=True, default="always",
                    source=_SR, note="forced only when the request sets thinking_mode to enabled"),
    # hunyuan's markers carry no token suffix: on Hy3's suffixed tokenizer only the tool section ends reasoning
    ReasoningParser("sglang", "hunyuan", *_THINK, no_start="prompt", ends_at=("<tool_calls:opensource>",),
                    start_only_at_beginning=True, default="always", source=_SR, note="forced by the request's "
                                                                                     "reasoning_effort"),
    ReasoningParser("sglang", "muse", " to=self<|message|>", "<|eom|>", no_start="prompt", no_end="content", start_only_at_beginning=True,
                    default="always", source=_SR),
    # llama.cpp's server: --reasoning-format deepseek (the default, <think> tags; reasoning when the prompt opened it)
    ReasoningParser("llama.cpp", "deepseek", *_THINK, no_start="prompt", source="common/chat.cpp"),
    # Ollama: the thinking half of the qwen3 / qwen3.5 / deepseek3 / glm-4.7 parsers
    ReasoningParser("ollama", "qwen3-thinking", *_THINK, no_start="prompt", source=_O + "qwen3.go"),
    # smg f8daa88 (crates/reasoning_parser/src/factory.rs): always_in_reasoning → text before <think> is reasoning
    ReasoningParser("smg", "deepseek_r1", *_THINK, no_start="reasoning", source=_MR + "deepseek_r1.rs"),
    ReasoningParser("smg", "qwen3", *_THINK, no_start="prompt", source=_MR + "qwen3.rs"),
    ReasoningParser("smg", "qwen3_thinking", *_THINK, no_start="reasoning", source=_MR + "qwen3.rs"),
    ReasoningParser("smg", "glm45", *_THINK, no_start="prompt", source=_MR + "glm45.rs"),
    ReasoningParser("smg", "step3", *_THINK, no_start="reasoning", source=_MR + "step3.rs"),
    ReasoningParser("smg", "minimax", *_THINK, no_start="reasoning", source=_MR + "minimax.rs"),
    ReasoningParser("smg", "kimi", "◁think▷", "◁/think▷", no_start="prompt", source=_MR + "kimi.rs"),
    ReasoningParser("smg", "cohere_cmd", "<|START_THINKING|>", "<|END_THINKING|>", no_start="prompt", source=_MR + "cohere_cmd.rs"),
    ReasoningParser("smg", "nano_v3", *_THINK, no_start="prompt", source=_MR + "nano_v3.rs"),
    # Dynamo (lib/parsers/src/reasoning/mod.rs); kimi_k25 and gpt_oss keep special tokens (preprocessor.rs)
    ReasoningParser("dynamo", "deepseek_r1", *_THINK, no_start="reasoning", source=_DR + "deepseek_r1_parser.rs"),
    ReasoningParser("dynamo", "basic", *_THINK, no_start="prompt", source=_DR + "base_parser.rs"),
    ReasoningParser("dynamo", "qwen3", *_THINK, no_start="prompt", source=_DR + "mod.rs", note="the basic parser"),
    ReasoningParser("dynamo", "kimi_k25", *_THINK, no_start="prompt", keep_special="always", source=_DR + "mod.rs"),
    ReasoningParser("dynamo", "minimax_append_think", *_THINK, no_start="reasoning", source=_DR + "minimax_append_think_parser.rs"),
    ReasoningParser("dynamo", "granite", "Here is my thought process:", "Here is my response:", no_end="content",
                    source=_DR + "granite_parser.rs"),
    ReasoningParser("dynamo", "gpt_oss", "<|channel|>analysis<|message|>", "<|end|>", no_start="dropped", keep_special="always",
                    source=_DR + "gpt_oss_parser.rs"),
)
# fmt: on


def tool_parsers(stack: str | None = None) -> list[ToolParser]:
    return [p for p in TOOL_PARSERS if stack is None or p.stack == stack]


def reasoning_parsers(stack: str | None = None) -> list[ReasoningParser]:
    return [p for p in REASONING_PARSERS if stack is None or p.stack == stack]


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


def find_reasoning_parser(stack: str, name: str) -> ReasoningParser | None:
    return next((p for p in REASONING_PARSERS if p.stack == stack and p.name == name), None)
