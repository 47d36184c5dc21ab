"""The TA8xx findings of rendered templates, each naming the stacks it is true for (``details.stacks``).

TA801 a stack cannot render a request; TA802 a stack's engine renders its own context other than Jinja2
(transformers' engine) does; TA803 the prompt starts with the BOS a client's tokenizer adds again; TA804 a
control-token literal of a rendered prompt does not encode to its id; TA805 the generation prompt is not the
header of an assistant turn; TA806 a past tool call never reaches the prompt; TA807 turn k's prompt and reply
are not a prefix of turn k+1's prompt; TA810-TA813 the structural rules (:mod:`tokaudit.template.structure`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from tokaudit.records import Provenance
from tokaudit.checks.literals import LiteralClassifier, literals_in
from tokaudit.ids import IdRanges
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Code, Finding, Severity, catalog_codes
from tokaudit.template.rendering import TOTAL_SPENT, PrefixTurn, RequestRun, TemplateRun
from tokaudit.template.renders import Render
from tokaudit.template.requests import TOOL_CALL_MARKS
from tokaudit.template.serving import ServingEncoder
from tokaudit.template.source import TemplateSource
from tokaudit.template.stacks import STACK_NAMES, profile
from tokaudit.template.structure import CODES as STRUCTURE_CODES
from tokaudit.template.structure import structure_findings

#: Characters of context on each side of a difference in an excerpt.
EXCERPT = 40

#: The TA8xx family of rendered templates (names, severities and summaries are the catalog's).
CODES: dict[str, Code] = {
    **{c.code: c for c in catalog_codes("TA801", "TA802", "TA803", "TA804", "TA805", "TA806", "TA807")},
    **STRUCTURE_CODES,
}


def finding(code: str, message: str, **kwargs: Any) -> Finding:
    return CODES[code].finding(message, **kwargs)


def excerpt(text: str, at: int, width: int = EXCERPT) -> str:
    start = max(0, at - width)
    return ("…" if start else "") + text[start : at + width] + ("…" if at + width < len(text) else "")


def first_difference(a: str, b: str) -> int:
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


def _first_token_difference(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


def ordered(stacks: Any) -> list[str]:
    """Stack ids in report order."""
    chosen = set(stacks)
    return [s for s in STACK_NAMES if s in chosen]


def concerns(f: Finding, stacks: tuple[str, ...]) -> bool:
    """A finding concerns a stack selection when it names a selected stack; one that names none (TA803: clients,
    not stacks) only when every stack is selected."""
    named = (f.details or {}).get("stacks")
    if not named:
        return tuple(stacks) == STACK_NAMES
    return any(s in stacks for s in named)


def names(items: list[str], most: int = 6) -> str:
    return ", ".join(items[:most]) + (" …" if len(items) > most else "")


def _in_template(template: TemplateSource) -> str:
    return "" if template.name == "default" else f" with template {template.name}"


@dataclass
class Tokens:
    """The ids of rendered texts (each text tokenized once): the serving encoder for whole prompts, the
    classifier's encoder (no special tokens added) for pieces."""

    encoder: ServingEncoder | None
    classifier: LiteralClassifier | None = None
    _cache: dict[str, list[int] | None] = field(default_factory=dict)

    def of(self, text: str | None) -> list[int] | None:
        if self.encoder is None or text is None:
            return None
        if text not in self._cache:
            self._cache[text] = self.encoder.encode(text)
        return self._cache[text]


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
                f"{', '.join(stacks)} cannot render {scope}{_in_template(template)}: {kind}: "
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
            _first_token_difference(ids_ref, ids)
            if ids_ref is not None and ids is not None and ids_ref != ids
            else None
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
                f"{', '.join(stacks)}: request {requests[0]}{also}{_in_template(rrun.template)} renders other text "
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


# --------------------------------------------------------------------------- TA803

#: Why TA803 is a warning: no serving stack's chat endpoint tokenizes the rendered prompt with special tokens
#: added. vLLM: ChatCompletionRequest.add_special_tokens defaults to False. SGLang: serving_chat.py keeps
#: add_special_tokens=False "to avoid double BOS". TGI: ChatRequest::try_into_generate builds its GenerateRequest
#: with add_special_tokens: false. transformers: apply_chat_template(tokenize=True) encodes with
#: add_special_tokens=False. llama.cpp's server: common/chat.cpp strips a leading bos_token from the rendered text
#: when the vocabulary adds BOS. Hit: a client that renders the template and tokenizes the text with the defaults
#: (transformers' tokenizer(text), a /v1/completions request, vLLM's LLM.generate).
DOUBLE_BOS_STACKS = (
    "no stack's chat endpoint is hit (vLLM, SGLang, TGI and transformers' apply_chat_template tokenize "
    "chat prompts without special tokens, llama.cpp's server strips the leading BOS); a client that renders "
    "the template and tokenizes the text with the defaults (tokenizer(text), a completions request) is"
)


def double_bos(model: TokenizerModel, runs: list[TemplateRun], tokens: Tokens) -> list[Finding]:
    """TA803: the template writes the token the tokenizer prepends anyway (post-processor / add_bos_token)."""
    prefix = tokens.encoder.prefix if tokens.encoder is not None else None
    if prefix is None:
        from tokaudit.template.serving import prepended

        prefix = prepended(model)
    if prefix is None:
        return []
    hits: list[tuple[RequestRun, str, Render, list[int] | None]] = []
    for trun in runs:
        for rrun in trun.requests:
            for stack, sr in rrun.stacks.items():
                r = sr.render
                if r.ok and r.text is not None and r.text.startswith(prefix.token):
                    ids = tokens.of(r.text)
                    if ids is not None and not (len(ids) >= 2 and ids[0] == ids[1]):
                        continue  # the real tokenization disagrees with the static reading: trust the ids
                    hits.append((rrun, stack, r, ids))
    if not hits:
        return []
    rrun, stack, r, ids = hits[0]
    requests = sorted({h[0].label for h in hits})
    shown = f" The prompt starts with ids {ids[:4]}." if ids is not None else ""
    return [
        finding(
            "TA803",
            f"request {rrun.label}{_in_template(rrun.template)}: the template writes {prefix.token} at the start of "
            "the prompt and "
            f"{prefix.setting} adds {prefix.token} again when the text is tokenized with special tokens, so the model "
            "sees two BOS "
            f"tokens ({len(requests)} request(s)).{shown} {DOUBLE_BOS_STACKS}. Drop bos_token from the template or "
            "tokenize "
            "rendered prompts with add_special_tokens=False.",
            location=rrun.template.location,
            ids=IdRanges.from_ids([prefix.token_id]) if prefix.token_id is not None else None,
            details={
                "subject": rrun.template.name,
                "stacks": [],
                "rendered_by": ordered({h[1] for h in hits}),
                "conversation": rrun.label,
                "token": prefix.token,
                "token_id": prefix.token_id,
                "added_by": prefix.setting,
                "conversations": requests,
                "first_ids": ids[:4] if ids is not None else None,
                "excerpt": excerpt(r.text or "", 0),
            },
        )
    ]


# --------------------------------------------------------------------------- TA804


def token_splits(runs: list[TemplateRun], classifier: LiteralClassifier) -> list[Finding]:
    """TA804: control-token literals in rendered prompts that do not reach the model as their one id."""
    seen: dict[str, tuple[RequestRun, str, int]] = {}
    stacks_of: dict[str, set[str]] = {}
    for trun in runs:
        for rrun in trun.requests:
            for stack, sr in rrun.stacks.items():
                r = sr.render
                if not r.ok or r.text is None:
                    continue
                for m in literals_in(r.text):
                    stacks_of.setdefault(m.group(), set()).add(stack)
                    if m.group() not in seen:
                        seen[m.group()] = (rrun, r.text, m.start())
    out = []
    for text, (rrun, prompt, at) in seen.items():
        v = classifier.verdict(text)
        if not v.control or v.ok:
            continue
        stacks = ordered(stacks_of[text])
        out.append(
            finding(
                "TA804",
                f"request {rrun.label}{_in_template(rrun.template)}, {', '.join(stacks)}: the rendered prompt holds "
                f"{text} at character {at} "
                f"({excerpt(prompt, at, 20)!r}), but {v.why()}{v.encodes()}: the model never sees the control token "
                "it was trained with.",
                location=rrun.template.location,
                ids=IdRanges.from_ids([v.token_id]) if v.token_id is not None else None,
                details={
                    "subject": text,
                    "token": text,
                    "stacks": stacks,
                    "conversation": rrun.label,
                    "position": at,
                    "registered_by": v.registered_by,
                    "encoded_ids": v.encoded_ids,
                    "encoder": v.encoder,
                },
            )
        )
    return out


# --------------------------------------------------------------------------- TA805

_HEADER_MARKERS = ("<think>", "<|channel|>", "<|message|>", "<seed:think>")


def _benign_rest(rest: str) -> bool:
    """What the model may generate itself after the generation prompt: a control or reasoning marker first."""
    m = next(iter(literals_in(rest)), None)
    return (m is not None and m.start() == 0) or rest.startswith(_HEADER_MARKERS)


#: Markers with which a generation prompt opens the model's reasoning on purpose (Qwen3.5, GLM-4.7, Command A...).
_OPENS_REASONING = ("<think>", "<seed:think>", "<|START_THINKING|>", "[THINK]")


def _opens_reasoning(header: str, suffix: str) -> bool:
    """The generation prompt is the assistant header (or its start) followed by a marker that opens reasoning,
    where a past assistant turn has none or an empty block: the template starts the model thinking, on purpose."""
    body = suffix.rstrip()
    for marker in _OPENS_REASONING:
        if body.endswith(marker):
            head = body[: -len(marker)]
            return header.startswith(head) or header.startswith(head.rstrip())
    return False


def _header_problem(header: str, suffix: str | None) -> str | None:
    if suffix is not None and _opens_reasoning(header, suffix):
        return None
    if suffix is None:
        return "the prompt with add_generation_prompt does not extend the prompt without it"
    if not suffix.strip() and header.strip():
        return f"add_generation_prompt adds nothing ({suffix!r}), so the model must write the assistant header {header!r} itself"
    if suffix.startswith(header):
        return None
    if header.startswith(suffix):
        rest = header[len(suffix) :]
        return (
            None
            if _benign_rest(rest)
            else (
                f"the prompt ends with {suffix!r} but an assistant turn starts with {header!r}: the model must "
                f"generate {rest!r} first"
            )
        )
    at = first_difference(suffix, header)
    return f"the prompt ends with {suffix!r} but an assistant turn starts with {header!r} (first difference at character {at})"


def generation_prompts(runs: list[TemplateRun]) -> list[Finding]:
    """TA805: the generation prompt should write the assistant header (the model starts right after it). One
    finding per template and problem, naming the stacks it holds for."""
    out = []
    for trun in runs:
        problems: dict[str, tuple[str, str | None, str | None, str, list[str]]] = {}
        for stack, rows in trun.headers.items():
            for name, header, suffix, prompt in rows:
                if header is None:
                    continue
                problem = _header_problem(header, suffix)
                if problem is not None:
                    problems.setdefault(problem, (name, header, suffix, prompt, []))[4].append(stack)
                    break  # one per template and stack
        for problem, (name, header, suffix, prompt, stacks) in problems.items():
            stacks = ordered(stacks)
            out.append(
                finding(
                    "TA805",
                    f"request {name}{_in_template(trun.template)}, {', '.join(stacks)}: {problem}.",
                    location=trun.template.location,
                    details={
                        "subject": f"{trun.template.name}:{problem[:60]}",
                        "stacks": stacks,
                        "conversation": name,
                        "header": header,
                        "generation_suffix": suffix,
                        "prompt_end": prompt[-EXCERPT:],
                    },
                )
            )
    return out


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
                    f"{f' (also {names(requests[1:])})' if len(requests) > 1 else ''}{_in_template(trun.template)} "
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
            "the template keeps the reasoning_content of the last assistant turn and drops it once a later turn follows",
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
                    token_at = _first_token_difference(turn_ids, following_ids)
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
                token_at = _first_token_difference(expected_ids, following_ids)
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
                f"{_in_template(trun.template)}: turn {turn.turn}'s prompt and reply are not a prefix of the next "
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


def analyse(
    model: TokenizerModel,
    runs: list[TemplateRun],
    encoder: ServingEncoder | None,
    classifier: LiteralClassifier | None = None,
) -> list[Finding]:
    classifier = classifier or LiteralClassifier(model)
    tokens = Tokens(encoder, classifier)
    return [
        *render_errors(runs),
        *divergences(runs, tokens),
        *double_bos(model, runs, tokens),
        *token_splits(runs, classifier),
        *generation_prompts(runs),
        *dropped_tool_calls(runs),
        *prefix_instability(runs, tokens),
        *structure_findings(runs),
    ]
