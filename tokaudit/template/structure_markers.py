"""TA812 unbalanced-markers: a turn or tool marker the template opens and does not close (or closes without opening)
in a complete prompt; TA813 date-dependent-prompt: the prompt holds the date (it changes at midnight)."""

from __future__ import annotations

import re

from tokaudit.checks.common import _CONTROL
from tokaudit.report.finding import Finding
from tokaudit.template.rendering import TemplateRun
from tokaudit.template.structure_base import (
    CODES,
    Groups,
    excerpt_around,
    find_text,
    message_texts,
    in_run,
    prompts_of,
    scope,
)

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
        groups = Groups()
        for rrun, stack, prompt in prompts_of(run):
            texts = [t for m in rrun.request.messages if m.get("role") != "system" for t in message_texts(m)]
            start = find_text(texts[0], prompt, 0)[0] if texts else -1
            if start < 0:
                continue  # no message text to start from (an empty request)
            problem = _balance(prompt, pairs, start)
            if problem is not None:
                kind, marker, at = problem
                groups.add(
                    (kind, marker),
                    stack,
                    rrun.label,
                    {"at": at, "excerpt": excerpt_around(prompt, at, at + len(marker))},
                )
        for (kind, marker), stacks, requests, ex in groups.items():
            how = {
                "reopened": f"{marker} is opened again before {closers[marker]} closes it",
                "unclosed": f"{marker} is never closed ({closers[marker]}) although the prompt goes on",
                "unopened": f"{closers[marker]} closes a {marker} that was not opened",
            }[kind]
            out.append(
                CODES["TA812"].finding(
                    f"{', '.join(stacks)}: {scope(requests)}{in_run(run)}: {how}, at character {ex['at']}: "
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
    from tokaudit.template.engine_base import FIXED_NOW
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
        groups = Groups()
        for rrun, stack, prompt in prompts_of(run):
            for source, text in dates:
                at = prompt.find(text)
                if at >= 0:
                    groups.add(
                        (source,),
                        stack,
                        rrun.label,
                        {"text": text, "at": at, "excerpt": excerpt_around(prompt, at, at + len(text))},
                    )
                    break
        for (source,), stacks, requests, ex in groups.items():
            out.append(
                CODES["TA813"].finding(
                    f"{', '.join(stacks)}: {scope(requests)}{in_run(run)}: the prompt holds the date from {source} "
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
