"""``replay --stack S --tool-parser P [--reasoning-parser R]``: a captured stream through the stack's detokenizer and
its parsers, chunked as captured, and the whole text through the same parsers. A call whose arguments do not come
back as JSON, or a streamed parse that gives other calls than the whole one, is TA507 tool-call-json."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tokaudit.parsers.families import ReasoningParser, ToolParser
from tokaudit.parsers.parse import Outcome, parse_streamed, parse_whole, stack_skips_special
from tokaudit.report.finding import Finding
from tokaudit.stream import codes
from tokaudit.stream.detokenizers import DecodeContext, Offsets, TokenBytes


def _json(o: Outcome) -> dict[str, Any]:
    return {
        "reasoning": o.reasoning,
        "content": o.content,
        "calls": [{"name": c.name, "arguments": c.arguments} for c in o.calls],
        "error": o.error,
    }


def _canon(o: Outcome) -> list[tuple[str, str]]:
    import json

    return [(c.name, json.dumps(c.arguments, sort_keys=True, ensure_ascii=False)) for c in o.calls]


def stack_parse(
    tokenizer: Any,
    tokens: TokenBytes,
    ids: Sequence[int],
    steps: Sequence[Sequence[int]],
    prompt: Sequence[int],
    stack: str,
    tool: ToolParser | None,
    reasoning: ReasoningParser | None,
) -> tuple[dict[str, Any], list[Finding]]:
    skip = stack_skips_special(stack, tool, reasoning, with_tools=True)
    ctx = DecodeContext(tokenizer, skip, tokens)
    prompt_text = tokenizer.decode(list(prompt), skip_special_tokens=False) if prompt else ""
    whole = parse_whole(tokenizer.decode(list(ids), skip_special_tokens=skip), tool, reasoning, None, prompt_text)
    detok = Offsets(ctx, prompt)
    chunks, _ = detok.feed([list(s) for s in steps], track_held=False)
    deltas = list(zip(chunks, [list(s) for s in steps]))
    if detok.flush():
        deltas.append((detok.flush(), []))

    def id_of(marker: str) -> int | None:
        found = tokenizer.token_to_id(marker)
        return found if isinstance(found, int) else None

    streamed = parse_streamed(deltas, tool, reasoning, None, prompt_text, id_of)
    findings = []
    for kind, outcome in (("whole", whole), ("streamed", streamed)):
        for call in outcome.calls:
            if not isinstance(call.arguments, (dict, list)):
                findings.append(
                    codes.finding(
                        codes.TOOL_CALL_JSON,
                        f"{stack} {tool.name if tool else ''}: the {kind} parse of call "
                        f"{call.name!r} gives arguments that are not a JSON object: {str(call.arguments)[-80:]!r}",
                        details={
                            "stack": stack,
                            "tool_parser": tool and tool.name,
                            "parse": kind,
                            "position": len(ids) - 1,
                            "id": ids[-1] if ids else None,
                        },
                    )
                )
    if tool is not None and _canon(whole) != _canon(streamed):
        findings.append(
            codes.finding(
                codes.TOOL_CALL_JSON,
                f"{stack} {tool.name}: the stream, parsed as captured ({len(steps)} steps), "
                f"gives {len(streamed.calls)} call(s) where the whole text gives {len(whole.calls)}, "
                "or other arguments",
                details={
                    "stack": stack,
                    "tool_parser": tool.name,
                    "whole": _json(whole),
                    "streamed": _json(streamed),
                    "position": len(ids) - 1,
                    "id": ids[-1] if ids else None,
                },
            )
        )
    data = {
        "stack": stack,
        "tool_parser": tool and tool.name,
        "reasoning_parser": reasoning and reasoning.name,
        "skip_special_tokens": skip,
        "implementation": "built-in grammars",
        "whole": _json(whole),
        "streamed": _json(streamed),
    }
    return data, findings
