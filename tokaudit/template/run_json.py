"""A template run in the result cache's form: plain JSON out, and back into a run only when every field has the
shape it was written with (else None: the cache entry is not used)."""

from __future__ import annotations

from typing import Any

from tokaudit.template.rendering import PrefixTurn, RequestRun, StackRender, TemplateRun
from tokaudit.template.renders import Render
from tokaudit.template.requests import Request
from tokaudit.template.source import TemplateSource


def run_to_json(run: TemplateRun) -> dict[str, Any]:
    """A run as plain JSON, each distinct render stored once."""
    table: dict[int, int] = {}
    renders: list[list[Any]] = []

    def ref(r: Render | None) -> int | None:
        if r is None:
            return None
        if id(r) not in table:
            table[id(r)] = len(renders)
            renders.append(r.to_json())
        return table[id(r)]

    return {
        "stacks": run.stacks,
        "skipped": run.skipped,
        "distinct": run.distinct_renders,
        "offers_tools": run.offers_tools,
        "requests": [
            [r.request.name, {s: [ref(sr.render), ref(sr.reference), list(sr.causes)] for s, sr in r.stacks.items()}]
            for r in run.requests
        ],
        "renders": renders,
        "headers": {s: [list(h) for h in rows] for s, rows in run.headers.items()},
        "prefixes": [[p.request, p.stack, p.turn, p.prompt, p.full, p.following] for p in run.prefixes],
    }


def run_from_json(template: TemplateSource, requests: list[Request], data: Any) -> TemplateRun | None:
    """A cached run, or None when ``data`` is not one for these requests (a corrupted entry)."""
    try:
        renders = [Render(*r) for r in data["renders"]]
        rows = data["requests"]
        if [name for name, _ in rows] != [r.name for r in requests]:
            return None
        runs = []
        for request, (_, stacks) in zip(requests, rows):
            rrun = RequestRun(request, template)
            for stack, (i, j, causes) in stacks.items():
                rrun.stacks[stack] = StackRender(stack, renders[i], None if j is None else renders[j], tuple(causes))
            runs.append(rrun)
        headers = {s: [tuple(h) for h in hs] for s, hs in data["headers"].items()}
        if any(len(h) != 4 for hs in headers.values() for h in hs):
            return None
        prefixes = [PrefixTurn(*p) for p in data["prefixes"]]
        return TemplateRun(
            template,
            runs,
            list(data["stacks"]),
            dict(data["skipped"]),
            headers,
            prefixes,
            int(data["distinct"]),
            bool(data["offers_tools"]),
        )
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return None
