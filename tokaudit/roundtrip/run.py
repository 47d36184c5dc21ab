"""The parser round trip of one case through each stack's parsers: decode as the stack decodes (its
skip_special_tokens for this pair of parsers, its incremental detokenizer), parse whole and streamed (one id
per step, and steps of 2..8 ids as speculative decoding delivers them), compare with what went in.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tokaudit.parsers.families import STACKS, ReasoningParser, ToolParser
from tokaudit.parsers.reasoning_table import reasoning_parsers
from tokaudit.parsers.tool_table import picked_by_template, tool_parsers
from tokaudit.parsers.calls import Call
from tokaudit.parsers.parse import Outcome, enabled, parse_streamed, parse_whole, stack_skips_special
from tokaudit.parsers.toggle import forces_reasoning
from tokaudit.roundtrip.case import Case
from tokaudit.template.turn import SENTINEL_ARGUMENTS, SENTINEL_NAME, SENTINEL_REASONING, SENTINEL_TOOL, renders_call

#: The step sizes a streamed parse is tried with (1: token by token; 2..8: speculative decoding's bursts).
STEP_SIZES = (1, 2, 3, 4, 5, 6, 7, 8)


@dataclass
class Row:
    """One (stack, tool parser, reasoning parser) verdict."""

    stack: str
    tool_parser: str | None
    reasoning_parser: str | None
    #: ok, lost, refused, not-rendered (the template does not write the call), constrained (the stack generates its
    #: own format under a grammar: TGI), or None (no tool parser)
    tool_calls: str | None
    #: ok, leaked (reasoning in content), overran (content or the call in reasoning), lost, not-rendered, or None
    reasoning: str | None
    #: where a call was lost: startup, format, skip_special_tokens, marker-not-one-token, arguments, reasoning
    stage: str | None
    skip_special_tokens: bool | None
    #: None when every streamed parse equals the whole one, else the step sizes that differ
    stream_differs: list[int] | None = None
    reason: str | None = None
    #: the outcome of a request without tools (skip_special_tokens stays on), when it differs
    without_tools: str | None = None
    outcome: Outcome | None = None
    details: dict[str, Any] = field(default_factory=dict)
    #: whose parser gave the verdict: tokaudit's "built-in" grammar, or "installed (vllm 0.33.0)": the stack's own class
    grammar: str = "built-in"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "stack": self.stack,
            "tool_parser": self.tool_parser,
            "reasoning_parser": self.reasoning_parser,
            "tool_calls": self.tool_calls,
            "reasoning": self.reasoning,
            "stage": self.stage,
            "skip_special_tokens": self.skip_special_tokens,
            "stream_differs": self.stream_differs,
            "reason": self.reason,
            "without_tools": self.without_tools,
            "grammar": self.grammar,
        }
        if "force_reasoning" in self.details:
            out["force_reasoning"] = self.details["force_reasoning"]
        if self.outcome is not None:
            out["parsed"] = outcome_json(self.outcome)
        return out


def outcome_json(o: Outcome) -> dict[str, Any]:
    return {
        "reasoning": o.reasoning,
        "content": o.content,
        "calls": [{"name": c.name, "arguments": c.arguments} for c in o.calls],
        "error": o.error,
    }


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


EXPECTED = (Call(SENTINEL_NAME, SENTINEL_ARGUMENTS),)


def calls_equal(got: Sequence[Call], want: Sequence[Call] = EXPECTED) -> bool:
    return len(got) == len(want) and all(
        a.name == b.name and _canon(a.arguments) == _canon(b.arguments) for a, b in zip(got, want)
    )


def _blank(text: str | None) -> bool:
    return text is None or not text.strip()


class Decoder:
    """The case's output ids decoded as a stack does, whole and in steps, per skip_special_tokens (cached)."""

    def __init__(
        self,
        case: Case,
        decode_steps: Callable[[bool, int], list[tuple[str, list[int]]]] | None,
        decode_whole: Callable[[bool], str] | None,
        id_of: Callable[[str], int | None],
    ) -> None:
        self.case = case
        self._steps = decode_steps
        self._whole = decode_whole
        self.id_of = id_of
        self._cache: dict[Any, Any] = {}

    @property
    def tokenized(self) -> bool:
        return self._whole is not None

    def whole(self, skip: bool) -> str:
        if self._whole is None:
            return self.case.text
        if ("whole", skip) not in self._cache:
            self._cache[("whole", skip)] = self._whole(skip)
        return self._cache[("whole", skip)]

    def steps(self, skip: bool, size: int) -> list[tuple[str, list[int]]]:
        if self._steps is None:  # text only: one delta per character run of the step size
            text = self.case.text
            return [(text[i : i + size], []) for i in range(0, len(text), size)]
        key = ("steps", skip, size)
        if key not in self._cache:
            self._cache[key] = self._steps(skip, size)
        return self._cache[key]


def is_harmony(id_of: Callable[[str], int | None]) -> bool:
    """A gpt-oss (harmony) tokenizer: vLLM then runs its harmony parser whatever the flags say."""
    return id_of("<|channel|>") is not None and id_of("<|constrain|>") is not None


def _refusal(
    parsers: Sequence[ToolParser | ReasoningParser | None],
    id_of: Callable[[str], int | None],
    tokenized: bool,
    kwargs: dict[str, Any],
) -> str | None:
    if not tokenized:
        return None
    harmony = is_harmony(id_of)
    tool = next((p for p in parsers if isinstance(p, ToolParser)), None)
    other = next((p for p in parsers if isinstance(p, ReasoningParser)), None)
    if tool is not None and tool.reasoning is not None and other is not None:
        return (
            f"{tool.stack} refuses {tool.name} with the reasoning parser {other.name}: the tool parser brings its own "
            f"({tool.reasoning})"
        )
    for p in parsers:
        if p is None:
            continue
        if p.harmony_only and not harmony:
            return f"{p.stack} cannot use {p.name} for this model: it runs only in vLLM's harmony path (gpt-oss models)"
        if harmony and p.stack == "vllm" and not p.harmony_only:
            kind, needed = (
                ("tool parser", "openai") if isinstance(p, ToolParser) else ("reasoning parser", "openai_gptoss")
            )
            return f"vllm refuses the {kind} {p.name}: a harmony (gpt-oss) model requires {needed}"
        if isinstance(p, ReasoningParser) and not p.startup_check and not enabled(p, kwargs):
            continue  # vLLM's deepseek_v3 without thinking is the identity parser: it needs nothing
        missing = [t for t in p.requires if id_of(t) is None]
        if missing:
            kind = "tool parser" if isinstance(p, ToolParser) else "reasoning parser"
            return f"{p.stack} refuses the {kind} {p.name}: the tokenizer has no token {missing[0]}"
    return None


def _tool_verdict(case: Case, o: Outcome, rendered: bool) -> str:
    if not rendered:
        return "not-rendered"
    return "ok" if calls_equal(o.calls) else "lost"


def _reasoning_verdict(o: Outcome, rendered: bool, parser: ReasoningParser | None) -> str | None:
    reasoning = (o.reasoning or "").strip()
    if SENTINEL_NAME in reasoning or (o.calls == () and reasoning and not rendered):
        return "overran"
    if not rendered:
        return "not-rendered" if not reasoning else "overran"
    if SENTINEL_REASONING in (o.content or ""):
        return "leaked"
    if reasoning == SENTINEL_REASONING:
        return "ok"
    if SENTINEL_REASONING in reasoning:
        return "overran"
    return "lost"


def _stage(
    dec: Decoder,
    o: Outcome,
    stack: str,
    tool: ToolParser,
    reasoning: ReasoningParser | None,
    skip: bool,
    prompt: str,
    kwargs: dict[str, Any],
    force: bool | None,
) -> str:
    if SENTINEL_NAME in (o.reasoning or ""):
        return "reasoning"
    if any(c.name == SENTINEL_NAME for c in o.calls):
        return "arguments"
    if skip and dec.tokenized:
        kept = parse_whole(dec.whole(False), tool, reasoning, [SENTINEL_TOOL], prompt, kwargs, force)
        if calls_equal(kept.calls):
            return "skip_special_tokens"
    if dec.tokenized and any(m in (o.content or "") and dec.id_of(m) is None for m in tool.markers[:1]):
        return "marker-not-one-token"
    return "format"


def _same(a: Outcome, b: Outcome) -> bool:
    return (
        calls_equal(a.calls, b.calls)
        and (a.reasoning or "").strip() == (b.reasoning or "").strip()
        and (a.content or "").strip() == (b.content or "").strip()
    )


def case_force(case: Case, reasoning: ReasoningParser | None) -> bool | None:
    """Whether the reasoning parser's server starts this case's output inside reasoning (SGLang, smg: from the
    template's toggle and the request's kwargs), or None: the generation prompt decides."""
    return forces_reasoning(reasoning, case.extra.get("template"), case.turn.kwargs)


def evaluate(dec: Decoder, stack: str, tool: ToolParser | None, reasoning: ReasoningParser | None) -> Row:
    case = dec.case
    prompt, kwargs = case.turn.prompt, case.turn.kwargs
    force = case_force(case, reasoning)
    refused = _refusal((tool, reasoning), dec.id_of, dec.tokenized, case.turn.kwargs)
    harmony = dec.tokenized and is_harmony(dec.id_of)
    skip = stack_skips_special(stack, tool, reasoning, with_tools=True, harmony=harmony)
    if tool is not None and tool.constrained:
        return Row(
            stack,
            tool.name,
            reasoning.name if reasoning is not None else None,
            "constrained",
            None,
            "constrained",
            skip,
            reason=f"{stack} constrains a tool request's generation to its own format ({tool.note}): the call format "
            "the template teaches is not what the model is made to write",
        )
    if refused is not None:
        return Row(
            stack,
            tool.name if tool is not None else None,
            reasoning.name if reasoning is not None else None,
            "refused" if tool is not None else None,
            "refused" if reasoning is not None else None,
            "startup",
            skip,
            reason=refused,
        )
    # vLLM's harmony parsers read the token ids, not the text: the markers count even when skipped
    reads_ids = harmony and stack == "vllm"
    text = dec.whole(False if reads_ids else skip)
    tools = [SENTINEL_TOOL]
    whole = parse_whole(text, tool, reasoning, tools, prompt, kwargs, force)
    calls_rendered = renders_call(case.text)
    reasoning_rendered = SENTINEL_REASONING in case.text
    tv = _tool_verdict(case, whole, calls_rendered) if tool is not None else None
    rv = _reasoning_verdict(whole, reasoning_rendered, reasoning)
    stage = None
    if tv == "lost":
        assert tool is not None
        stage = _stage(dec, whole, stack, tool, reasoning, skip, prompt, kwargs, force)
    differs = []
    for size in STEP_SIZES:
        streamed = parse_streamed(
            dec.steps(False if reads_ids else skip, size), tool, reasoning, tools, prompt, dec.id_of, kwargs, force
        )
        if not _same(streamed, whole):
            differs.append(size)
    row = Row(
        stack,
        tool.name if tool is not None else None,
        reasoning.name if reasoning is not None else None,
        tv,
        rv,
        stage,
        skip,
        differs or None,
        outcome=whole,
    )
    if force is not None:  # the server's decision, as the installed run reports SGLang's
        row.details["force_reasoning"] = force
    if differs:
        streamed = parse_streamed(dec.steps(skip, differs[0]), tool, reasoning, tools, prompt, dec.id_of, kwargs, force)
        row.details["streamed"] = outcome_json(streamed)
    if (
        tv == "ok"
        and dec.tokenized
        and not harmony
        and stack_skips_special(stack, tool, reasoning, with_tools=False)
        and not skip
    ):
        bare = parse_whole(dec.whole(True), tool, reasoning, tools, prompt, kwargs, force)
        if not calls_equal(bare.calls):
            row.without_tools = "lost"
    return row


def evaluate_stack(
    dec: Decoder, stack: str, tool_names: Sequence[str] | None = None, reasoning_names: Sequence[str] | None = None
) -> list[Row]:
    """Every pair of this stack's parsers, or the named ones (an empty list: no parser of that kind)."""
    return [evaluate(dec, stack, t, r) for t, r in stack_pairs(dec, stack, tool_names, reasoning_names)]


Pair = tuple[ToolParser | None, ReasoningParser | None]


def stack_pairs(
    dec: Decoder, stack: str, tool_names: Sequence[str] | None = None, reasoning_names: Sequence[str] | None = None
) -> list[Pair]:
    """The (tool parser, reasoning parser) pairs :func:`evaluate_stack` runs."""
    tools: list[ToolParser | None] = [p for p in tool_parsers(stack) if tool_names is None or p.name in tool_names]
    if STACKS[stack].picks_parser:  # llama.cpp: the parser comes from the template, not from a flag
        picked = picked_by_template(stack, dec.case.extra.get("template", ""))
        tools = [picked] if picked is not None and (tool_names is None or picked.name in tool_names) else []
    reasons: list[ReasoningParser | None] = [
        None,
        *[p for p in reasoning_parsers(stack) if reasoning_names is None or p.name in reasoning_names],
    ]
    if tool_names is None:
        tools = [*tools, None]  # the reasoning parsers alone too
    elif not tools:
        tools = [None]
    if reasoning_names is not None:
        reasons = [p for p in reasons if p is not None] or [None]
    if tools == [None] and reasons == [None]:
        return []
    return [(t, r) for t in tools for r in reasons]


def _outcome(data: dict[str, Any]) -> Outcome:
    if "error" in data:
        return Outcome(None, None, (), data["error"])
    return Outcome(
        data.get("reasoning"),
        data.get("content"),
        tuple(Call(c["name"], c["arguments"]) for c in data.get("calls") or ()),
    )


def installed_row(dec: Decoder, stack: str, pair: Pair, result: dict[str, Any], grammar: str) -> Row:
    """The verdict of a stack's own parser classes on this case (``result``:
    :func:`tokaudit.parsers.installed.run_vllm`'s plain data), judged as :func:`evaluate` judges the built-in grammars'
    outcome."""
    tool, reasoning = pair
    names = (tool.name if tool is not None else None, reasoning.name if reasoning is not None else None)
    if "refused" in result:
        kind = "tool parser" if tool is not None else "reasoning parser"
        pair_names = " with ".join(n for n in names if n)
        return Row(
            stack,
            *names,
            "refused" if tool is not None else None,
            "refused" if reasoning is not None else None,
            "startup",
            None,
            reason=f"{stack} refuses the {kind} {pair_names}: {result['refused']}",
            grammar=grammar,
        )
    skip = bool(result.get("skip_special_tokens"))
    whole = _outcome(result["whole"])
    calls_rendered = renders_call(dec.case.text)
    tv = _tool_verdict(dec.case, whole, calls_rendered) if tool is not None else None
    rv = _reasoning_verdict(whole, SENTINEL_REASONING in dec.case.text, reasoning)
    stage = None
    if tv == "lost":
        stage = (
            "reasoning"
            if SENTINEL_NAME in (whole.reasoning or "")
            else "arguments"
            if any(c.name == SENTINEL_NAME for c in whole.calls)
            else "format"
        )
    differs = []
    for key, streamed in result.items():
        if key.startswith("stream") and streamed != "same" and not _same(_outcome(streamed), whole):
            differs.append(int(key[len("stream") :]))
    row = Row(stack, *names, tv, rv, stage, skip, sorted(differs) or None, outcome=whole, grammar=grammar)
    if "force_reasoning" in result:  # SGLang's server decision: the output starts inside reasoning
        row.details["force_reasoning"] = result["force_reasoning"]
    if differs:
        row.details["streamed"] = outcome_json(_outcome(result[f"stream{min(differs)}"]))
    return row
