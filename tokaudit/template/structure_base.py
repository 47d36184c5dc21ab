"""What the structural render rules (TA810-TA813) share: their codes, the findings grouped by template and cause
(the stacks and requests each holds for, one example), every stack's prompt of every request, and whether a request
is one the stack must serve."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tokaudit.report.finding import Code, catalog_codes
from tokaudit.template.rendering import RequestRun, TemplateRun

CODES: dict[str, Code] = {c.code: c for c in catalog_codes("TA810", "TA811", "TA812", "TA813")}


#: Most findings of one rule per template (each names every stack and request of its cause).
MAX_FINDINGS = 8


EXCERPT = 40


def ordered_stacks(stacks: Any) -> list[str]:
    from tokaudit.template.stacks import STACK_NAMES

    return sorted(stacks, key=lambda s: STACK_NAMES.index(s) if s in STACK_NAMES else len(STACK_NAMES))


def listed(items: list[str], most: int = 6) -> str:
    return ", ".join(items[:most]) + (f" and {len(items) - most} more" if len(items) > most else "")


def in_run(run: TemplateRun) -> str:
    return f" of the {run.template.name} template" if run.template.name != "default" else ""


def excerpt_around(text: str, start: int, end: int) -> str:
    return text[max(0, start - EXCERPT // 2) : end + EXCERPT // 2]


class Groups:
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
            yield key, ordered_stacks(stacks), requests, example


def prompts_of(run: TemplateRun) -> Iterator[tuple[RequestRun, str, str]]:
    """Every stack's prompt of every request (a tool request only when the template offers tools)."""
    for rrun in run.requests:
        if rrun.request.tools and not run.offers_tools:
            continue
        for stack, sr in rrun.stacks.items():
            if sr.render.ok and sr.render.text is not None:
                yield rrun, stack, sr.render.text


def required_request(run: TemplateRun, rrun: RequestRun, stack: str) -> bool:
    """Whether the request is one the stack must render right (TA801's convention): a required request, or a tool
    request when the template offers tools and the stack renders them (no form excuses another). Else the finding is
    about an optional feature (typed parts, empty content, reasoning): a warning."""
    if rrun.request.required:
        return True
    if not (rrun.request.tools and run.offers_tools):
        return False
    offered = next((r for r in run.requests if r.request.name == "tools-offered"), None)
    return offered is not None and stack in offered.stacks and offered.stacks[stack].render.ok


def scope(requests: list[str]) -> str:
    return f"requests {listed(requests)}" if len(requests) > 1 else f"request {requests[0]}"


def message_texts(message: dict[str, Any]) -> list[str]:
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


def find_text(text: str, prompt: str, start: int) -> tuple[int, int]:
    """Where ``text`` is in ``prompt`` from ``start``: as written, or escaped inside a JSON string (json.dumps, or
    MiniJinja's tojson escaping < > & ' too: a different form is TA802's, not a drop). (start, end)."""
    escaped = json.dumps(text)[1:-1]
    html = escaped.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").replace("'", "\\u0027")
    for form in dict.fromkeys((text, escaped, json.dumps(text, ensure_ascii=False)[1:-1], html)):
        at = prompt.find(form, start)
        if at >= 0:
            return at, at + len(form)
    return -1, -1
