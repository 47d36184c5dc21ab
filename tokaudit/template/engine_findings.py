"""TA801 and TA802: a template the stacks' engines fail to render (the error, its line, the stacks and requests it
hits), and one they render into other text than Jinja2 (transformers' engine) makes of the same variables (the first
difference, its cause: a knob of the stack's profile, or how the JSON is spelled)."""

from __future__ import annotations

import json
import re

from tokaudit.records import Provenance
from tokaudit.report.finding import Finding, Severity
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
from tokaudit.template.rendering import TOTAL_SPENT, RequestRun, TemplateRun
from tokaudit.template.source import TemplateSource


# --------------------------------------------------------------------------- TA801


def render_errors(runs: list[TemplateRun]) -> list[Finding]:
    """TA801: one finding per template and error, naming the stacks that fail with it and the requests."""
    groups: dict[tuple[str, str, bool], dict[str, list[RequestRun]]] = {}
    kinds: dict[tuple[str, str, bool], str | None] = {}
    gaps: set[tuple[str, str, bool]] = set()
    serves = _serves_tools(runs)
    for trun in runs:
        by_name = {r.request.name: r for r in trun.requests}
        failed: dict[tuple[str, str], list[RequestRun]] = {}
        for rrun in trun.requests:
            for stack, sr in rrun.stacks.items():
                r = sr.render
                if r.ok or r.kind == "skipped" and TOTAL_SPENT not in (r.error or ""):
                    continue
                failed.setdefault((stack, r.error or ""), []).append(rrun)
        # no shape excuses another: a tool request is required of a stack that serves the template's tools; each
        # stack's failure is required or optional by its own requests (one finding per template, error and severity)
        for (stack, error), rruns in failed.items():
            required = any(
                r.request.required or bool(r.request.tools) and (trun.template.name, stack) in serves for r in rruns
            )
            key = (trun.template.name, error, required)
            groups.setdefault(key, {})[stack] = rruns
            kinds[key] = rruns[0].stacks[stack].render.kind
            if any(_refuses_the_added_turn(r, by_name, stack) for r in rruns):
                gaps.add(key)
    out = []
    for key, by_stack in groups.items():
        error = key[1]
        stacks = ordered(by_stack)
        rruns = list({id(r): r for rs in by_stack.values() for r in rs}.values())
        template = rruns[0].template
        requests = [r.label for r in rruns]
        required = key[2]
        # the template refusing a request on purpose: raise_exception, and no stack renders the request
        rendered_by = ordered(s for s in rruns[0].stacks if all(s in r.stacks and r.stacks[s].render.ok for r in rruns))
        # (llama-server rewrites what a template refuses, e.g. a system message into the first user turn: its render
        # does not make the refusal accidental)
        # (nor does a refusal of a turn the API and the model's own format take: see Request.extends)
        deliberate = (
            kinds[key] == "raise"
            and key not in gaps
            and not any(sr.render.ok for r in rruns for s, sr in r.stacks.items() if not _bypasses(s, r))
        )
        severity = Severity.ERROR if required and not deliberate and TOTAL_SPENT not in error else Severity.WARNING
        kind = {
            "raise": "the template raised",
            "budget": "the render ran out of its budget",
            "syntax": "the template does not compile",
            "refused": "the stack refuses the request",
        }.get(kinds[key] or "", "the render failed")
        scope = f"{len(requests)} requests ({names(requests)})" if len(requests) > 1 else f"request {requests[0]}"
        contrast = (
            f"; {', '.join(rendered_by)} render{'s' if len(rendered_by) == 1 else ''} "
            f"{'them' if len(requests) > 1 else 'it'}"
            if rendered_by
            else ""
        )
        engines = {
            s: rruns[0].stacks[s].render.engine if s in rruns[0].stacks else by_stack[s][0].stacks[s].render.engine
            for s in stacks
        }
        out.append(
            finding(
                "TA801",
                f"{', '.join(stacks)} cannot render {scope}{in_template(template)}: {kind}: "
                f"{error.rstrip('.')}{contrast}.",
                severity=severity,
                location=_error_location(template, error),
                details={
                    "subject": f"{template.name}:{error[:80]}",
                    "stacks": stacks,
                    "engines": engines,
                    "error": error,
                    "kind": kinds[key],
                    "conversations": requests,
                    "template": template.name,
                },
            )
        )
    return out


def _refuses_the_added_turn(rrun: RequestRun, by_name: dict[str, RequestRun], stack: str) -> bool:
    """The stack renders the request this one extends (``Request.extends``) and fails on this one."""
    base = by_name.get(rrun.request.extends or "")
    return base is not None and stack in base.stacks and base.stacks[stack].render.ok


def _bypasses(stack: str, rrun: RequestRun) -> bool:
    """The stack renders what the template refuses only because it changes the request first: llama-server rewrites
    what a template cannot take (a system message into the user turn...), TGI passes no tool_calls."""
    return stack == "llama.cpp" or stack == "tgi" and rrun.request.has_tool_calls


def _serves_tools(runs: list[TemplateRun]) -> set[tuple[str, str]]:
    """(template, stack) where the template offers tools and the stack renders a request offering them: a tool-call
    turn in the form that stack sends must then render too (the other form rendering elsewhere excuses nothing)."""
    return {
        (trun.template.name, stack)
        for trun in runs
        if trun.offers_tools
        for rrun in trun.requests
        if rrun.request.name == "tools-offered"
        for stack, sr in rrun.stacks.items()
        if sr.render.ok
    }


_ERROR_LINE = r"^TemplateSyntaxError: line (\d+):|\(in chat:(\d+)\)"  # compiled on first use: an error path


def _error_location(template: TemplateSource, error: str) -> Provenance:
    """The template's location, with the line an engine names when the template is a file of its own."""
    m = re.search(_ERROR_LINE, error)
    if m is None or template.location.line is None:
        return template.location
    return Provenance(template.location.file, line=int(m.group(1) or m.group(2)))


# --------------------------------------------------------------------------- TA802


#: What MiniJinja's own ``tojson`` escapes (HTML-safe JSON), and what transformers' ``tojson`` (json.dumps) writes.
_ESCAPES = {"\\u003c": "<", "\\u003e": ">", "\\u0026": "&", "\\u0027": "'"}


def _tojson_escaping_only(reference: str, text: str) -> bool:
    for escaped, char in _ESCAPES.items():
        text = text.replace(escaped, char)
    return text == reference


#: At most this many places are tried as the start of a JSON value per pass over a render (a bound on the parses).
_JSON_STARTS = 2000


def _json_canonical(text: str, openers: str) -> str:
    """``text`` with every JSON value that starts with one of ``openers`` written one way (sorted keys, no
    whitespace, no escapes but JSON's own)."""
    decoder = json.JSONDecoder()
    out: list[str] = []
    i = done = tries = 0
    while tries < _JSON_STARTS:
        starts = [at for at in (text.find(c, i) for c in openers) if at >= 0]
        if not starts:
            break
        at = min(starts)
        tries += 1
        try:
            value, end = decoder.raw_decode(text, at)
        except ValueError:
            i = at + 1
            continue
        out.append(text[done:at])
        out.append(json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
        i = done = end
    out.append(text[done:])
    return "".join(out)


def _json_values_canonical(text: str) -> str:
    """``text`` with the JSON objects and arrays it holds, then the JSON strings left (a tojson'd string), written one
    way: two texts equal under this differ only in how that JSON is spelled. Containers go first so that a quote of
    a string that is not JSON (a raw newline in it) cannot pair with one inside an object; a JSON string cannot hold
    a raw newline, so a quote in prose pairs with one on the same line at most."""
    return _json_canonical(_json_canonical(text, "{["), '"')


def _json_spelling_only(reference: str, text: str) -> bool:
    """The two renders hold the same JSON values and the same text around them: only separators, indentation, key
    order or escaping of what the template serialized differ (TGI's and Dynamo's compact, escaping tojson)."""
    return _json_values_canonical(reference) == _json_values_canonical(text)


#: What each engine knob (rendering.KNOBS) does where the stack's engine differs from Jinja2.
KNOB_CAUSES = {
    "tojson": "its tojson is not transformers' json.dumps (MiniJinja's escapes < > & ' as \\u003c \\u003e \\u0026 "
    "\\u0027; "
    "serde's is compact)",
    "sorted_maps": "its maps iterate and serialize in key order (MiniJinja built without preserve_order)",
    "trim_blocks": "it keeps the newline after a block tag and the indentation before one (no trim_blocks / "
    "lstrip_blocks)",
    "length_of_none_is_zero": "its length filter gives 0 for none",
    "get_default": "its dict.get takes one argument",
    "strftime_now": "it has no strftime_now",
}


def _cause(causes: tuple[str, ...]) -> str:
    if not causes:
        return "the engine evaluates the template differently"
    return "; ".join(KNOB_CAUSES.get(c, c) for c in causes)


def divergences(runs: list[TemplateRun], tokens: Tokens, max_findings: int = 12) -> list[Finding]:
    """TA802: stacks whose engine renders the stack's own context other than Jinja2 does (the same variables,
    another engine). One finding per template and cause (the engine knobs that change the render), naming every
    stack and request it hits; differences no knob explains are grouped by how their first difference looks."""
    groups: dict[tuple[str, str, str], list[tuple[str, RequestRun, str, str, int, tuple[str, ...]]]] = {}
    for trun in runs:
        for rrun in trun.requests:
            for stack, sr in rrun.stacks.items():
                reference = sr.reference
                if reference is None or not (reference.ok and sr.render.ok) or reference.text == sr.render.text:
                    continue
                assert reference.text is not None and sr.render.text is not None
                at = first_difference(reference.text, sr.render.text)
                key = (
                    (trun.template.name, ",".join(sr.causes), "")
                    if sr.causes
                    else (trun.template.name, excerpt(reference.text, at, 20), excerpt(sr.render.text, at, 20))
                )
                groups.setdefault(key, []).append((stack, rrun, reference.text, sr.render.text, at, sr.causes))
    out: list[Finding] = []
    for members in list(groups.values())[:max_findings]:
        stack, rrun, ref, text, at, causes = members[0]
        stacks = ordered({m[0] for m in members})
        requests = list(dict.fromkeys(m[1].label for m in members))
        ids_ref, ids = tokens.of(ref), tokens.of(text)
        token_at = (
            first_token_difference(ids_ref, ids) if ids_ref is not None and ids is not None and ids_ref != ids else None
        )
        tokens_differ = ids is None or ids_ref != ids
        tok = (
            f"; the token ids first differ at position {token_at} ({len(ids_ref)} vs {len(ids)} tokens)"  # type: ignore[arg-type]  # token_at is set only when both are
            if token_at is not None
            else "; the token ids are the same"
            if ids is not None
            else "; the ids were not compared"
        )
        why = _cause(causes)
        engine = rrun.stacks[stack].render.engine
        # only the HTML-safe escaping of MiniJinja's tojson (\u003c for <): the same JSON, spelled otherwise
        escaping = all(_tojson_escaping_only(m[2], m[3]) for m in members)
        # or only how the JSON is spelled (compact separators, no indentation, key order, escaping): the same values and
        # the same text around them, in other tokens; a warning like the escaping (issue 35: the markers and every
        # message's text are as trained, the tool definitions' values too)
        spelling = escaping or all(_json_spelling_only(m[2], m[3]) for m in members)
        if escaping:
            why = (
                "only MiniJinja's tojson escaping (< > & ' written as \\u003c \\u003e \\u0026 \\u0027) differs: the "
                "same JSON, "
                "which the model reads in other tokens than it was trained on"
            )
        elif spelling:
            why = (
                f"only the spelling of the JSON the template writes differs ({why}): the same values and the same text "
                f"around them, which the model reads in other tokens than it was trained on ({', '.join(stacks)})"
            )
        also = f" (also {names(requests[1:])})" if len(requests) > 1 else ""
        out.append(
            finding(
                "TA802",
                f"{', '.join(stacks)}: request {requests[0]}{also}{in_template(rrun.template)} renders other text "
                "than Jinja2 (transformers' "
                f"engine) makes of the same variables, from character {at}: {excerpt(ref, at)!r} vs {engine} "
                f"{excerpt(text, at)!r}{tok}. "
                f"The cause is the engine: {why}.",
                severity=Severity.ERROR if tokens_differ and not spelling else Severity.WARNING,
                location=rrun.template.location,
                details={
                    "subject": f"{rrun.template.name}:{','.join(causes)}:{excerpt(text, at, 20)}",
                    "stacks": stacks,
                    "conversation": requests[0],
                    "escaping_only": escaping,
                    "json_spelling_only": spelling,
                    "conversations": requests,
                    "template": rrun.template.name,
                    "engine": engine,
                    "position": at,
                    "excerpts": {"jinja2": excerpt(ref, at), "stack": excerpt(text, at)},
                    "chars": {"jinja2": ref[at : at + 1], "stack": text[at : at + 1]},
                    "token_position": token_at,
                    "causes": list(causes),
                },
            )
        )
    return out
