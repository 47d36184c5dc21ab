"""A stack's reasoning parser and tool parser applied to one output, whole and streamed.

Whole (non-streaming): the reasoning parser splits the text, the tool parser reads what it left as content.
Streamed: the same text arrives in deltas (one per detokenizer step); a parser that finds a marker by token
id sees it only when the marker arrived as that one id, and vLLM's streaming path reads the prompt's ids (a
prompt that already closed reasoning makes the whole output content) where its non-streaming path does not.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tokaudit.parsers.families import STACKS, ReasoningParser, ToolParser
from tokaudit.parsers.reasoning_table import REASONING_PARSERS
from tokaudit.parsers.calls import Call, Parsed
from tokaudit.parsers.grammars import GRAMMARS


@dataclass(frozen=True)
class Outcome:
    """What the client receives: reasoning, content and tool calls."""

    reasoning: str | None
    content: str | None
    calls: tuple[Call, ...]
    error: str | None = None


#: The reasoning markers a generation prompt may open or close (SGLang's and llama.cpp's template check).
OPENERS = ("<think>", "<seed:think>", "[THINK]", "<|START_THINKING|>")
CLOSERS = ("</think>", "</seed:think>", "[/THINK]", "<|END_THINKING|>")


def _last(prompt: str, start: tuple[str, ...], end: tuple[str, ...]) -> str | None:
    opened = max(prompt.rfind(m) for m in start)
    closed = max(prompt.rfind(m) for m in end)
    if opened < 0 and closed < 0:
        return None
    return "open" if opened > closed else "closed"


def template_state(prompt: str) -> str | None:
    """What the generation prompt's last reasoning marker does: "open" (opens reasoning), "closed" (closes it)."""
    return _last(prompt, OPENERS, CLOSERS)


def prompt_state(parser: ReasoningParser, prompt: str) -> str | None:
    """What the parser's stack makes of the prompt: vLLM reads its ids back to the parser's last start or end
    token; SGLang and llama.cpp look at the template's generation prompt for any think marker."""
    if STACKS[parser.stack].prompt_check == "template":
        return template_state(prompt)
    return _last(prompt, (parser.start,), (parser.end,))


def enabled(parser: ReasoningParser, kwargs: dict[str, Any]) -> bool:
    """A parser gated by a chat-template kwarg (vLLM's deepseek_v3, hy_v3) parses reasoning only when it is set."""
    return not parser.needs_kwarg or any(bool(kwargs.get(k)) and kwargs.get(k) != "no_think" for k in parser.gate)


def split_reasoning(
    text: str,
    parser: ReasoningParser | None,
    prompt: str,
    kwargs: dict[str, Any] | None = None,
    seen: Callable[[str], bool] = lambda m: True,
    streaming: bool = False,
    force: bool | None = None,
) -> tuple[str | None, str | None]:
    """(reasoning, content) of ``text``, generated after ``prompt``. ``seen`` says whether a marker the parser
    finds by id arrived as its one token (streaming). ``force``: the server's decision that the output starts
    inside reasoning (:func:`tokaudit.parsers.toggle.forces_reasoning`); None: the generation prompt decides."""
    if parser is None or not enabled(parser, kwargs or {}):
        return None, text or None
    state = prompt_state(parser, prompt)
    if streaming and parser.stream_reads_prompt and state == "closed":
        return None, text or None

    def find(marker: str, where: str, at: int = 0) -> int:
        i = where.find(marker, at)
        while i >= 0 and marker in parser.by_id and not seen(marker):
            i = -1  # the marker's text is there, but not as its token: a parser matching ids does not see it
        return i

    i = find(parser.start, text)
    if i >= 0:
        # vLLM drops everything up to the start marker; SGLang removes it only at the very start
        # (its streaming path removes it wherever it arrives)
        rest = text if parser.start_only_at_beginning and i > 0 and not streaming else text[i + len(parser.start) :]
    else:
        no_start = parser.no_start
        if no_start == "reasoning" and parser.kwarg is not None and (kwargs or {}).get(parser.kwarg) is False:
            no_start = "content"  # the request turned thinking off: the parser starts in content
        if no_start == "dropped":
            return None, None
        opened = state == "open" if force is None else force
        if not (no_start == "reasoning" or (no_start == "prompt" and opened)):
            return None, text or None
        rest = text
    ends = [(j, len(parser.end)) for j in [find(parser.end, rest)] if j >= 0]
    ends += [(j, 0) for m in parser.ends_at for j in [rest.find(m)] if j >= 0]
    if not ends:
        if parser.no_end == "reasoning":
            return rest or None, None
        return None, text or None
    j, width = min(ends)
    return rest[:j] or None, rest[j + width :] or None


def parse_tools(
    text: str | None,
    parser: ToolParser | None,
    tools: Sequence[dict[str, Any]] | None,
    seen: Callable[[str], bool] = lambda m: True,
) -> Parsed:
    if text is None or parser is None:
        return Parsed(content=text)
    if any(m in text and not seen(m) for m in parser.by_id):
        return Parsed(content=text, error="a marker the parser finds by id did not arrive as its token")
    return GRAMMARS[parser.grammar](text, parser.markers, tools)


def _own(tool: ToolParser | None, reasoning: ReasoningParser | None) -> ReasoningParser | None:
    """The reasoning parser that runs: the named one, or the one a tool parser brings (vLLM's Cohere parsers)."""
    if reasoning is None and tool is not None and tool.reasoning is not None:
        return next((p for p in REASONING_PARSERS if p.stack == tool.stack and p.name == tool.reasoning), None)
    return reasoning


def parse_whole(
    text: str,
    tool: ToolParser | None,
    reasoning: ReasoningParser | None,
    tools: Sequence[dict[str, Any]] | None,
    prompt: str,
    kwargs: dict[str, Any] | None = None,
    force: bool | None = None,
) -> Outcome:
    reasoning = _own(tool, reasoning)
    r, content = split_reasoning(text, reasoning, prompt, kwargs, force=force)
    parsed = parse_tools(content, tool, tools)
    return Outcome(r, parsed.content, parsed.calls, parsed.error)


def parse_streamed(
    deltas: Sequence[tuple[str, Sequence[int]]],
    tool: ToolParser | None,
    reasoning: ReasoningParser | None,
    tools: Sequence[dict[str, Any]] | None,
    prompt: str,
    id_of: Callable[[str], int | None],
    kwargs: dict[str, Any] | None = None,
    force: bool | None = None,
) -> Outcome:
    """The outcome of the streamed deltas (text, ids): the text joined as the client receives it, with by-id
    markers seen only when their id arrived (``force``: as :func:`split_reasoning`)."""
    reasoning = _own(tool, reasoning)
    arrived = {i for _, ids in deltas for i in ids}
    # a parser that finds its reasoning markers by id sees them even when skip_special_tokens deleted their text
    marks: dict[int | None, str] = {}
    if reasoning is not None and enabled(reasoning, kwargs or {}):
        marks = {id_of(m): m for m in (reasoning.start, reasoning.end) if m in reasoning.by_id}
    marks.pop(None, None)
    pieces = []
    for delta, ids in deltas:
        pieces.append(delta)
        pieces += [marks[i] for i in ids if i in marks and marks[i] not in delta]
    text = "".join(pieces)

    def seen(marker: str) -> bool:
        token = id_of(marker)
        return token is not None and token in arrived

    r, content = split_reasoning(text, reasoning, prompt, kwargs, seen, streaming=True, force=force)
    parsed = parse_tools(content, tool, tools, seen)
    if tool is not None and tool.stream_drops_tail and parsed.calls:
        end = id_of(tool.markers[3])
        burst = next((k for k, (_, ids) in enumerate(deltas) if end in ids), None)
        if burst is not None and len(deltas[burst][1]) > 1:
            delta = deltas[burst][0]
            lost = delta[: delta.find(tool.markers[3])] if tool.markers[3] in delta else delta
            if lost:  # the last call's arguments lose the text that came with the end marker
                last = parsed.calls[-1]
                raw = json.dumps(last.arguments, ensure_ascii=False)
                truncated = Call(last.name, raw[: max(0, len(raw) - len(lost))])
                parsed = Parsed(
                    (*parsed.calls[:-1], truncated),
                    parsed.content,
                    "arguments truncated: the text that arrived with the call's end marker was dropped",
                )
    if r is not None and reasoning is not None and reasoning.stream_start_leaks:
        start = id_of(reasoning.start)
        end = id_of(reasoning.end)
        first_burst = next((ids for _, ids in deltas if start in ids), None)
        if first_burst is not None and len(first_burst) > 1 and end not in first_burst:
            r = reasoning.start + r  # the whole first delta went to reasoning, marker included
    return Outcome(r, parsed.content, parsed.calls, parsed.error)


def stack_skips_special(
    stack: str, tool: ToolParser | None, reasoning: ReasoningParser | None, with_tools: bool, harmony: bool = False
) -> bool:
    """skip_special_tokens as the stack sets it for a request (with or without tools) and these parsers
    (``harmony``: the model is gpt-oss, for which SGLang always keeps them)."""
    info = STACKS[stack]
    parsers = [p for p in (tool, reasoning) if p is not None]
    if info.text == "pieces" or any(p.keep_special == "always" for p in parsers) or (harmony and stack == "sglang"):
        return False
    if not with_tools:
        return True
    if info.keep_special == "tools" and tool is not None:
        return False
    return not any(p.keep_special == "tools" for p in parsers)
