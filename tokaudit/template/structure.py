"""The structural render rules: what a rendered prompt must hold whatever the template's format.

TA810 python-repr-leak: Python's repr of a request value (a dict or list printed by Python, ``None`` for a null
content) in the prompt. TA811 content-dropped: a message's text or a tool result missing from the prompt, or out of
order. TA812 unbalanced-markers: a turn or tool marker the template opens and does not close (or closes without
opening) in a complete prompt. TA813 date-dependent-prompt: the prompt holds the date (it changes at midnight).

Each rule reads every stack's render of every request (no shape excuses another: a stack's prompt for the form it
sends is that stack's prompt) and makes one finding per template and cause, naming the stacks and requests.
TA810 and TA811 are here, TA812 and TA813 in :mod:`tokaudit.template.structure_markers`, what they share in
:mod:`tokaudit.template.structure_base`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tokaudit.report.finding import Finding, Severity
from tokaudit.template.rendering import TemplateRun
from tokaudit.template.structure_base import (
    CODES,
    Groups,
    excerpt_around,
    find_text,
    message_texts,
    in_run,
    prompts_of,
    required_request,
    scope,
)
from tokaudit.template.structure_markers import date_dependent, unbalanced_markers


# --------------------------------------------------------------------------- TA810


def _values(request: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """The dicts and lists of a request a template may print, under the name of where they are (tool-call
    arguments parsed, as the stacks that pass a dict have them)."""
    for i, m in enumerate(request.get("messages") or []):
        if isinstance(m.get("content"), list):
            yield f"messages[{i}].content", m["content"]
        for j, call in enumerate(m.get("tool_calls") or []):
            fn = call.get("function") or {}
            args = fn.get("arguments")
            if isinstance(args, str):
                try:
                    args = json.loads(args)
                except ValueError:
                    continue
            if isinstance(args, (dict, list)):
                yield f"messages[{i}].tool_calls[{j}].function.arguments", args
            yield f"messages[{i}].tool_calls[{j}]", call
    for k, tool in enumerate(request.get("tools") or []):
        yield f"tools[{k}]", tool
        fn = tool.get("function") or {}
        if isinstance(fn.get("parameters"), dict):
            yield f"tools[{k}].function.parameters", fn["parameters"]
            if isinstance(fn["parameters"].get("properties"), dict):
                yield f"tools[{k}].function.parameters.properties", fn["parameters"]["properties"]


def _stack_parts(request: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """A string content as vLLM hands it to a template that loops over a content (its openai content format: every
    content but a tool result's becomes ``[{'type': 'text', 'text': ...}]``, the vLLM profile's ``parts`` rule): a
    template that prints such a message's content whole prints the list."""
    for i, m in enumerate(request.get("messages") or []):
        if isinstance(m.get("content"), str) and m["content"]:
            yield f"messages[{i}].content as text parts", [{"type": "text", "text": m["content"]}]


def _nested(value: Any, budget: list[int]) -> Iterator[Any]:
    """``value`` and the dicts and lists inside it (bounded)."""
    if budget[0] <= 0:
        return
    budget[0] -= 1
    yield value
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for v in items:
        if isinstance(v, (dict, list)):
            yield from _nested(v, budget)


def _none_leak(null_text: str, empty_text: str) -> int | None:
    """Where a render with ``content: null`` differs from the one with ``content: ""`` by a printed None only."""
    if null_text == empty_text:
        return None
    at = next(
        (i for i, (a, b) in enumerate(zip(null_text, empty_text)) if a != b), min(len(null_text), len(empty_text))
    )
    # the difference may start inside the word: look from the start of it
    for start in range(max(0, at - 4), at + 1):
        for word in ("None", "none"):
            if null_text.startswith(word, start) and null_text[:start] + null_text[start + len(word) :] == empty_text:
                return start
    return None


def repr_leaks(runs: list[TemplateRun]) -> list[Finding]:
    """TA810: Python's repr of a dict or list of the request, or the None of a null content, in a stack's prompt."""
    out = []
    for run in runs:
        groups = Groups()
        for rrun, stack, text in prompts_of(run):
            data = rrun.request.to_json()
            budget = [200]
            seen: set[str] = set()
            for where, value in (*_values(data), *_stack_parts(data)):
                for v in _nested(value, budget):
                    shown = repr(v)
                    if len(shown) < 8 or shown in seen or "'" not in shown:
                        continue
                    seen.add(shown)
                    at = text.find(shown)
                    if at >= 0:
                        kind = "dict" if isinstance(v, dict) else "list"
                        groups.add(
                            ("repr", where.split(".")[0].split("[")[0], kind, required_request(run, rrun, stack)),
                            stack,
                            rrun.label,
                            {
                                "where": where,
                                "shown": shown[:80],
                                "excerpt": excerpt_around(text, at, at + len(shown)),
                                "at": at,
                            },
                        )
                        break
        # None: the tool-call turn as the SDKs send it (content null) against the same turn with content ""
        by_name = {r.request.name: r for r in run.requests}
        null, empty = by_name.get("tool-call"), by_name.get("tool-call-empty-content")
        if null is not None and empty is not None and run.offers_tools:
            for stack, sr in null.stacks.items():
                other = empty.stacks.get(stack)
                if other is None or not (sr.render.ok and other.render.ok):
                    continue
                leak_at = _none_leak(sr.render.text or "", other.render.text or "")
                if leak_at is not None:
                    text = sr.render.text or ""
                    groups.add(
                        ("none", "content", "None", required_request(run, null, stack)),
                        stack,
                        "tool-call",
                        {
                            "where": "messages[2].content",
                            "shown": text[leak_at : leak_at + 4],
                            "excerpt": excerpt_around(text, leak_at, leak_at + 4),
                            "at": leak_at,
                        },
                    )
        # a null content elsewhere (reasoning-only, parallel calls): more None than the same stack's prompt of a
        # like request without a null (tool-call-empty-content, multi-turn) has
        for rrun in run.requests:
            if rrun.request.name in ("tool-call", "tool-call-empty-content") or (
                rrun.request.tools and not run.offers_tools
            ):
                continue
            nulls = [i for i, m in enumerate(rrun.request.messages) if "content" in m and m["content"] is None]
            plain = by_name.get("tool-call-empty-content" if rrun.request.tools else "multi-turn")
            if not nulls or plain is None:
                continue
            for stack, sr in rrun.stacks.items():
                base = plain.stacks.get(stack)
                if not (sr.render.ok and base is not None and base.render.ok):
                    continue
                text = sr.render.text or ""
                word = next((w for w in ("None", "none") if text.count(w) > (base.render.text or "").count(w)), None)
                if word is not None:
                    at = text.rfind(word)
                    groups.add(
                        ("none", "content", "None", required_request(run, rrun, stack)),
                        stack,
                        rrun.label,
                        {
                            "where": f"messages[{nulls[0]}].content",
                            "shown": word,
                            "excerpt": excerpt_around(text, at, at + 4),
                            "at": at,
                        },
                    )
        for key, stacks, requests, ex in groups.items():
            if key[0] == "none":
                what = f"a content: null ({ex['where']}) is printed as {ex['shown']!r}"
            else:
                what = f"Python's repr of a {key[2]} ({ex['where']}) is printed: {ex['shown']!r}"
            # a null content or typed parts printed by Python is never a trained format; a template printing its tools
            # or arguments with Python's repr may have been trained that way (Apriel prints its tools so)
            leak = key[0] == "none" or key[1] == "messages" and "tool_calls" not in ex["where"]
            severity = Severity.ERROR if leak and key[3] else Severity.WARNING
            out.append(
                CODES["TA810"].finding(
                    f"{', '.join(stacks)}: {scope(requests)}{in_run(run)}: {what}, at character {ex['at']}: "
                    f"{ex['excerpt']!r}. "
                    "The model was trained on the format the template writes for this value, not on Python's repr.",
                    severity=severity,
                    location=run.template.location,
                    details={
                        "subject": f"{run.template.name}:{':'.join(map(str, key[:3]))}",
                        "stacks": stacks,
                        "conversation": requests[0],
                        "conversations": requests,
                        "template": run.template.name,
                        "value": ex["where"],
                        "shown": ex["shown"],
                        "position": ex["at"],
                        "excerpt": ex["excerpt"],
                    },
                )
            )
    return out


# --------------------------------------------------------------------------- TA811


def _leaves(value: Any, budget: list[int]) -> Iterator[str]:
    if budget[0] <= 0:
        return
    budget[0] -= 1
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v, budget)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v, budget)
    elif isinstance(value, str):
        yield value
    else:
        yield json.dumps(value)


def _find_values(text: str, prompt: str, start: int) -> tuple[int, int]:
    """A JSON tool result some templates (Gemma 4's) write in a format of their own: every value it holds is in the
    prompt from ``start`` (in any order: a map may be written in key order). (start, end) or (-1, -1)."""
    try:
        data = json.loads(text)
    except ValueError:
        return -1, -1
    if not isinstance(data, (dict, list)):
        return -1, -1
    spans = []
    for leaf in _leaves(data, [200]):
        at = prompt.find(leaf, start)
        if at < 0:
            return -1, -1
        spans.append((at, at + len(leaf)))
    return (min(s for s, _ in spans), max(e for _, e in spans)) if spans else (-1, -1)


def dropped_content(runs: list[TemplateRun]) -> list[Finding]:
    """TA811: each message's text (and each tool result) must reach the prompt, in the order of the messages. A
    system message may move (Mistral's templates put it next to the last user message): only its presence counts."""
    out = []
    for run in runs:
        groups = Groups()
        for rrun, stack, prompt in prompts_of(run):
            cursor = 0
            for i, m in enumerate(rrun.request.messages):
                role = str(m.get("role"))
                for text in message_texts(m):
                    at, end = find_text(text, prompt, cursor if role != "system" else 0)
                    if at < 0 and role == "tool":
                        at, end = _find_values(text, prompt, cursor)
                    if at >= 0:
                        if role != "system":
                            cursor = end
                        continue
                    anywhere, _ = find_text(text, prompt, 0)
                    problem = "out-of-order" if anywhere >= 0 else "dropped"
                    with_calls = role == "assistant" and bool(m.get("tool_calls"))
                    what = (
                        "tool result" if role == "tool" else f"{role} text{' beside tool calls' if with_calls else ''}"
                    )
                    groups.add(
                        (problem, what, str(required_request(run, rrun, stack))),
                        stack,
                        rrun.label,
                        {"index": i, "role": role, "text": text[:60], "with_calls": with_calls},
                    )
                    break
        for (problem, what, required), stacks, requests, ex in groups.items():
            text = ex["text"]
            if problem == "dropped":
                how = f"the {what} of message {ex['index']} ({text!r}) is not in the prompt"
            else:
                how = f"the {what} of message {ex['index']} ({text!r}) comes before an earlier message's text"
            # a template whose tool-call turn has no place for the assistant's text (Llama 3.1, Hermes) was trained
            # so; a text moved out of order may be the format's (Gemma 4 writes a result inside its call): warnings
            severity = (
                Severity.WARNING
                if problem == "out-of-order" or ex["with_calls"] or required != "True"
                else Severity.ERROR
            )
            out.append(
                CODES["TA811"].finding(
                    f"{', '.join(stacks)}: {scope(requests)}{in_run(run)}: {how}. The model answers a conversation "
                    "other than the one sent.",
                    severity=severity,
                    location=run.template.location,
                    details={
                        "subject": f"{run.template.name}:{problem}:{what}",
                        "stacks": stacks,
                        "conversation": requests[0],
                        "conversations": requests,
                        "template": run.template.name,
                        "problem": problem,
                        "message": ex["index"],
                        "role": ex["role"],
                        "text": text,
                    },
                )
            )
    return out


def structure_findings(runs: list[TemplateRun]) -> list[Finding]:
    return [*repr_leaks(runs), *dropped_content(runs), *unbalanced_markers(runs), *date_dependent(runs)]
