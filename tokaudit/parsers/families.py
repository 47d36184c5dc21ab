"""The tool-call and reasoning parsers each serving stack offers, by the stack's own names, as data.

A row says what the parser looks for (its markers and which grammar of :mod:`tokaudit.parsers.grammars`
reads them), whether it matches a marker by token id (then the marker must be one token, and survive
detokenization) or by text, when the stack turns ``skip_special_tokens`` off for it, whether it takes the
output to start inside reasoning, and which tokens the stack requires at start-up (it refuses to start
with a tokenizer that lacks them). Each row names the source file it was read from, at the stack version
of :data:`STACKS`; ``tests/data/parser_golden.jsonl`` holds what the real parser classes returned on the
round-trip cases (``scripts/golden_parsers.py``), and the tests hold the grammars to it. The rows are
:mod:`tokaudit.parsers.tool_table` and :mod:`tokaudit.parsers.reasoning_table`.
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
    "llama.cpp": Stack("llama.cpp", "llama-cpp-python 0.3.36", "ggml-org/llama.cpp", "tools", "pieces", "template",
                       True),
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
