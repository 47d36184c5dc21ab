"""The structural render rules: what a rendered prompt must hold whatever the template's format.

TA810 python-repr-leak: Python's repr of a request value (a dict or list printed by Python, ``None`` for a null
content) in the prompt. TA811 content-dropped: a message's text or a tool result missing from the prompt, or out of
order. TA812 unbalanced-markers: a turn or tool marker the template opens and does not close (or closes without
opening) in a complete prompt. TA813 date-dependent-prompt: the prompt holds the date (it changes at midnight).

Each rule reads every stack's render of every request (no shape excuses another: a stack's prompt for the form it
sends is that stack's prompt) and makes one finding per template and cause, naming the stacks and requests.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from tokaudit.checks.common import _CONTROL
from tokaudit.report.finding import Code, Finding, Severity, catalog_codes
from tokaudit.template.rendering import RequestRun, TemplateRun

CODES: dict[str, Code] = {c.code: c for c in catalog_codes("TA810", "TA811", "TA812", "TA813")}

#: Most findings of one rule per template (each names every stack and request of its cause).
MAX_FINDINGS = 8
EXCERPT = 40


def _ordered(stacks: Any) -> list[str]:
    from tokaudit.template.stacks import STACK_NAMES

    return sorted(stacks, key=lambda s: STACK_NAMES.index(s) if s in STACK_NAMES else len(STACK_NAMES))


def _names(items: list[str], most: int = 6) -> str:
    return ", ".join(items[:most]) + (f" and {len(items) - most} more" if len(items) > most else "")


def _in(run: TemplateRun) -> str:
    return f" of the {run.template.name} template" if run.template.name != "default" else ""


def _excerpt(text: str, start: int, end: int) -> str:
    return text[max(0, start - EXCERPT // 2) : end + EXCERPT // 2]


class _Groups:
    """Findings grouped by (template, cause): the stacks and requests each cause holds for, and one example."""

    def __init__(self) -> None:
        # a cause's key: its kind's strings, and for TA810 whether the request is one the stack must serve (a bool)
        self.groups: dict[tuple[Any, ...], tuple[list[str], list[str], dict[str, Any]]] = {}

    def add(self, key: tuple[Any, ...], stack: str, request: str, example: dict[str, Any]) -> None:
        stacks, requests, _ = self.groups.setdefault(key, ([], [], example))
        if stack not in stacks:
            stacks.append(stack)
        if request not in requests:
            requests.append(request)

    def items(self) -> Iterator[tuple[tuple[Any, ...], list[str], list[str], dict[str, Any]]]:
        for key, (stacks, requests, example) in list(self.groups.items())[:MAX_FINDINGS]:
            yield key, _ordered(stacks), requests, example


def _renders(run: TemplateRun) -> Iterator[tuple[RequestRun, str, str]]:
    """Every stack's prompt of every request (a tool request only when the template offers tools)."""
    for rrun in run.requests:
        if rrun.request.tools and not run.offers_tools:
            continue
        for stack, sr in rrun.stacks.items():
            if sr.render.ok and sr.render.text is not None:
                yield rrun, stack, sr.render.text


def _required(run: TemplateRun, rrun: RequestRun, stack: str) -> bool:
    """Whether the request is one the stack must render right (TA801's convention): a required request, or a tool
    request when the template offers tools and the stack renders them (no form excuses another). Else the finding is
    about an optional feature (typed parts, empty content, reasoning): a warning."""
    if rrun.request.required:
        return True
    if not (rrun.request.tools and run.offers_tools):
        return False
    offered = next((r for r in run.requests if r.request.name == "tools-offered"), None)
    return offered is not None and stack in offered.stacks and offered.stacks[stack].render.ok


def _scope(requests: list[str]) -> str:
    return f"requests {_names(requests)}" if len(requests) > 1 else f"request {requests[0]}"


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
        groups = _Groups()
        for rrun, stack, text in _renders(run):
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
                            ("repr", where.split(".")[0].split("[")[0], kind, _required(run, rrun, stack)),
                            stack,
                            rrun.label,
                            {
                                "where": where,
                                "shown": shown[:80],
                                "excerpt": _excerpt(text, at, at + len(shown)),
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
                        ("none", "content", "None", _required(run, null, stack)),
                        stack,
                        "tool-call",
                        {
                            "where": "messages[2].content",
                            "shown": text[leak_at : leak_at + 4],
                            "excerpt": _excerpt(text, leak_at, leak_at + 4),
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
                        ("none", "content", "None", _required(run, rrun, stack)),
                        stack,
                        rrun.label,
                        {
                            "where": f"messages[{nulls[0]}].content",
                            "shown": word,
                            "excerpt": _excerpt(text, at, at + 4),
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
                    f"{', '.join(stacks)}: {_scope(requests)}{_in(run)}: {what}, at character {ex['at']}: "
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


def _texts(message: dict[str, Any]) -> list[str]:
    """A message's texts (its string content or its text parts), stripped, without empty ones."""
    content = message.get("content")
    parts: list[object]
    if isinstance(content, str):
        parts = [content]
    elif isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
    else:
        parts = []
    return [p.strip() for p in parts if isinstance(p, str) and p.strip()]


def _find(text: str, prompt: str, start: int) -> tuple[int, int]:
    """Where ``text`` is in ``prompt`` from ``start``: as written, or escaped inside a JSON string (json.dumps, or
    MiniJinja's tojson escaping < > & ' too: a different form is TA802's, not a drop). (start, end)."""
    escaped = json.dumps(text)[1:-1]
    html = escaped.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").replace("'", "\\u0027")
    for form in dict.fromkeys((text, escaped, json.dumps(text, ensure_ascii=False)[1:-1], html)):
        at = prompt.find(form, start)
        if at >= 0:
            return at, at + len(form)
    return -1, -1


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
        groups = _Groups()
        for rrun, stack, prompt in _renders(run):
            cursor = 0
            for i, m in enumerate(rrun.request.messages):
                role = str(m.get("role"))
                for text in _texts(m):
                    at, end = _find(text, prompt, cursor if role != "system" else 0)
                    if at < 0 and role == "tool":
                        at, end = _find_values(text, prompt, cursor)
                    if at >= 0:
                        if role != "system":
                            cursor = end
                        continue
                    anywhere, _ = _find(text, prompt, 0)
                    problem = "out-of-order" if anywhere >= 0 else "dropped"
                    with_calls = role == "assistant" and bool(m.get("tool_calls"))
                    what = (
                        "tool result" if role == "tool" else f"{role} text{' beside tool calls' if with_calls else ''}"
                    )
                    groups.add(
                        (problem, what, str(_required(run, rrun, stack))),
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
                    f"{', '.join(stacks)}: {_scope(requests)}{_in(run)}: {how}. The model answers a conversation "
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


# --------------------------------------------------------------------------- TA812

_EDGE = re.compile(r"(?i)(?<![a-z])(start|begin|end)(?![a-z])")
#: Pairs that are the sequence's BOS and EOS, not a turn (written once, or EOS after every turn: DeepSeek), and
#: reasoning markers (a template closes reasoning it never opened on purpose: DeepSeek V3.2's thinking-off ``</think>``;
#: TA824/TA825 are about those).
_NOT_TURNS = ("text", "sentence", "seq", "document", "think", "reason", "channel")


def marker_pairs(template: str) -> list[tuple[str, str]]:
    """The (opener, closer) pairs among the literals a template writes: ``<x>``/``</x>``, ``[X]``/``[/X]``, Gemma 4's
    ``<|x>``/``<x|>``, and
    names that differ only by start/begin vs end (``<|im_start|>``/``<|im_end|>``, ``<start_of_turn>``/
    ``<end_of_turn>``, ``<｜tool▁calls▁begin｜>``/``<｜tool▁calls▁end｜>``). A bare ``<|start|>``/``<|end|>`` is not
    a pair (gpt-oss ends turns with ``<|end|>``, ``<|call|>`` or ``<|return|>``), nor BOS/EOS."""
    literals = list(dict.fromkeys(m.group() for m in _CONTROL.finditer(template)))
    present = set(literals)
    pairs = []
    for lit in literals:
        if lit.startswith(("</", "[/")) or (lit.endswith("|>") and not lit.startswith("<|")):
            continue
        if lit.startswith("<|") and not lit.endswith("|>"):  # Gemma 4: <|turn> ... <turn|>
            closer = "<" + lit[2:-1] + "|>"
        elif lit.startswith("<") and not lit.startswith(("<|", "<｜")):
            closer = "</" + lit[1:]
        elif lit.startswith("["):
            closer = "[/" + lit[1:]
        else:
            closer = None
        if closer is not None and closer in present:
            if not any(w in lit.lower() for w in _NOT_TURNS):
                pairs.append((lit, closer))
            continue
        edges = list(_EDGE.finditer(lit))
        if len(edges) != 1 or edges[0].group(1).lower() == "end":
            continue
        name = _EDGE.sub("#", lit)
        if name.strip("<>|｜#_▁ ") == "" or any(w in name.lower() for w in _NOT_TURNS):
            continue
        word = edges[0].group(1)
        end = "END" if word.isupper() else "end"
        closer = lit[: edges[0].start()] + end + lit[edges[0].end() :]
        if closer in present:
            pairs.append((lit, closer))
    return pairs


def _is_tag(marker: str) -> bool:
    return marker.startswith("<") and not marker.startswith(("<|", "<｜"))


def _balance(prompt: str, pairs: list[tuple[str, str]], start: int) -> tuple[str, str, int] | None:
    """The first marker problem of a prompt from the first non-system message's text (``start``): (problem,
    marker, position). Before it, only whether each marker is open counts (its last event): a system prompt and tool
    instructions name markers in prose ("call it inside <tool_call></tool_call>"). Markers still open at the end
    are fine when nothing opened before them closes after them (the generation prompt opens the assistant's turn;
    Gemma 4's model turn stays open around its own tool call and response pairs)."""
    events = []
    for opener, closer in pairs:
        # a tag opens with attributes too: <parameter=city>, <invoke name="f">
        pattern = re.escape(opener[:-1]) + r"(?:[\s=][^<>]{0,200})?>" if _is_tag(opener) else re.escape(opener)
        for m in re.finditer(pattern, prompt):
            events.append((m.start(), opener, 1))
        for m in re.finditer(re.escape(closer), prompt):
            events.append((m.start(), opener, -1))
    events.sort()
    # before the first message: only whether each marker is open (its last event)
    depth = {opener: int(step > 0) for at, opener, step in events if at < start}
    opened_at = {opener: at for at, opener, step in events if at < start and step > 0}
    closes: list[tuple[int, int]] = []  # (where a marker closes, where it was opened)
    for at, opener, step in (e for e in events if e[0] >= start):
        if step > 0:
            if depth.get(opener, 0) > 0:
                return ("reopened", opener, opened_at[opener])
            depth[opener] = 1
            opened_at[opener] = at
        else:
            if depth.get(opener, 0) == 0:
                return ("unopened", opener, at)
            depth[opener] = 0
            closes.append((at, opened_at[opener]))
    for opener, d in depth.items():
        if d and any(opened < opened_at[opener] < at for at, opened in closes):
            return ("unclosed", opener, opened_at[opener])
    return None


def unbalanced_markers(runs: list[TemplateRun]) -> list[Finding]:
    """TA812: a turn or tool marker opened and not closed before the next one opens or the prompt ends (or closed
    without being opened), in any stack's prompt of any request."""
    out = []
    for run in runs:
        pairs = marker_pairs(run.template.text)
        if not pairs:
            continue
        closers = dict(pairs)
        groups = _Groups()
        for rrun, stack, prompt in _renders(run):
            texts = [t for m in rrun.request.messages if m.get("role") != "system" for t in _texts(m)]
            start = _find(texts[0], prompt, 0)[0] if texts else -1
            if start < 0:
                continue  # no message text to start from (an empty request)
            problem = _balance(prompt, pairs, start)
            if problem is not None:
                kind, marker, at = problem
                groups.add(
                    (kind, marker), stack, rrun.label, {"at": at, "excerpt": _excerpt(prompt, at, at + len(marker))}
                )
        for (kind, marker), stacks, requests, ex in groups.items():
            how = {
                "reopened": f"{marker} is opened again before {closers[marker]} closes it",
                "unclosed": f"{marker} is never closed ({closers[marker]}) although the prompt goes on",
                "unopened": f"{closers[marker]} closes a {marker} that was not opened",
            }[kind]
            out.append(
                CODES["TA812"].finding(
                    f"{', '.join(stacks)}: {_scope(requests)}{_in(run)}: {how}, at character {ex['at']}: "
                    f"{ex['excerpt']!r}.",
                    location=run.template.location,
                    details={
                        "subject": f"{run.template.name}:{kind}:{marker}",
                        "stacks": stacks,
                        "conversation": requests[0],
                        "conversations": requests,
                        "template": run.template.name,
                        "problem": kind,
                        "marker": marker,
                        "position": ex["at"],
                        "excerpt": ex["excerpt"],
                    },
                )
            )
    return out


# --------------------------------------------------------------------------- TA813

_STRFTIME = re.compile(r"""strftime_now\(\s*(["'])(.{1,40}?)\1\s*\)""")


def _dates(template: str) -> list[tuple[str, str]]:
    """(where the date comes from, the text it is at tokaudit's fixed instant) for each clock a template reads."""
    from tokaudit.template.engines import FIXED_NOW
    from tokaudit.template.stacks.context import FIXED_DATE

    out = [(f"strftime_now({m.group(2)!r})", FIXED_NOW.strftime(m.group(2))) for m in _STRFTIME.finditer(template)]
    if "date_string" in template:  # mistral.rs' (context.py) and llama.cpp's (common_chat_extra_context)
        out += [("date_string", FIXED_DATE.strftime("%d, %B, %Y")), ("date_string", FIXED_DATE.strftime("%d %b %Y"))]
    if "datetime" in template:  # llama.cpp's
        out.append(("datetime", FIXED_DATE.strftime("%b %d %Y")))
    return [(src, text) for src, text in dict.fromkeys(out) if len(text) >= 4]


def date_dependent(runs: list[TemplateRun]) -> list[Finding]:
    """TA813 (note): the prompt holds today's date (tokaudit renders at a fixed instant, so the text is found by
    what the template's clock gives at that instant): the prompt differs between two dates."""
    out = []
    for run in runs:
        dates = _dates(run.template.text)
        if not dates:
            continue
        groups = _Groups()
        for rrun, stack, prompt in _renders(run):
            for source, text in dates:
                at = prompt.find(text)
                if at >= 0:
                    groups.add(
                        (source,),
                        stack,
                        rrun.label,
                        {"text": text, "at": at, "excerpt": _excerpt(prompt, at, at + len(text))},
                    )
                    break
        for (source,), stacks, requests, ex in groups.items():
            out.append(
                CODES["TA813"].finding(
                    f"{', '.join(stacks)}: {_scope(requests)}{_in(run)}: the prompt holds the date from {source} "
                    f"({ex['text']!r} at character {ex['at']}: {ex['excerpt']!r}): it changes at midnight, and every "
                    "cached "
                    "prefix from there on misses.",
                    location=run.template.location,
                    details={
                        "subject": f"{run.template.name}:{source}",
                        "stacks": stacks,
                        "conversation": requests[0],
                        "conversations": requests,
                        "template": run.template.name,
                        "clock": source,
                        "position": ex["at"],
                        "excerpt": ex["excerpt"],
                    },
                )
            )
    return out


def structure_findings(runs: list[TemplateRun]) -> list[Finding]:
    return [*repr_leaks(runs), *dropped_content(runs), *unbalanced_markers(runs), *date_dependent(runs)]
