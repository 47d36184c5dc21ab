"""Render a template's requests for every stack profile: each stack builds its context, each distinct
(engine configuration, template text, context) is rendered once and shared by the stacks that produce it.

Besides each stack's render of each request, a run holds what the findings compare:

* ``reference``: for a stack whose engine is not Jinja2, Jinja2's render of that stack's own context (so a
  difference is the engine's, TA802);
* ``headers``: per stack, the header a template writes before an assistant turn and the generation prompt's
  suffix (TA805);
* ``prefixes``: per stack and multi-turn request, turn k's prompt, turn k complete, and turn k+1's prompt
  (TA807).

Budgets: every render is bounded (time, fuel, output size); once an engine configuration exhausts a bound its
remaining renders of the template are skipped, and all renders of one template share ``total_seconds``: the CPU time
the render worker spent on them (not the wall time around the calls, which grows with the machine's load and, under
``scan --jobs``, with other threads' renders queued on the same worker: the report would depend on both), plus the
wall time of llama.cpp's renders in its own process.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

from tokaudit.template.prefill import CONTINUES_FINAL_MESSAGE, cut_at_tag, tag_final_message
from tokaudit.template.renders import SIZE_BOMB, Budget, EngineConfig, Render
from tokaudit.template.requests import SENTINEL, Request
from tokaudit.template.source import TemplateSource
from tokaudit.template.stacks.context import Refused, build_context, context_key, prune
from tokaudit.template.stacks.engines import JINJA2_TRANSFORMERS
from tokaudit.template.stacks.facts import TemplateFacts, unparsed_facts
from tokaudit.template.stacks.profile import StackProfile
from tokaudit.template.stacks.rewrites import rewrite

#: How the renders skipped after the template's time ran out are told apart.
TOTAL_SPENT = "all renders of one template may take"

#: The requests whose generation prompt is probed for the assistant header (TA805).
HEADER_PROBES = ("system-user", "multi-turn", "user-only")


@dataclass
class StackRender:
    """One stack's render of one request, and Jinja2's render of the same context (for a non-Jinja2 engine)."""

    stack: str
    render: Render
    reference: Render | None = None
    #: When the two differ: the engine knobs that change this render (each set as Jinja2 has it, one at a time).
    causes: tuple[str, ...] = ()


@dataclass
class RequestRun:
    """One request rendered by every stack that receives it."""

    request: Request
    template: TemplateSource
    stacks: dict[str, StackRender] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.request.name


@dataclass(frozen=True)
class PrefixTurn:
    """Turn k of a multi-turn request for one stack: its prompt, the turn complete, and turn k+1's prompt."""

    request: str
    stack: str
    #: Index of the assistant message that ends turn k.
    turn: int
    prompt: str | None
    full: str | None
    following: str | None


@dataclass
class TemplateRun:
    """One template rendered with every request for every stack."""

    template: TemplateSource
    requests: list[RequestRun]
    #: The stacks rendered, in report order.
    stacks: list[str]
    #: Stacks not rendered for this template, and why (an engine tokaudit lacks, a code path not emulated).
    skipped: dict[str, str] = field(default_factory=dict)
    #: stack -> (request name, header before an assistant turn, generation suffix, prompt with it)
    headers: dict[str, list[tuple[str, str | None, str | None, str]]] = field(default_factory=dict)
    prefixes: list[PrefixTurn] = field(default_factory=list)
    #: How many distinct renders there were (for the report).
    distinct_renders: int = 0
    #: The template offers tools (reads tools, xml_tools, python_tools, functions... or compares a role with "tool").
    offers_tools: bool = True


class Renderer:
    """The renders of one template: contexts built per stack, each distinct one rendered once, within budgets."""

    def __init__(self, template: TemplateSource, special: dict[str, str], budget: Budget) -> None:
        from tokaudit.template import isolated
        from tokaudit.worker import WorkerFailure, cpu_seconds

        self.template = template
        self.special = special
        self.budget = budget
        #: why the template is not compiled at all (over the length cap), or None
        self.refused = isolated.too_long(template.text)
        self._texts: dict[tuple[tuple[str, ...], bool], str] = {}
        self._done: dict[tuple[str, str, str], Render] = {}
        self._exhausted: dict[str, str] = {}
        #: engine kind -> how the worker process failed on this template with it (its other configurations are not
        #: tried)
        self._failed: dict[str, str] = {}
        self._spent = 0.0
        self.facts: TemplateFacts = unparsed_facts("")
        if self.refused is None:
            start = cpu_seconds()
            try:
                self.facts = isolated.facts(template.text, budget)
            except WorkerFailure as exc:  # Jinja2 analyses a template by generating its code, as when compiling it
                self.facts = unparsed_facts(template.text)
                self._failed["jinja2"] = f"{exc}"
            self._spent += cpu_seconds() - start

    @property
    def count(self) -> int:
        return len(self._done)

    def text_for(self, profile: StackProfile, reference: bool = False) -> str:
        """The text the stack compiles; ``reference``: the text Jinja2's reference render of it uses."""
        key = (profile.rewrites, reference)
        text = self._texts.get(key)
        if text is None:
            text = self._texts[key] = rewrite(self.template.text, profile.rewrites, semantic_only=reference)
        return text

    def context(
        self,
        profile: StackProfile,
        request: dict[str, Any],
        generation: bool | None = None,
        reply: bool = False,
        tail: bool = True,
    ) -> dict[str, Any] | Refused:
        ctx = build_context(
            profile.rules, request, self.facts, self.special, add_generation_prompt=generation, reply=reply, tail=tail
        )
        return ctx if isinstance(ctx, Refused) else prune(ctx, self.facts.variables)

    def render(self, config: EngineConfig, text: str, ctx: dict[str, Any] | Refused) -> Render:
        if isinstance(ctx, Refused):
            return Render(config.name, None, f"the stack refuses the request: {ctx.reason}", "refused")
        key = (config.key(), text, context_key(ctx))
        hit = self._done.get(key)
        if hit is None:
            hit = self._done[key] = self._render(config, text, ctx)
        return hit

    def _render(self, config: EngineConfig, text: str, ctx: dict[str, Any]) -> Render:
        from tokaudit.template import isolated  # only on a miss of the result cache
        from tokaudit.worker import WorkerFailure, cpu_seconds

        name = config.name
        if self.refused is not None:
            return Render(name, None, self.refused, "budget")
        if name in self._exhausted:
            return Render(name, None, f"skipped: {self._exhausted[name]} on an earlier render", "skipped")
        if config.kind in self._failed:
            # a worker that died or ran past a limit on this template: the engine's other configurations would too
            self._exhausted[name] = self._failed[config.kind]
            return Render(name, None, self._failed[config.kind], "budget")
        bomb = next((why for why in self._exhausted.values() if why.startswith(SIZE_BOMB)), None)
        if bomb is not None and config.kind == "minijinja":
            # MiniJinja cannot bound one operation's allocation: a repetition Jinja2 refused is not tried
            self._exhausted[name] = f"not rendered: Jinja2 found an unbounded repetition ({bomb})"
            return Render(name, None, self._exhausted[name], "budget")
        fuel = next((why for why in self._exhausted.values() if "out of fuel" in why), None)
        if fuel is not None and config.kind == "minijinja":
            # fuel counts the template's steps: another MiniJinja configuration runs out of it on this template too
            self._exhausted[name] = fuel
            return Render(name, None, fuel, "budget")
        if self._spent > self.budget.total_seconds:
            return Render(name, None, f"skipped: the {self.budget.total_seconds:g} s {TOTAL_SPENT} ran out", "skipped")
        start = cpu_seconds()
        try:
            out = isolated.render(config, text, ctx, self.budget)
        except WorkerFailure as exc:
            self._failed[config.kind] = f"{exc}"
            out = Render(name, None, self._failed[config.kind], "budget")
        self._spent += cpu_seconds() - start
        if out.kind == "budget":
            self._exhausted[name] = out.error or "budget"
        return out

    def stack_render(
        self,
        profile: StackProfile,
        request: dict[str, Any],
        generation: bool | None = None,
        with_reference: bool = False,
        reply: bool = False,
        tail: bool = True,
    ) -> StackRender:
        if profile.engine.kind == "llama.cpp":
            return StackRender(profile.id, self._server_render(request, generation, reply))
        ctx = self.context(profile, request, generation, reply, tail)
        text = self.text_for(profile)
        if request.get("continue_final_message") and not isinstance(ctx, Refused):
            # (a template that reads no messages renders without the tag, and then fails transformers' check)
            final = tag_final_message(ctx) or ""
            return StackRender(profile.id, cut_at_tag(self.render(profile.engine, text, ctx), final))
        out = StackRender(profile.id, self.render(profile.engine, text, ctx))
        if with_reference and profile.engine.kind != "jinja2" and not isinstance(ctx, Refused):
            out.reference = self.render(JINJA2_TRANSFORMERS, self.text_for(profile, reference=True), ctx)
            if out.reference.ok and out.render.ok and out.reference.text != out.render.text:
                out.causes = tuple(
                    knob
                    for knob, config in _as_jinja2(profile.engine)
                    if self.render(config, text, ctx).text != out.render.text
                )
        return out

    def _server_render(self, request: dict[str, Any], generation: bool | None, reply: bool) -> Render:
        """llama.cpp's server renders the request itself (its message parsing and normalisation, then its own
        engine): no context is built here, and there is no Jinja2 reference of it (TA802 does not apply)."""
        from tokaudit.template.llamacpp_engine import NAME, server_render

        key = (NAME, self.template.text, context_key({"request": request, "generation": generation, "reply": reply}))
        hit = self._done.get(key)
        if hit is None:
            if NAME in self._exhausted:
                return Render(NAME, None, f"skipped: {self._exhausted[NAME]} on an earlier render", "skipped")
            if self._spent > self.budget.total_seconds:
                return Render(
                    NAME, None, f"skipped: the {self.budget.total_seconds:g} s {TOTAL_SPENT} ran out", "skipped"
                )
            start = time.perf_counter()
            hit = self._done[key] = server_render(
                self.template.text, request, self.special, self.budget, generation=generation, reply=reply
            )
            self._spent += time.perf_counter() - start
            if hit.kind == "budget":
                self._exhausted[NAME] = hit.error or "budget"
        return hit


#: The knobs of a MiniJinja configuration that can make it render other text than Jinja2, and Jinja2's setting.
KNOBS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("tojson", {"tojson": "python"}),
    ("sorted_maps", {"sorted_maps": False}),
    ("trim_blocks", {"trim_blocks": True, "lstrip_blocks": True}),
    ("length_of_none_is_zero", {"length_of_none_is_zero": False}),
    ("get_default", {"get_default": True}),
    ("strftime_now", {"strftime_now": True}),
)


def _as_jinja2(config: EngineConfig) -> list[tuple[str, EngineConfig]]:
    """For each knob where ``config`` differs from Jinja2, the configuration with that knob set as Jinja2 has it."""
    out = []
    for knob, values in KNOBS:
        if any(getattr(config, k) != v for k, v in values.items()):
            out.append((knob, replace(config, **values, name=f"{config.name}+{knob}")))
    return out


def receives(profile: StackProfile, request: Request) -> bool:
    """Whether the stack can be sent this request (a stack that always adds the generation prompt cannot be
    asked to leave it out, or to continue the final message)."""
    return (
        profile.id in CONTINUES_FINAL_MESSAGE
        if request.continue_final_message
        else request.add_generation_prompt or profile.rules.generation_prompt == "request"
    )


def render_template(
    template: TemplateSource,
    requests: list[Request],
    profiles: list[StackProfile],
    special: dict[str, str],
    budget: Budget = Budget(),
    *,
    probes: bool = True,
) -> TemplateRun:
    """Every request for every profile that can render this template, plus the probes of TA805 and TA807."""
    renderer = Renderer(template, special, budget)
    run = TemplateRun(template, [], [])
    active = []
    for p in profiles:
        why = p.skipped_for(template.text)
        if why is None and p.engine.kind == "llama.cpp":
            from tokaudit.template.llamacpp_engine import engine_unavailable

            why = engine_unavailable(budget, _notify)
        if why is None:
            active.append(p)
            run.stacks.append(p.id)
        else:
            run.skipped[p.id] = why
    for request in requests:
        rrun = RequestRun(request, template)
        data = request.to_json()
        for p in active:
            if receives(p, request):
                rrun.stacks[p.id] = renderer.stack_render(p, data, with_reference=True)
        run.requests.append(rrun)
    # llama.cpp's server is not probed for TA805/TA807: they render finished turns without the generation prompt,
    # which llama-server never does (its specialised handlers may add the prompt regardless of the flag)
    probed = [p for p in active if p.engine.kind != "llama.cpp"]
    if probes:
        for p in probed:
            run.headers[p.id] = _headers(renderer, p, [r for r in requests if r.origin == "built-in"])
        for request in requests:
            for p in probed:
                if receives(p, request):
                    run.prefixes.extend(_prefix_turns(renderer, p, request))
    run.distinct_renders = renderer.count
    run.offers_tools = offers_tools(template.text, renderer.facts)
    return run


def _notify(message: str) -> None:
    import sys

    print(f"tokaudit: {message}", file=sys.stderr)


def offers_tools(template: str, facts: TemplateFacts) -> bool:
    """The template offers tools: it reads a tools variable (tools, xml_tools, python_tools, functions...) or
    renders tool messages in a way of their own (compares a role with "tool" or "ipython")."""
    import re

    if facts.variables is None or any("tool" in v or v == "functions" for v in facts.variables):
        return True
    return re.search(r"""['"](tool|ipython)['"]""", template) is not None


def _headers(
    renderer: Renderer, profile: StackProfile, requests: list[Request]
) -> list[tuple[str, str | None, str | None, str]]:
    """For requests that end on a user turn with a generation prompt: the header the template writes before an
    assistant turn (from rendering the request plus an assistant reply) and the suffix the generation prompt
    adds. (name, header or None, suffix or None, the prompt with the generation prompt)."""
    out = []
    for request in requests:
        if request.name not in HEADER_PROBES or not request.add_generation_prompt:
            continue
        data = request.to_json()
        with_gen = renderer.stack_render(profile, data).render
        without = renderer.stack_render(profile, data, generation=False).render
        replied_request = replace(request, messages=[*request.messages, {"role": "assistant", "content": SENTINEL}])
        replied = renderer.stack_render(profile, replied_request.to_json(), generation=False, reply=True).render
        if not (with_gen.ok and without.ok and replied.ok):
            continue
        assert with_gen.text is not None and without.text is not None and replied.text is not None
        header = None
        if replied.text.startswith(without.text) and SENTINEL in replied.text:
            header = replied.text[len(without.text) : replied.text.index(SENTINEL)]
        suffix = with_gen.text[len(without.text) :] if with_gen.text.startswith(without.text) else None
        out.append((request.name, header, suffix, with_gen.text))
    return out


def _prefix_turns(renderer: Renderer, profile: StackProfile, request: Request) -> list[PrefixTurn]:
    """Each assistant turn of the request that a later message follows: turn k's prompt (the messages before
    it, generation prompt on), the turn complete (generation prompt off) and the next prompt (one message
    more, generation prompt on); without what the stack appends to a request's last message whatever the
    template (TGI's tool prompt: a property of the stack its profile states)."""
    msgs = request.messages
    out = []
    for a, m in enumerate(msgs):
        if m.get("role") != "assistant" or a == 0 or a + 1 >= len(msgs) or msgs[a - 1].get("role") == "assistant":
            continue
        if msgs[a + 1].get("role") == "assistant":
            continue

        def text(messages: list[dict[str, Any]], generation: bool, reply: bool = False) -> str | None:
            data = replace(request, messages=messages, add_generation_prompt=generation).to_json()
            return renderer.stack_render(profile, data, reply=reply, tail=False).render.text

        out.append(
            PrefixTurn(
                request.name,
                profile.id,
                a,
                text(msgs[:a], True),
                text(msgs[: a + 1], False, reply=True),
                text(msgs[: a + 2], True),
            )
        )
    return out


# --------------------------------------------------------------------------- the result cache's form
