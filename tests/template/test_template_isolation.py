"""Issue 34, part B: chat templates are compiled and rendered in a bounded worker process, with plain copies of
the context; a worker that dies or runs past a limit is an error of that template's renders (TA801), and a
template over the length cap is not compiled."""

from __future__ import annotations

import pytest

from tokaudit.template import isolated
from tokaudit.template.engines import render as render_here
from tokaudit.template.rendering import render_template
from tokaudit.template.renders import Budget, Render
from tokaudit.template.requests import builtin_requests
from tokaudit.template.source import TemplateSource
from tokaudit.template.stacks import profile
from tokaudit.template.stacks.engines import JINJA2_TRANSFORMERS
from tokaudit.template.stacks.facts import template_facts
from tokaudit.worker import WorkerFailure, shared_worker
from tokaudit.records import Provenance

SMG = profile("smg").engine
TGI = profile("tgi").engine
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
MESSAGES = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]


def source(text: str) -> TemplateSource:
    return TemplateSource("default", text, Provenance("tokenizer_config.json", key="chat_template"))


def test_minijinja_cannot_call_python_methods_that_change_the_context() -> None:
    """The binding calls a Python object's methods: ``messages.extend(messages)`` 40 times cost 4.1 GB."""
    doubled = "{% set _ = messages.extend(messages) %}{{ messages|length }}"
    assert render_here(SMG, doubled, {"messages": MESSAGES}) == Render(
        "minijinja-2.21", None, "unknown method: sequence has no method named extend", "error"
    )
    updated = "{% set _ = m.update({'role': 'system'}) %}{{ m.role }}"
    assert render_here(SMG, updated, {"m": MESSAGES[0]}).error == "unknown method: map has no method named update"
    # pycompat's reading methods, sorting (TGI's maps) and the filters see the same values as before
    reading = (
        "{{ m.get('role') }} {{ m.items()|list }} {{ m.keys()|list }} {{ messages|length }} {{ m|tojson }} "
        "{{ [1, 1].count(1) }}"
    )
    context = {"m": {"role": "user", "content": "hi"}, "messages": MESSAGES}
    assert render_here(SMG, reading, context).text == (
        "user [('role', 'user'), ('content', 'hi')] ['role', 'content'] 2 {\"role\": \"user\", \"content\": \"hi\"} 2"
    )
    assert render_here(TGI, "{{ m.keys()|list }}", context).text == "['content', 'role']"


def test_a_render_in_the_worker_is_the_render_in_this_process() -> None:
    context = {"messages": MESSAGES, "add_generation_prompt": True}
    for config in (JINJA2_TRANSFORMERS, SMG, TGI):
        here = render_here(config, CHATML, context)
        assert here.ok and isolated.render(config, CHATML, context, Budget()) == here
    assert isolated.facts(CHATML, Budget()) == template_facts(CHATML)


def test_one_worker_serves_every_render_of_a_run() -> None:
    run = render_template(
        source(CHATML), builtin_requests(CHATML, "default"), [profile("vllm"), profile("smg")], {}, Budget()
    )
    worker = shared_worker("templates", isolated.LIMITS)
    starts = worker.starts
    again = render_template(
        source(CHATML), builtin_requests(CHATML, "default"), [profile("vllm"), profile("smg")], {}, Budget()
    )
    assert worker.starts == starts and again.distinct_renders == run.distinct_renders > 10


def test_out_of_memory_in_jinja2_names_the_limit() -> None:
    out = isolated.render(JINJA2_TRANSFORMERS, "{{ 'a'|center(3500000000) }}", {}, Budget())
    assert out == Render("jinja2", None, "out of memory (the render worker's 1024 MiB address-space limit)", "budget")


def test_minijinja_doubling_a_list_is_a_worker_failure() -> None:
    """MiniJinja's fuel counts instructions, not bytes: 40 doublings of a list aborted tokaudit (exit 134) after
    ~230 s. In the worker it ends at a limit (memory, or CPU time first on a busy machine), and the next render
    starts a fresh worker."""
    text = "{% set x = ['" + "x" * 64 + "'] %}" + "{% set x = x + x %}" * 40 + "{{ x|length }}"
    worker = shared_worker("templates", isolated.LIMITS)
    with pytest.raises(WorkerFailure) as caught:
        isolated.render(SMG, text, {}, Budget(seconds=0.5))
    assert caught.value.limit in ("memory", "cpu time", "wall time")
    starts = worker.starts
    assert isolated.render(SMG, "{{ 1 + 1 }}", {}, Budget()).text == "2"
    assert worker.starts == starts + 1


def test_constant_folding_while_compiling_is_bounded_and_is_ta801() -> None:
    """Jinja2 folds ``[1,2]|slice(150000000)|sum(start=[])`` while compiling (and listing variables): 33 s in scan."""
    text = "{{ [1,2]|slice(150000000)|sum(start=[])|length }}"
    run = render_template(
        source(text),
        builtin_requests(text, "default"),
        [profile("vllm"), profile("smg")],
        {},
        Budget(seconds=0.5, total_seconds=30.0),
    )
    [failed] = {r.stacks["vllm"].render for r in run.requests if r.stacks["vllm"].render.kind != "skipped"}
    assert failed.kind == "budget" and failed.error is not None
    assert failed.error.startswith(
        (
            "the worker process ran out of its wall time limit (3.5 s)",
            "the worker process ran out of its cpu time limit (1 s)",
        )
    )


def test_a_template_over_the_length_cap_is_not_compiled() -> None:
    text = "{{ messages }}" * (isolated.MAX_TEMPLATE_CHARS // 14 + 1)
    run = render_template(
        source(text), builtin_requests(text, "default"), [profile("vllm"), profile("smg")], {}, Budget()
    )
    errors = {sr.render.error for r in run.requests for sr in r.stacks.values()}
    assert errors == {f"the template is {len(text):,} characters long, over the 262,144 tokaudit compiles"}
