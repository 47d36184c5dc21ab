"""TA806 and TA807: a conversation's turns: an assistant turn whose tool calls the template drops, and a prompt that
is not a prefix of the next turn's (what a stack's prefix cache and a client that appends the reply assume)."""

from __future__ import annotations

import json
import re
from typing import Any

from tokaudit.report.finding import Finding
from tokaudit.template.common import (
    Tokens,
    excerpt,
    finding,
    first_difference,
    first_token_difference,
    in_template,
    names,
    ordered,
)
from tokaudit.template.rendering import PrefixTurn, RequestRun, TemplateRun
from tokaudit.template.requests import TOOL_CALL_MARKS
from tokaudit.template.stacks import profile


# --------------------------------------------------------------------------- TA806


def _call_marks(rrun: RequestRun) -> list[tuple[int, tuple[str, ...], str, str]]:
    """For each assistant turn with tool calls: (message index, what must appear, text before, text after)."""
    msgs = rrun.request.messages
    out: list[tuple[int, tuple[str, ...], str, str]] = []
    for i, m in enumerate(msgs):
        calls = m.get("tool_calls") if m.get("role") == "assistant" else None
        if not isinstance(calls, list) or not calls or i == 0 or i + 1 >= len(msgs):
            continue
        before, after = msgs[i - 1].get("content"), msgs[i + 1].get("content")
        if not (isinstance(before, str) and before and isinstance(after, str) and after):
            continue
        marks: tuple[str, ...]
        if rrun.request.origin == "built-in":
            marks = TOOL_CALL_MARKS
        else:
            first_marks = [_marks_of(c) for c in calls[:1] if isinstance(c, dict)]
            marks = first_marks[0] if first_marks else ()
        if marks:
            out.append((i, marks, before, after))
    return out


def _marks_of(call: dict[str, Any]) -> tuple[str, ...]:
    """A call's function name and the longest word of its first string argument."""
    function = call.get("function")
    f: dict[str, Any] = function if isinstance(function, dict) else {}
    name = f.get("name") if isinstance(f.get("name"), str) else None
    args = f.get("arguments")
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            pass
    value = next(
        (v for v in (args.values() if isinstance(args, dict) else []) if isinstance(v, str) and v.strip()), None
    )
    word = max(re.findall(r"\w{4,}", value), key=len, default=None) if value else None
    return tuple(x for x in (name, word) if x)


def dropped_tool_calls(runs: list[TemplateRun]) -> list[Finding]:
    """TA806: a past tool call (its name or an argument) is missing from the prompt between the message before
    the call and the tool result, although the template offers tools: the template drops a call the stack
    passed it. (A stack that never passes ``tool_calls``, TGI, loses them whatever the template: its profile says
    so, and it is not judged here.)"""
    out = []
    for trun in runs:
        if not trun.offers_tools:
            continue
        missing: dict[tuple[str, ...], tuple[list[str], list[str]]] = {}
        for rrun in trun.requests:
            for index, marks, before, after in _call_marks(rrun):
                for stack, sr in rrun.stacks.items():
                    text = sr.render.text
                    if text is None or before not in text or profile(stack).rules.tool_calls != "keep":
                        continue
                    start = text.rindex(before) + len(before)
                    end = text.find(after, start)
                    if end < 0:
                        continue
                    lost = tuple(m for m in marks if m not in text[start:end])
                    if lost:
                        stacks, requests = missing.setdefault(lost, ([], []))
                        stacks.append(stack)
                        requests.append(rrun.label)
        for lost, (stacks, requests) in missing.items():
            stacks, requests = ordered(stacks), list(dict.fromkeys(requests))
            what = "the call (its name and arguments)" if len(lost) > 1 else f"{lost[0]!r}"
            out.append(
                finding(
                    "TA806",
                    f"{', '.join(stacks)}: the past tool call of request {requests[0]}"
                    f"{f' (also {names(requests[1:])})' if len(requests) > 1 else ''}{in_template(trun.template)} "
                    "never reaches the "
                    f"prompt: {what} is missing between the message before the call and the tool result, although the "
                    "template offers "
                    "tools. The model sees a tool result it never asked for.",
                    location=trun.template.location,
                    details={
                        "subject": f"{trun.template.name}:{','.join(lost)}",
                        "stacks": stacks,
                        "conversation": requests[0],
                        "conversations": requests,
                        "missing": list(lost),
                        "template": trun.template.name,
                    },
                )
            )
    return out


# --------------------------------------------------------------------------- TA807


def _prefix_cause(run: TemplateRun, turn: PrefixTurn, expected: str, following: str) -> tuple[str, str | None]:
    """What makes turn k render differently once turn k+1 follows: (explanation, the request field)."""
    rrun = next((r for r in run.requests if r.label == turn.request), None)
    msgs = rrun.request.messages if rrun is not None else []
    m = msgs[turn.turn] if turn.turn < len(msgs) else {}
    reasoning = m.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning in expected and reasoning not in following:
        return (
            "the template keeps the reasoning_content of the last assistant turn and drops it once a later turn "
            "follows",
            "reasoning_content",
        )
    kwargs = rrun.request.chat_template_kwargs if rrun is not None else {}
    if kwargs.get("enable_thinking") is False:
        return (
            "with enable_thinking false the turn is prompted with a closed, empty thinking block that history renders "
            "without",
            "enable_thinking",
        )
    at = first_difference(expected, following)
    near_e, near_f = expected[max(0, at - 20) : at + 20], following[max(0, at - 20) : at + 20]
    if any(m in near_e and m not in near_f or m in near_f and m not in near_e for m in _THINKING_MARKERS):
        return (
            "the template writes a thinking block for the last assistant turn that it removes or closes once a later "
            "turn "
            "follows"
        ), "reasoning"
    if (expected[at : at + 1].isspace() or following[at : at + 1].isspace()) and _no_space(following[at:]).startswith(
        _no_space(expected[at:])[:80]
    ):
        return (
            "only whitespace differs: the template writes other whitespace around the turn once a later turn follows "
            "(or, without trim_blocks, more of it per message)"
        ), None
    system = next(
        (x.get("content") for x in msgs if x.get("role") == "system" and isinstance(x.get("content"), str)), None
    )
    if system and system in expected and expected.find(system) != following.find(system):
        return "the system prompt moves (it is rendered next to the last user message)", "system"
    if m.get("tool_calls"):
        return "the tool-call turn renders differently once its result follows", "tool_calls"
    return "the template renders the turn differently once a later turn follows", None


def _reply(run: TemplateRun, turn: PrefixTurn) -> str | None:
    """What the model generates for turn k, as the template renders the turn: what the complete turn adds to its
    prompt; when the complete turn does not start with the prompt (the template renders earlier messages
    otherwise once the assistant answered), the turn from its content (or its call) to the end."""
    assert turn.prompt is not None and turn.full is not None
    if turn.full.startswith(turn.prompt):
        return turn.full[len(turn.prompt) :]
    rrun = next((r for r in run.requests if r.label == turn.request), None)
    m = rrun.request.messages[turn.turn] if rrun is not None and turn.turn < len(rrun.request.messages) else {}
    content = m.get("content") if isinstance(m.get("content"), str) else ""
    calls = m.get("tool_calls") or []
    anchor = content or next(
        (
            c["function"]["name"]
            for c in calls
            if isinstance(c, dict)
            and isinstance(c.get("function"), dict)
            and isinstance(c["function"].get("name"), str)
        ),
        "",
    )
    if not anchor or anchor not in turn.full:
        return None
    return turn.full[turn.full.rindex(anchor) :]


def _no_space(text: str) -> str:
    return re.sub(r"\s+", "", text)


#: Where a thinking block starts, in the templates that write one.
_THINKING_MARKERS = ("<think>", "</think>", "<|channel|>analysis", "<seed:think>", "<|START_THINKING|>", "[THINK]")


def prefix_instability(runs: list[TemplateRun], tokens: Tokens, max_findings: int = 8) -> list[Finding]:
    """TA807: turn k's prompt + the reply as the template renders it (to the end of the turn) is not a prefix of
    turn k+1's prompt: a prefix cache misses, and a token-in/token-out trace no longer matches the prompt. One
    finding per template and cause, naming every stack and request it holds for, with the first example."""
    groups: dict[tuple[str, str, str], list[tuple[PrefixTurn, TemplateRun, int, int | None, str, str]]] = {}
    for trun in runs:
        for turn in trun.prefixes:
            if turn.prompt is None or turn.full is None or turn.following is None:
                continue
            reply = _reply(trun, turn)
            if reply is None:
                continue
            expected = (turn.prompt + reply).rstrip()
            at: int | None = None
            token_at: int | None = None
            if not turn.following.startswith(expected):
                at = first_difference(expected, turn.following)
            else:
                turn_ids, following_ids = tokens.of(expected), tokens.of(turn.following)
                if turn_ids is not None and following_ids is not None and following_ids[: len(turn_ids)] != turn_ids:
                    token_at = first_token_difference(turn_ids, following_ids)
            if at is None and token_at is None:
                continue
            cause, _ = _prefix_cause(trun, turn, expected, turn.following)
            groups.setdefault((trun.template.name, cause, ""), []).append(
                (turn, trun, at if at is not None else -1, token_at, expected, turn.following)
            )
    out = []
    for members in list(groups.values())[:max_findings]:
        turn, trun, at, token_at, expected, following = members[0]
        stacks = ordered({m[0].stack for m in members})
        requests = list(dict.fromkeys(m[0].request for m in members))
        cause, field_name = _prefix_cause(trun, turn, expected, following)
        if at >= 0:
            where = (
                f"at character {at}: turn {turn.turn} ends {excerpt(expected, at)!r} but the next prompt has "
                f"{excerpt(following, at)!r}"
            )
            following_ids, expected_ids = tokens.of(following), tokens.of(expected)
            if following_ids is not None and expected_ids is not None:
                token_at = first_token_difference(expected_ids, following_ids)
                where += f" (first differing token {token_at})"
        else:
            where = (
                f"at token {token_at}: the texts agree but the next prompt tokenizes the end of the turn into other ids"
            )
        out.append(
            finding(
                "TA807",
                f"{', '.join(stacks)}: request "
                f"{requests[0]}{f' (also {names(requests[1:])})' if len(requests) > 1 else ''}"
                f"{in_template(trun.template)}: turn {turn.turn}'s prompt and reply are not a prefix of the next "
                "turn's prompt, "
                f"{where}. Cause: {cause}. A prefix cache misses from there on, and a token-in/token-out trace (RL) "
                "no longer "
                "matches the prompt the next turn is given.",
                location=trun.template.location,
                details={
                    "subject": f"{trun.template.name}:{cause[:60]}",
                    "stacks": stacks,
                    "conversation": requests[0],
                    "conversations": requests,
                    "turn": turn.turn,
                    "position": at if at >= 0 else None,
                    "token_position": token_at,
                    "cause": cause,
                    "field": field_name,
                    "excerpts": {"turn": excerpt(expected, max(at, 0)), "next": excerpt(following, max(at, 0))},
                },
            )
        )
    return out
