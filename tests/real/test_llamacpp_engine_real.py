"""llama.cpp's own template engine (common/jinja + common/chat.cpp from the pinned llama-cpp-python sdist), built
once into the user cache (~2-4 min of two cores the first time) and run in a child process.

Fidelity: the 35 Jinja cases of llama.cpp's tests/test-chat-template.cpp (read from the same sdist: the template,
the conversation, the expected prompt) come out byte for byte. The 70 templates of models/templates render a plain
and a tool-call request; the one failure is Gemma 2's own raise_exception (it allows no tool turns).
"""

from __future__ import annotations

import re
import tarfile
import threading
from pathlib import Path

import pytest

from tokaudit.template.llamacpp_build import SDIST_SHA256, find_sdist
from tokaudit.template.renders import Budget

pytestmark = pytest.mark.real

_TREE = "llama_cpp_python-0.3.36/vendor/llama.cpp/"
CONVERSATION = [
    ("system", "You are a helpful assistant"),
    ("user", "Hello"),
    ("assistant", "Hi there"),
    ("user", "Who are you"),
    ("assistant", "   I am an assistant   "),
    ("user", "Another question"),
]
PLAIN = {
    "messages": [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi there"},
        {"role": "user", "content": "What is the weather?"},
    ]
}
TOOLS = {
    "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call00001",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call00001", "content": '{"temp": 20}'},
    ],
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Get weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            },
        }
    ],
}


@pytest.fixture(scope="module")
def sdist(real_dirs: dict) -> Path:
    path = find_sdist()
    assert path is not None, "scripts/fetch_real_tokenizers.py fetched the llama-cpp-python sdist"
    return path


@pytest.fixture(scope="module")
def engine(sdist: Path):
    import shutil

    from tokaudit.template.llamacpp_engine import LlamaCppEngine, load_engine

    if not (shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")):
        pytest.skip("no C++ compiler here to build llama.cpp's template engine")
    built = load_engine()
    with LlamaCppEngine(built.executable, Budget(seconds=2.0, max_chars=10_000)) as e:
        yield e


def _sdist_text(sdist: Path, member: str) -> str:
    with tarfile.open(sdist, "r:gz") as tar:
        f = tar.extractfile(_TREE + member)
        assert f is not None
        return f.read().decode("utf-8")


def _sdist_templates(sdist: Path) -> dict[str, str]:
    with tarfile.open(sdist, "r:gz") as tar:
        return {
            Path(m.name).name: tar.extractfile(m).read().decode("utf-8")  # type: ignore[union-attr]
            for m in tar.getmembers()
            if m.name.startswith(_TREE + "models/templates/") and m.name.endswith(".jinja")
        }


# ---- llama.cpp's own expectations, read from tests/test-chat-template.cpp -----------------------------------------

_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "'": "'", "r": "\r"}


def _literal(src: str, i: int) -> tuple[str, int]:
    """The C++ string literal starting at src[i] (a '"'), and the index after it."""
    out, i = [], i + 1
    while src[i] != '"':
        if src[i] == "\\":
            out.append(_ESCAPES[src[i + 1]])
            i += 2
        else:
            out.append(src[i])
            i += 1
    return "".join(out), i + 1


def _block_end(src: str, i: int) -> int:
    depth = 0
    while True:
        if src[i] == '"':
            i = _literal(src, i)[1]
            continue
        depth += {"{": 1, "}": -1}.get(src[i], 0)
        if depth == 0:
            return i
        i += 1


def _values(body: str) -> list[object]:
    """The top-level values of a C++ aggregate: strings (adjacent literals joined), booleans and nested blocks."""
    values: list[object] = []
    pending: str | None = None
    i = 0
    while i < len(body):
        if body.startswith("/*", i):
            i = body.index("*/", i) + 2
        elif body[i] == '"':
            s, i = _literal(body, i)
            pending = (pending or "") + s
        elif body[i] in ",{" or body.startswith(("true", "false"), i):
            if pending is not None:
                values.append(pending)
                pending = None
            if body[i] == "{":
                end = _block_end(body, i)
                values.append(("block", body[i + 1 : end]))
                i = end + 1
            elif body[i] == ",":
                i += 1
            else:
                values.append(body.startswith("true", i))
                i += 4 if body.startswith("true", i) else 5
        else:
            i += 1
    if pending is not None:
        values.append(pending)
    return values


def chat_template_cases(source: str) -> list[dict]:
    start = source.index("{", source.index("std::vector<TestCase> test_cases"))
    fields = (
        "name",
        "template_str",
        "expected_output",
        "expected_output_jinja",
        "bos_token",
        "eos_token",
        "supported_with_jinja",
        "extra_conversation",
    )
    cases = []
    for block in _values(source[start + 1 : _block_end(source, start)]):
        case: dict = {"bos_token": "", "eos_token": "", "supported_with_jinja": True, "extra_conversation": []}
        for name, value in zip(fields, _values(re.sub(r"\bU8C\(", "(", block[1]))):  # type: ignore[index]
            if name == "extra_conversation":
                value = [tuple(_values(turn[1])) for turn in _values(value[1])]  # type: ignore[index]
            case[name] = value
        cases.append(case)
    return cases


def test_the_sdist_is_the_pinned_one(sdist: Path) -> None:
    import hashlib

    assert hashlib.sha256(sdist.read_bytes()).hexdigest() == SDIST_SHA256


def test_llamacpp_own_jinja_expectations_come_out_byte_for_byte(engine, sdist: Path) -> None:
    cases = [
        c for c in chat_template_cases(_sdist_text(sdist, "tests/test-chat-template.cpp")) if c["supported_with_jinja"]
    ]
    assert len(cases) == 35
    wrong = []
    for case in cases:
        messages = [{"role": r, "content": t} for r, t in CONVERSATION + case["extra_conversation"]]
        applied = engine.apply(
            case["template_str"],
            {"messages": messages},
            bos_token=case["bos_token"],
            eos_token=case["eos_token"],
            server={"reasoning_format": "none"},
        )
        if applied.render.text != (case["expected_output_jinja"] or case["expected_output"]):
            wrong.append((case["name"], applied.render))
    assert wrong == []


def test_the_70_templates_render_a_plain_and_a_tool_request(engine, sdist: Path) -> None:
    templates = _sdist_templates(sdist)
    assert len(templates) == 70
    failed = {}
    for name, text in sorted(templates.items()):
        for shape, request in (("plain", PLAIN), ("tools", TOOLS)):
            render = engine.apply(text, request, bos_token="<s>", eos_token="</s>").render
            if not render.ok:
                failed[(name, shape)] = (render.kind, render.error)
    assert failed == {
        ("google-gemma-2-2b-it.jinja", "tools"): (
            "raise",
            "Conversation roles must alternate user/assistant/user/assistant/... "
            "(CallExpression at line 1, column 226)",
        )
    }


def test_a_plain_context_renders_with_llamacpp_semantics(engine) -> None:
    # a list prints its items, an object nothing: not Python's repr
    assert engine.render("ok {{ x }}|{{ y }}", {"x": [1, "a"], "y": {"k": None}}).text == "ok 1a|"
    assert engine.render("{{ 'a' ~ 1 }}", {}).text == "a1"


def test_the_clock_is_the_callers(engine) -> None:
    template = "{{ strftime_now('%Y-%m-%d %H:%M') }}"
    assert engine.render(template, {}).text == "2026-01-15 12:00"  # engine_base.FIXED_NOW
    assert engine.render(template, {}, now=1768478400 + 30 * 86400).text == "2026-02-14 12:00"
    applied = engine.apply("{{ datetime }}|{{ date_string }}", {"messages": [{"role": "user", "content": "x"}]})
    assert applied.render.text == "Jan 15 2026|15 Jan 2026"


def test_llama_server_normalises_the_request(engine) -> None:
    template = (
        "{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    request = {
        "messages": [
            {"role": "developer", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        ]
    }
    applied = engine.apply(template, request, bos_token="<s>")
    # developer -> system; typed parts joined with a newline (the template reads content as a string)
    assert applied.render.text == "<s><|system|>be brief<|user|>a\nb<|assistant|>"
    assert applied.generation_prompt == "<|assistant|>"
    # the GGUF adds BOS when tokenizing: llama-server drops the template's
    assert engine.apply(template, request, bos_token="<s>", server={"add_bos": True}).render.text.startswith(
        "<|system|>"
    )


def test_the_requests_chat_template_kwargs_reach_the_template(engine) -> None:
    """A request's chat_template_kwargs (here enable_thinking) reach the template (the driver once iterated a
    temporary's items: every such request crashed the engine)."""
    template = "{{ messages[0].content }}|{{ enable_thinking }}|{{ extra }}"
    request = {
        "messages": [{"role": "user", "content": "x"}],
        "chat_template_kwargs": {"enable_thinking": False, "extra": 7},
    }
    applied = engine.apply(template, request)
    assert (applied.render.kind, applied.render.text) == (None, "x|False|7")  # printed as Python does


def test_errors_have_their_kind(engine) -> None:
    syntax = engine.render("{% if %}", {})
    assert (syntax.kind, syntax.error) == ("syntax", "Unexpected token: %} of type 9")
    raised = engine.render("{{ raise_exception('no tools here') }}", {})
    assert (raised.kind, raised.error) == ("raise", "no tools here (CallExpression at line 1, column 19)")
    refused = engine.apply("{{ messages }}", {"messages": [{"content": "no role"}]})
    assert (refused.render.kind, refused.render.error) == (
        "request",
        'Failed to parse messages: Missing \'role\' in message: {"content":"no role"}',
    )


def test_a_hostile_template_is_bounded_and_the_engine_recovers(engine) -> None:
    from tokaudit.template.llamacpp_engine import LlamaCppEngine

    loop = engine.render("{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}", {})
    assert (loop.kind, loop.error) == ("budget", "the render ran past 2 s")
    # its own engine with a long deadline: on a loaded machine reaching the 1 GiB limit takes a few seconds
    with LlamaCppEngine(engine.executable, Budget(seconds=60.0)) as roomy:
        memory = roomy.render("{% for i in range(1000000000) %}{% endfor %}", {})
    assert (memory.kind, memory.error) == ("budget", "out of memory (CallExpression at line 1, column 18)")
    output = engine.render("{{ 'ab' * 6000 }}", {})
    assert (output.kind, output.error) == ("budget", "the output exceeds 10000 characters")
    recursion = engine.render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", {})
    assert (recursion.kind, recursion.error) == ("error", "llama.cpp's template engine crashed (SIGSEGV)")
    assert engine.render("still {{ 'here' }}", {}).text == "still here"


def test_threads_share_one_engine(engine) -> None:
    out: dict[int, str | None] = {}

    def work(i: int) -> None:
        out[i] = engine.render("{{ n * 2 }}", {"n": i}).text

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == {i: str(i * 2) for i in range(8)}
