"""Render every conversation with every engine, tokenize as the serving stack does, and find TA801-TA805."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from tokaudit.artifacts.base import Provenance
from tokaudit.checks.literals import LiteralClassifier, literals_in
from tokaudit.ids import IdRanges
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Code, Finding, Severity, catalog_codes
from tokaudit.template.conversations import SENTINEL, Conversation
from tokaudit.template.renders import SIZE_BOMB, Budget, Engine, Render
from tokaudit.template.serving import ServingEncoder
from tokaudit.template.source import TemplateSource

#: How the renders skipped after an engine spent its time on one template are told apart.
TOTAL_SPENT = "this engine may spend on one template"

#: Characters of context on each side of a difference in an excerpt.
EXCERPT = 40

#: The TA8xx family (names, severities and summaries are the catalog's).
CODES: dict[str, Code] = {c.code: c for c in catalog_codes("TA801", "TA802", "TA803", "TA804", "TA805")}


def finding(code: str, message: str, **kwargs: Any) -> Finding:
    return CODES[code].finding(message, **kwargs)


@dataclass
class ConversationRun:
    """One conversation rendered by every engine."""

    conversation: Conversation
    template: TemplateSource
    renders: list[Render]
    #: engine -> ids of its rendered text (filled when tokenized)
    ids: dict[str, list[int] | None] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.conversation.name

    def render(self, engine: str) -> Render | None:
        return next((r for r in self.renders if r.engine == engine), None)


@dataclass
class TemplateRun:
    """One template rendered with every conversation."""

    template: TemplateSource
    conversations: list[ConversationRun]
    #: engine -> (conversation name, header the template writes before an assistant turn, generation suffix)
    headers: dict[str, list[tuple[str, str | None, str | None, str]]] = field(default_factory=dict)


def excerpt(text: str, at: int, width: int = EXCERPT) -> str:
    start = max(0, at - width)
    return ("…" if start else "") + text[start:at + width] + ("…" if at + width < len(text) else "")


def first_difference(a: str, b: str) -> int:
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


def _skipped(engine: str, why: str) -> Render:
    return Render(engine, None, why, "budget")


def render_template(template: TemplateSource, conversations: list[Conversation], engines: list[Engine],
                    special: dict[str, str], *, probe_headers: bool = True) -> TemplateRun:
    """Render each conversation with each engine. After an engine runs out of its budget once, its
    remaining renders of this template are skipped, so a hostile template costs one budget per engine."""
    prepared = {e.name: e.prepare(template.text) for e in engines}
    exhausted: dict[str, str] = {}
    spent = dict.fromkeys(prepared, 0.0)
    total = min((getattr(e, "budget", None) or Budget()).total_seconds for e in engines) if engines else 0.0

    def render(engine: str, conv: Conversation) -> Render:
        if engine in exhausted:
            return _skipped(engine, f"skipped: {exhausted[engine]} on an earlier conversation")
        bomb = next((e for e, why in exhausted.items() if why.startswith(SIZE_BOMB)), None)
        if bomb is not None:
            # MiniJinja cannot bound one operation's allocation: a repetition Jinja2 refused is not tried
            exhausted[engine] = f"not rendered: {bomb} found an unbounded repetition ({exhausted[bomb]})"
            return Render(engine, None, exhausted[engine], "budget")
        start = time.perf_counter()
        out = prepared[engine].render(conv.context(special))
        spent[engine] += time.perf_counter() - start
        if out.kind == "budget":
            exhausted[engine] = out.error or "budget"
        elif spent[engine] > total:
            exhausted[engine] = f"the {total:g} s {TOTAL_SPENT} ran out"
        return out

    runs = [ConversationRun(c, template, [render(e.name, c) for e in engines]) for c in conversations]
    run = TemplateRun(template, runs)
    if probe_headers:
        for e in engines:
            run.headers[e.name] = _headers(lambda c, name=e.name: render(name, c), conversations)
    return run


def _headers(render: Callable[[Conversation], Render],
             conversations: list[Conversation]) -> list[tuple[str, str | None, str | None, str]]:
    """For conversations that end on a user turn with a generation prompt: the header the template writes
    before an assistant turn (from rendering the conversation plus an assistant reply) and the suffix the
    generation prompt adds. (name, header or None, suffix or None, what went wrong)."""
    out = []
    for conv in conversations:
        if not conv.add_generation_prompt or conv.messages[-1].get("role") != "user" or conv.origin != "built-in":
            continue
        if conv.name not in ("system-user", "multi-turn", "user-only"):
            continue
        with_gen = render(conv)
        without = render(replace(conv, add_generation_prompt=False))
        replied = render(replace(conv, messages=[*conv.messages, {"role": "assistant", "content": SENTINEL}],
                                 add_generation_prompt=False))
        if not (with_gen.ok and without.ok and replied.ok):
            continue
        assert with_gen.text is not None and without.text is not None and replied.text is not None
        header = None
        if replied.text.startswith(without.text) and SENTINEL in replied.text:
            header = replied.text[len(without.text):replied.text.index(SENTINEL)]
        suffix = with_gen.text[len(without.text):] if with_gen.text.startswith(without.text) else None
        out.append((conv.name, header, suffix, with_gen.text))
    return out


# --------------------------------------------------------------------------- findings


def _where(run: ConversationRun | TemplateRun, engine: str | None = None) -> str:
    template = run.template
    name = "" if template.name == "default" else f" (template {template.name})"
    conv = f"conversation {run.label}" if isinstance(run, ConversationRun) else ""
    return f"{conv}{name}" + (f", engine {engine}" if engine else "")


def render_errors(runs: list[TemplateRun]) -> list[Finding]:
    """TA801: one finding per template, engine and error message, naming every conversation it hit."""
    groups: dict[tuple[str, str, str], list[ConversationRun]] = {}
    for trun in runs:
        # (engine, group) pairs where some variant rendered: the feature works on that engine
        works = {(r.engine, c.conversation.group) for c in trun.conversations for r in c.renders
                 if r.ok and c.conversation.group is not None}
        for crun in trun.conversations:
            for r in crun.renders:
                if (r.engine, crun.conversation.group) in works:
                    continue
                if not r.ok and (not (r.error or "").startswith("skipped:") or TOTAL_SPENT in (r.error or "")):
                    groups.setdefault((trun.template.name, r.engine, r.error or ""), []).append(crun)
    out = []
    for (_, engine, error), cruns in groups.items():
        crun = cruns[0]
        names = [c.label for c in cruns]
        required = [c for c in cruns if c.conversation.required]
        # a raise_exception in every engine is the template refusing the conversation on purpose
        deliberate = all(r.kind == "raise" for c in cruns for r in c.renders if not r.ok)
        severity = Severity.ERROR if required and not deliberate and TOTAL_SPENT not in error else Severity.WARNING
        kind = {"raise": "the template raised", "budget": "the render ran out of its budget",
                "syntax": "the template does not compile"}.get(crun.render(engine).kind or "", "the render failed")  # type: ignore[union-attr]
        scope = (f"{len(cruns)} conversations ({', '.join(names[:6])}{' …' if len(names) > 6 else ''})"
                 if len(cruns) > 1 else f"conversation {names[0]}")
        others = [r.engine for r in crun.renders if r.ok]
        contrast = f"; {', '.join(others)} renders it" if others else ""
        out.append(finding(
            "TA801",
            f"{engine} cannot render {scope}{'' if crun.template.name == 'default' else f' with template {crun.template.name}'}: "
            f"{kind}: {error.rstrip('.')}{contrast}.",
            severity=severity, location=_error_location(crun.template, error),
            details={"subject": f"{crun.template.name}:{engine}:{error[:80]}", "engine": engine, "error": error,
                     "kind": crun.render(engine).kind, "conversations": names, "template": crun.template.name},  # type: ignore[union-attr]
        ))
    return out


_ERROR_LINE = r"^TemplateSyntaxError: line (\d+):|\(in chat:(\d+)\)"  # compiled on first use: an error path


def _error_location(template: TemplateSource, error: str) -> Provenance:
    """The template's location, with the line an engine names when the template is a file of its own."""
    m = re.search(_ERROR_LINE, error)
    if m is None or template.location.line is None:
        return template.location
    return Provenance(template.location.file, line=int(m.group(1) or m.group(2)))


def _first_token_difference(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


#: What MiniJinja's own ``tojson`` escapes (HTML-safe JSON), and what transformers' ``tojson`` (json.dumps) writes.
_MINIJINJA_TOJSON = {"\\u003c": "<", "\\u003e": ">", "\\u0026": "&", "\\u0027": "'"}
#: Which gateways render with MiniJinja's own tojson. TGI: router/src/infer/chat_template.rs builds its Environment with
#: pycompat and raise_exception and registers no tojson, so MiniJinja's escaping reaches the prompt. smg (SGLang's
#: router): crates/tokenizer/src/chat_template.rs registers its own tojson_filter (serde_json, no HTML escaping).
TOJSON_CAUSE = ("The difference is MiniJinja's own tojson, which escapes < > & ' as \\u003c \\u003e \\u0026 \\u0027 where "
                "transformers' json.dumps does not: TGI registers no tojson of its own, so it prompts with the minijinja text; "
                "smg (SGLang's router) overrides tojson and is not hit")


def _tojson_escaping_only(jinja: str, mini: str) -> bool:
    """The two renders differ only by MiniJinja's tojson escapes."""
    for escaped, char in _MINIJINJA_TOJSON.items():
        mini = mini.replace(escaped, char)
    return mini == jinja


def divergences(runs: list[TemplateRun], encoder: ServingEncoder | None, max_findings: int = 12) -> list[Finding]:
    """TA802: conversations both engines render to different text; error when the ids differ too.

    Conversations whose first difference looks the same (the same excerpts around it) share one
    finding: one cause (a tool description through ``tojson``) is reported once, with every
    conversation it hits."""
    groups: dict[tuple[str, str, str, str], list[tuple[ConversationRun, Render, Render, int]]] = {}
    for trun in runs:
        for crun in trun.conversations:
            ok = [r for r in crun.renders if r.ok]
            if len(ok) < 2:
                continue
            a, b = ok[0], ok[1]
            assert a.text is not None and b.text is not None
            if a.text == b.text:
                continue
            at = first_difference(a.text, b.text)
            key = (trun.template.name, excerpt(a.text, at, 20), excerpt(b.text, at, 20), f"{at}")
            groups.setdefault(key, []).append((crun, a, b, at))
    out: list[Finding] = []
    for members in list(groups.values())[:max_findings]:
        crun, a, b, at = members[0]
        assert a.text is not None and b.text is not None
        ids_a = tokens_of(crun, a, encoder)
        ids_b = tokens_of(crun, b, encoder)
        token_at = _first_token_difference(ids_a, ids_b) if ids_a is not None and ids_b is not None else None
        tokens_differ = ids_a != ids_b or ids_a is None
        tok = (f"; the token ids first differ at position {token_at} ({len(ids_a)} vs {len(ids_b)} tokens)"  # type: ignore[arg-type]
               if token_at is not None and ids_a != ids_b else
               "; the token ids are the same" if ids_a is not None and ids_a == ids_b else "; the ids were not compared")
        names = [m[0].label for m in members]
        also = f" (also {', '.join(names[1:])})" if len(names) > 1 else ""
        renders = {a.engine: a.text, b.engine: b.text}
        tojson = "jinja2" in renders and "minijinja" in renders and _tojson_escaping_only(renders["jinja2"], renders["minijinja"])
        cause = f" {TOJSON_CAUSE}." if tojson else ""
        out.append(finding(
            "TA802",
            f"{_where(crun)}{also}: {a.engine} and {b.engine} render different text from character {at}: "
            f"{a.engine} {excerpt(a.text, at)!r} vs {b.engine} {excerpt(b.text, at)!r}{tok}.{cause}",
            severity=Severity.ERROR if tokens_differ else Severity.WARNING,
            location=crun.template.location,
            details={"subject": f"{crun.template.name}:{crun.label}", "conversation": crun.label, "conversations": names,
                     "template": crun.template.name, "engines": [a.engine, b.engine], "position": at,
                     "excerpts": {a.engine: excerpt(a.text, at), b.engine: excerpt(b.text, at)},
                     "chars": {a.engine: a.text[at:at + 1], b.engine: b.text[at:at + 1]},
                     "token_position": token_at,
                     **({"cause": "minijinja-tojson-escaping", "stacks_hit": ["TGI"], "stacks_not_hit": ["smg"]} if tojson else {})},
        ))
    return out


def tokens_of(crun: ConversationRun, render: Render, encoder: ServingEncoder | None) -> list[int] | None:
    if encoder is None or render.text is None:
        return None
    if render.engine not in crun.ids:
        crun.ids[render.engine] = encoder.encode(render.text)
    return crun.ids[render.engine]


#: Why TA803 is a warning: no serving stack's chat endpoint tokenizes the rendered prompt with special tokens
#: added. vLLM: ChatCompletionRequest.add_special_tokens defaults to False ("the chat template takes care of adding
#: the special tokens", vllm/entrypoints/openai/protocol.py). SGLang: serving_chat.py keeps add_special_tokens=False
#: at the chat-template encode site "to avoid double BOS" (python/sglang/srt/entrypoints/openai/serving_chat.py,
#: OpenAIServingChat.__init__). TGI: ChatRequest::try_into_generate builds its GenerateRequest with
#: add_special_tokens: false (router/src/lib.rs). llama.cpp's server: common/chat.cpp strips a leading bos_token
#: from the rendered text when the vocabulary adds BOS ("To avoid double BOS / EOS tokens"). Hit: a client that
#: renders the template itself and tokenizes the text with the defaults (transformers' tokenizer(text), a
#: /v1/completions request, vLLM's LLM.generate).
DOUBLE_BOS_STACKS = ("vLLM, SGLang and TGI tokenize a chat prompt without special tokens and llama.cpp's server strips the "
                     "leading BOS, so their chat endpoints are not hit; a client that renders the template and tokenizes the "
                     "text with the defaults (tokenizer(text), a completions request) is")


def double_bos(model: TokenizerModel, runs: list[TemplateRun], encoder: ServingEncoder | None) -> list[Finding]:
    """TA803: the template writes the token the stack prepends anyway (post-processor / add_bos_token)."""
    prefix = encoder.prefix if encoder is not None else None
    if prefix is None:
        from tokaudit.template.serving import prepended

        prefix = prepended(model)
    if prefix is None:
        return []
    hits: list[tuple[ConversationRun, Render, list[int] | None]] = []
    for trun in runs:
        for crun in trun.conversations:
            for r in crun.renders:
                if r.ok and r.text is not None and r.text.startswith(prefix.token):
                    ids = tokens_of(crun, r, encoder) if encoder is not None else None
                    if ids is not None and not (len(ids) >= 2 and ids[0] == ids[1]):
                        continue  # the real tokenization disagrees with the static reading: trust the ids
                    hits.append((crun, r, ids))
    if not hits:
        return []
    crun, r, ids = hits[0]
    convs = sorted({h[0].label for h in hits})
    shown = f" The prompt starts with ids {ids[:4]}." if ids is not None else ""
    return [finding(
        "TA803",
        f"{_where(crun, r.engine)}: the template writes {prefix.token} at the start of the prompt and {prefix.setting} "
        f"adds {prefix.token} again when the text is tokenized with special tokens, so the model sees two BOS tokens "
        f"({len(convs)} conversation(s)).{shown} {DOUBLE_BOS_STACKS}. Drop bos_token from the template or tokenize "
        "rendered prompts with add_special_tokens=False.",
        location=crun.template.location,
        ids=IdRanges.from_ids([prefix.token_id]) if prefix.token_id is not None else None,
        details={"subject": crun.template.name, "conversation": crun.label, "engine": r.engine, "token": prefix.token,
                 "token_id": prefix.token_id, "added_by": prefix.setting, "conversations": convs,
                 "first_ids": ids[:4] if ids is not None else None, "excerpt": excerpt(r.text or "", 0),
                 "stacks_hit": [], "stacks_not_hit": ["vLLM", "SGLang", "TGI", "llama.cpp server"]},
    )]


def token_splits(runs: list[TemplateRun], classifier: LiteralClassifier) -> list[Finding]:
    """TA804: control-token literals in rendered prompts that do not reach the model as their one id."""
    seen: dict[str, tuple[ConversationRun, Render, int]] = {}
    for trun in runs:
        for crun in trun.conversations:
            for r in crun.renders:
                if not r.ok or r.text is None:
                    continue
                for m in literals_in(r.text):
                    if m.group() not in seen:
                        seen[m.group()] = (crun, r, m.start())
    out = []
    for text, (crun, r, at) in seen.items():
        v = classifier.verdict(text)
        if not v.control or v.ok:
            continue
        out.append(finding(
            "TA804",
            f"{_where(crun, r.engine)}: the rendered prompt holds {text} at character {at} ({excerpt(r.text or '', at, 20)!r}), "
            f"but {v.why()}{v.encodes()}: the model never sees the control token it was trained with.",
            location=crun.template.location,
            ids=IdRanges.from_ids([v.token_id]) if v.token_id is not None else None,
            details={"subject": text, "token": text, "conversation": crun.label, "engine": r.engine, "position": at,
                     "registered_by": v.registered_by, "encoded_ids": v.encoded_ids, "encoder": v.encoder},
        ))
    return out


_HEADER_MARKERS = ("<think>", "<|channel|>", "<|message|>", "<seed:think>")


def _benign_rest(rest: str) -> bool:
    """What the model may generate itself after the generation prompt: a control or reasoning marker first."""
    m = next(iter(literals_in(rest)), None)
    return (m is not None and m.start() == 0) or rest.startswith(_HEADER_MARKERS)


def generation_prompts(runs: list[TemplateRun]) -> list[Finding]:
    """TA805: the generation prompt should write the assistant header (the model starts right after it)."""
    out = []
    for trun in runs:
        for engine, rows in trun.headers.items():
            for name, header, suffix, prompt in rows:
                if header is None:
                    continue
                problem = None
                if suffix is None:
                    problem = "the prompt with add_generation_prompt does not extend the prompt without it"
                elif not suffix.strip() and header.strip():
                    problem = f"add_generation_prompt adds nothing ({suffix!r}), so the model must write the assistant header {header!r} itself"
                elif suffix.startswith(header):
                    continue
                elif header.startswith(suffix):
                    rest = header[len(suffix):]
                    if _benign_rest(rest):
                        continue
                    problem = f"the prompt ends with {suffix!r} but an assistant turn starts with {header!r}: the model must generate {rest!r} first"
                else:
                    at = first_difference(suffix, header)
                    problem = (f"the prompt ends with {suffix!r} but an assistant turn starts with {header!r} "
                               f"(first difference at character {at})")
                out.append(finding(
                    "TA805",
                    f"conversation {name}{'' if trun.template.name == 'default' else f' (template {trun.template.name})'}, "
                    f"engine {engine}: {problem}.",
                    location=trun.template.location,
                    details={"subject": f"{trun.template.name}:{engine}", "conversation": name, "engine": engine,
                             "header": header, "generation_suffix": suffix, "prompt_end": prompt[-EXCERPT:]},
                ))
                break  # one per template and engine
    return out


def analyse(model: TokenizerModel, runs: list[TemplateRun], encoder: ServingEncoder | None,
            classifier: LiteralClassifier | None = None) -> list[Finding]:
    classifier = classifier or LiteralClassifier(model)
    return [*render_errors(runs), *divergences(runs, encoder), *double_bos(model, runs, encoder),
            *token_splits(runs, classifier), *generation_prompts(runs)]

