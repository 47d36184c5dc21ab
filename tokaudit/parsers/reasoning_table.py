"""The reasoning parsers of each serving stack, one row each (:class:`~tokaudit.parsers.families.ReasoningParser`),
and the lookups over them. A row's ``source`` is the file it was read from, under the stack's repository
(:data:`~tokaudit.parsers.families.STACKS`)."""

from __future__ import annotations

from tokaudit.parsers.families import ReasoningParser

_THINK = ("<think>", "</think>")

#: where each stack's reasoning parsers live in its repository
_VP = "vllm/parser/"
_VR = "vllm/reasoning/"
_SR = "python/sglang/srt/parser/reasoning_parser.py"
_O = "model/parsers/"
_MR = "crates/reasoning_parser/src/parsers/"
_DR = "lib/parsers/src/reasoning/"

# fmt: off
REASONING_PARSERS: tuple[ReasoningParser, ...] = (
    # vLLM 0.33.0 (vllm/reasoning/__init__.py). The parser-engine ones (qwen3, glm45, kimi_k2, minimax_m2, seed_oss)
    # start in reasoning unless enable_thinking is false, and a tool-call opener ends it.
    ReasoningParser("vllm", "deepseek_r1", *_THINK, no_start="reasoning", by_id=_THINK, requires=_THINK,
                    stream_reads_prompt=True, stream_start_leaks=True, source=_VR + "deepseek_r1_reasoning_parser.py"),
    ReasoningParser("vllm", "deepseek_v3", *_THINK, no_start="reasoning", by_id=_THINK, requires=_THINK,
                    stream_reads_prompt=True, stream_start_leaks=True, kwarg="thinking", needs_kwarg=True,
                    startup_check=False, source=_VR + "deepseek_v3_reasoning_parser.py",
                    note="deepseek_r1 when the request sets thinking or enable_thinking, else no reasoning"),
    ReasoningParser("vllm", "qwen3", *_THINK, no_start="reasoning", ends_at=("<tool_call>",), keep_special="always",
                    stream_reads_prompt=True, kwarg="enable_thinking", source=_VP + "qwen3.py"),
    ReasoningParser("vllm", "glm45", *_THINK, no_start="reasoning", ends_at=("<tool_call>",), keep_special="always",
                    stream_reads_prompt=True, kwarg="enable_thinking", source=_VP + "glm47_moe.py"),
    ReasoningParser("vllm", "kimi_k2", *_THINK, no_start="reasoning", ends_at=("<|tool_calls_section_begin|>",),
                    keep_special="always", stream_reads_prompt=True, kwarg="thinking", source=_VP + "kimi_k2.py"),
    ReasoningParser("vllm", "openai_gptoss", "<|channel|>analysis<|message|>", "<|end|>",
                    by_id=("<|channel|>", "<|message|>", "<|end|>"), harmony_only=True,
                    source=_VR + "gptoss_reasoning_parser.py", note="only inside vLLM's harmony path (gpt-oss)"),
    ReasoningParser("vllm", "mistral", "[THINK]", "[/THINK]", by_id=("[THINK]", "[/THINK]"),
                    requires=("[THINK]", "[/THINK]"), keep_special="tools", stream_reads_prompt=True,
                    source=_VP + "mistral.py"),
    ReasoningParser("vllm", "cohere_command3", "<|START_THINKING|>", "<|END_THINKING|>", no_start="content",
                    keep_special="always", source=_VP + "cohere_command.py"),
    ReasoningParser("vllm", "cohere_command4", "<|START_THINKING|>", "<|END_THINKING|>", no_start="reasoning",
                    keep_special="always", source=_VP + "cohere_command.py",
                    note="starts in reasoning: the prompt opened <|START_THINKING|>"),
    ReasoningParser("vllm", "granite", "Here is my thought process:", "Here is my response:", no_end="content",
                    stream_reads_prompt=True, source=_VR + "granite_reasoning_parser.py"),
    ReasoningParser("vllm", "minimax_m2", *_THINK, no_start="reasoning", ends_at=("<minimax:tool_call>",),
                    keep_special="always", stream_reads_prompt=True, source=_VP + "minimax_m2.py"),
    ReasoningParser("vllm", "seed_oss", "<seed:think>", "</seed:think>", no_start="reasoning",
                    ends_at=("<seed:tool_call>",), keep_special="always", source=_VP + "seed_oss.py"),
    # the new families' reasoning parsers (vllm/reasoning/__init__.py names them)
    ReasoningParser("vllm", "gemma4", "<|channel>", "<channel|>", no_start="reasoning", no_end="content",
                    keep_special="always", kwarg="enable_thinking", stream_reads_prompt=True, source=_VP + "gemma4.py"),
    ReasoningParser("vllm", "kimi_k3", "<|open|>think<|sep|>", "<|close|>think<|sep|>", no_start="reasoning",
                    kwarg="thinking", keep_special="always", source=_VR + "kimi_k3_reasoning_parser.py"),
    ReasoningParser("vllm", "minimax_m3", "<mm:think>", "</mm:think>", no_start="content",
                    requires=("<mm:think>", "</mm:think>"), source=_VR + "minimax_m3_reasoning_parser.py"),
    ReasoningParser("vllm", "hy_v3", "<think:opensource>", "</think:opensource>", no_start="reasoning",
                    needs_kwarg=True, requires=_THINK, gate=("reasoning_effort",),
                    source=_VR + "hy_v3_reasoning_parser.py", note="reasoning only when the request sets a "
                         "reasoning_effort other than no_think; vLLM requires the think markers with the tokenizer's "
                         "token_suffix at start-up, modelled as the unsuffixed pair"),
    ReasoningParser("vllm", "muse", " to=self<|message|>", "<|eom|>", no_start="content", keep_special="always",
                    source=_VR + "muse_reasoning_parser.py"),
    ReasoningParser("vllm", "muse_glimmer", " to=self<|message|>", "<|eom|>", no_start="content", keep_special="always",
                    source=_VR + "muse_glimmer_reasoning_parser.py"),
    # SGLang 0.5.23 (ReasoningParser.DetectorMap). "prompt": reasoning when the server forces it, which it decides from
    # the template's toggle and the request's kwargs (tokaudit.parsers.toggle); deepseek-r1, gpt-oss and minimax are
    # always in reasoning whatever the server passes
    ReasoningParser("sglang", "deepseek-r1", *_THINK, no_start="reasoning", start_only_at_beginning=True,
                    default="always", source=_SR),
    ReasoningParser("sglang", "deepseek-v3", *_THINK, no_start="prompt", kwarg="thinking", start_only_at_beginning=True,
                    default="explicit_thinking", source=_SR),
    ReasoningParser("sglang", "qwen3", *_THINK, no_start="prompt", ends_at=("<tool_call>",), kwarg="enable_thinking",
                    start_only_at_beginning=True, default="enable_thinking", source=_SR),
    ReasoningParser("sglang", "glm45", *_THINK, no_start="prompt", ends_at=("<tool_call>",),
                    start_only_at_beginning=True, default="enable_thinking", source=_SR),
    ReasoningParser("sglang", "kimi_k2", *_THINK, no_start="prompt", ends_at=("<|tool_calls_section_begin|>",),
                    kwarg="thinking", start_only_at_beginning=True, default="thinking", source=_SR),
    ReasoningParser("sglang", "gpt-oss", "<|channel|>analysis<|message|>", "<|end|>", no_start="dropped",
                    start_only_at_beginning=True, default="always", source=_SR,
                    note="text outside the harmony channels is dropped"),
    ReasoningParser("sglang", "mistral", "[THINK]", "[/THINK]", no_start="prompt", start_only_at_beginning=True,
                    default="mistral", source=_SR),
    ReasoningParser("sglang", "minimax", *_THINK, no_start="reasoning", ends_at=("<tool_call>",),
                    start_only_at_beginning=True, default="enable_thinking", source=_SR,
                    note="the qwen3 detector with force_reasoning"),
    ReasoningParser("sglang", "gemma4", "<|channel>", "<channel|>", no_start="prompt", start_only_at_beginning=True,
                    default="explicit_enable_thinking", source=_SR),
    ReasoningParser("sglang", "kimi_k3", "<|open|>think<|sep|>", "<|close|>think<|sep|>", no_start="prompt",
                    ends_at=("<|open|>tools<|sep|>",), start_only_at_beginning=True, default="thinking", source=_SR),
    ReasoningParser("sglang", "minimax-m3", "<mm:think>", "</mm:think>", no_start="prompt",
                    start_only_at_beginning=True, default="always", source=_SR,
                    note="forced only when the request sets thinking_mode to enabled"),
    # hunyuan's markers carry no token suffix: on Hy3's suffixed tokenizer only the tool section ends reasoning
    ReasoningParser("sglang", "hunyuan", *_THINK, no_start="prompt", ends_at=("<tool_calls:opensource>",),
                    start_only_at_beginning=True, default="always", source=_SR, note="forced by the request's "
                                                                                     "reasoning_effort"),
    ReasoningParser("sglang", "muse", " to=self<|message|>", "<|eom|>", no_start="prompt", no_end="content",
                    start_only_at_beginning=True, default="always", source=_SR),
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
    ReasoningParser("smg", "cohere_cmd", "<|START_THINKING|>", "<|END_THINKING|>", no_start="prompt",
                    source=_MR + "cohere_cmd.rs"),
    ReasoningParser("smg", "nano_v3", *_THINK, no_start="prompt", source=_MR + "nano_v3.rs"),
    # Dynamo (lib/parsers/src/reasoning/mod.rs); kimi_k25 and gpt_oss keep special tokens (preprocessor.rs)
    ReasoningParser("dynamo", "deepseek_r1", *_THINK, no_start="reasoning", source=_DR + "deepseek_r1_parser.rs"),
    ReasoningParser("dynamo", "basic", *_THINK, no_start="prompt", source=_DR + "base_parser.rs"),
    ReasoningParser("dynamo", "qwen3", *_THINK, no_start="prompt", source=_DR + "mod.rs", note="the basic parser"),
    ReasoningParser("dynamo", "kimi_k25", *_THINK, no_start="prompt", keep_special="always", source=_DR + "mod.rs"),
    ReasoningParser("dynamo", "minimax_append_think", *_THINK, no_start="reasoning",
                    source=_DR + "minimax_append_think_parser.rs"),
    ReasoningParser("dynamo", "granite", "Here is my thought process:", "Here is my response:", no_end="content",
                    source=_DR + "granite_parser.rs"),
    ReasoningParser("dynamo", "gpt_oss", "<|channel|>analysis<|message|>", "<|end|>", no_start="dropped",
                    keep_special="always", source=_DR + "gpt_oss_parser.rs"),
)
# fmt: on


def reasoning_parsers(stack: str | None = None) -> list[ReasoningParser]:
    return [p for p in REASONING_PARSERS if stack is None or p.stack == stack]


def find_reasoning_parser(stack: str, name: str) -> ReasoningParser | None:
    return next((p for p in REASONING_PARSERS if p.stack == stack and p.name == name), None)
