"""A stack's reasoning parser and tool parser applied to one output, whole and streamed.

Whole (non-streaming): the reasoning parser splits the text, the tool parser reads what it left as content.
Streamed: the same text arrives in deltas (one per detokenizer step); a parser that finds a marker by token
id sees it only when the marker arrived as that one id, and vLLM's streaming path reads the prompt's ids (a
prompt that already closed reasoning makes the whole output content) where its non-streaming path does not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tokaudit.parsers.families import ReasoningParser, ToolParser
from tokaudit.parsers.grammars import GRAMMARS, Call, Parsed


@dataclass(frozen=True)
class Outcome:
    """What the client receives: reasoning, content and tool calls."""

    reasoning: str | None
    content: str | None
    calls: tuple[Call, ...]
    error: str | None = None


def split_reasoning(text: str, parser: ReasoningParser | None, prompt: str | None, seen: Callable[[str], bool] = lambda m: True,
                    streaming: bool = False) -> tuple[str | None, str | None]:
    """(reasoning, content). ``prompt`` is "open" when the generation prompt opened reasoning, "closed" when it
    opened and closed it, None when it has no reasoning marker. ``seen`` says whether a marker the parser finds
    by id arrived as its one token (streaming)."""
    if parser is None:
        return None, text or None
    if streaming and parser.stream_reads_prompt and prompt == "closed":
        return None, text or None

    def find(marker: str, where: str, at: int = 0) -> int:
        i = where.find(marker, at)
        while i >= 0 and marker in parser.by_id and not seen(marker):
            i = -1  # the marker's text is there, but not as its token: a parser matching ids does not see it
        return i

    i = find(parser.start, text)
    if i >= 0:
        rest = text[i + len(parser.start):]
    else:
        opened = parser.no_start == "reasoning" or (parser.no_start == "prompt" and prompt == "open")
        if not opened:
            return None, text or None
        rest = text
    ends = [(j, len(parser.end)) for j in [find(parser.end, rest)] if j >= 0]
    ends += [(j, 0) for m in parser.ends_at for j in [rest.find(m)] if j >= 0]
    if not ends:
        if parser.no_end == "reasoning":
            return rest or None, None
        return None, text or None
    j, width = min(ends)
    return rest[:j] or None, rest[j + width:] or None


def parse_tools(text: str | None, parser: ToolParser | None, tools: Sequence[dict[str, Any]] | None,
                seen: Callable[[str], bool] = lambda m: True) -> Parsed:
    if text is None or parser is None:
        return Parsed(content=text)
    if any(m in text and not seen(m) for m in parser.by_id):
        return Parsed(content=text, error="a marker the parser finds by id did not arrive as its token")
    return GRAMMARS[parser.grammar](text, parser.markers, tools)


def parse_whole(text: str, tool: ToolParser | None, reasoning: ReasoningParser | None, tools: Sequence[dict[str, Any]] | None,
                prompt: str | None) -> Outcome:
    r, content = split_reasoning(text, reasoning, prompt)
    parsed = parse_tools(content, tool, tools)
    return Outcome(r, parsed.content, parsed.calls, parsed.error)


def parse_streamed(deltas: Sequence[tuple[str, Sequence[int]]], tool: ToolParser | None, reasoning: ReasoningParser | None,
                   tools: Sequence[dict[str, Any]] | None, prompt: str | None, id_of: Callable[[str], int | None]) -> Outcome:
    """The outcome of the streamed deltas (text, ids): the text joined as the client receives it, with by-id
    markers seen only when their id arrived."""
    text = "".join(d for d, _ in deltas)
    arrived = {i for _, ids in deltas for i in ids}

    def seen(marker: str) -> bool:
        token = id_of(marker)
        return token is not None and token in arrived

    r, content = split_reasoning(text, reasoning, prompt, seen, streaming=True)
    parsed = parse_tools(content, tool, tools, seen)
    return Outcome(r, parsed.content, parsed.calls, parsed.error)
