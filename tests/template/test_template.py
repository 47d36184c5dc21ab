"""``tokaudit template`` and the TA8xx rules: the stack profiles (their contexts, engines and rewrites), real
engines (Jinja2, MiniJinja), real tokenizers, the fixtures of fixtures/make_template_fixtures.py, run as a whole
process or through the CLI runner."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tokenizers import Tokenizer

from tests.conftest import FIXTURES, ROOT, run_cli
from tokaudit.template.engines import prepare
from tokaudit.template.engine_minijinja import rename_get_with_default
from tokaudit.template.engines import render as render_once
from tokaudit.template.renders import Budget, EngineConfig, Render
from tokaudit.template.requests import WEATHER_TOOL, builtin_requests
from tokaudit.template.stacks import STACK_NAMES, parse_stacks, profile
from tokaudit.template.stacks.context import TGI_NO_TOOL, TGI_TOOL_PROMPT, build_context
from tokaudit.template.stacks.engines import JINJA2_TRANSFORMERS
from tokaudit.template.stacks.facts import template_facts
from tokaudit.template.stacks.rewrites import rewrite

T = FIXTURES / "templates"
STACKS = [
    "transformers",
    "vllm",
    "sglang",
    "smg",
    "tgi",
    "mistral.rs",
    "llama.cpp",
    "dynamo",
]  # the stacks tokaudit renders
ARGS = (
    '{"city": "São Paulo <Centro>", "units": "celsius", "filter": {"quote": "it\'s \\"fine\\" & dry", "days": [1, 2]}}'
)
ARGS_DICT = {
    "city": "São Paulo <Centro>",
    "units": "celsius",
    "filter": {"quote": 'it\'s "fine" & dry', "days": [1, 2]},
}


#: The fixture templates write content only when it is a string (``is string else ''``): the content-parts request
#: loses its text for the stacks that pass parts as a list (TA811, pinned in test_content_parts_dropped); tests of
#: other rules leave it out.
NO_PARTS = ("--ignore", "TA811")


def template_json(path: Path, *args: str) -> tuple[int, dict[str, Any]]:
    out = run_cli("template", str(path), "--format", "json", *args)
    return out.exit_code, json.loads(out.stdout)


def codes(doc: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    return [(f["code"], f["severity"], f["details"]["stacks"]) for f in doc["findings"]]


def render(config: EngineConfig, template: str, **context: Any) -> Render:
    return render_once(config, template, context)


MJ = EngineConfig(kind="minijinja", name="minijinja-test", pins="MiniJinja (test)")
TGI, SMG, MISTRALRS, DYNAMO = (profile(s).engine for s in ("tgi", "smg", "mistral.rs", "dynamo"))


# ---- the engines, configured as the stacks configure them ------------------------------------


def test_tojson_flavours() -> None:
    x = {"q": "<b> it's é", "n": [1, 2]}
    assert render(JINJA2_TRANSFORMERS, "{{ x|tojson }}", x=x).text == '{"q": "<b> it\'s é", "n": [1, 2]}'
    assert render(SMG, "{{ x|tojson }}", x=x).text == '{"q": "<b> it\'s é", "n": [1, 2]}'  # smg: json.dumps-compatible
    assert render(MISTRALRS, "{{ x|tojson }}", x=x).text == '{"q": "<b> it\'s é", "n": [1, 2]}'
    # MiniJinja 2.x's own (TGI): compact and HTML-escaping; Dynamo's filter does the same
    assert (
        render(TGI, "{{ x|tojson }}", x=x).text == '{"n":[1,2],"q":"\\u003cb\\u003e it\\u0027s é"}'
    )  # TGI's maps in key order
    assert render(DYNAMO, "{{ x|tojson }}", x=x).text == '{"q":"\\u003cb\\u003e it\\u0027s é","n":[1,2]}'
    assert render(DYNAMO, "{{ x|tojson(indent=2) }}", x={"a": "<"}).text == '{\n  "a": "\\u003c"\n}'
    # the keyword arguments transformers' filter takes: MiniJinja 2.x's refuses them, Dynamo's and mistral.rs' ignore
    # them
    refused = render(TGI, "{{ x|tojson(ensure_ascii=False) }}", x=x)
    assert refused.kind == "error" and refused.error.startswith(
        "too many arguments: unknown keyword argument 'ensure_ascii'"
    )
    assert render(MISTRALRS, "{{ x|tojson(ensure_ascii=True) }}", x={"a": "é"}).text == '{"a": "é"}'
    assert render(SMG, "{{ x|tojson(ensure_ascii=True) }}", x={"a": "é"}).text == '{"a": "\\u00e9"}'


def test_pinned_minijinja_differences() -> None:
    loop = "{% for m in messages %}{% if loop.index > 1 %}{% break %}{% endif %}{{ m }}{% endfor %}"
    assert render(SMG, loop, messages=["a", "b"]).text == "a"
    failed = render(MISTRALRS, loop, messages=["a", "b"])  # built without loop_controls
    assert failed.kind == "syntax"
    assert failed.error == (
        "syntax error: unknown statement break (in chat:1); MiniJinja 2.14.0 without loop_controls (mistral.rs) "
        "is built without the loop_controls feature"
    )
    get = "{{ m.get('content', 'none') }}|{{ m.get('role') }}"
    assert render(SMG, get, m={"role": "user"}).text == "none|user"  # pycompat >= 2.15 takes a default
    old = render(TGI, get, m={"role": "user"})
    assert old.kind == "error" and old.error.startswith("too many arguments: dict.get(key, default) takes one argument")
    assert render(TGI, "{{ m.get('role') }}", m={"role": "user"}).text == "user"
    assert render(TGI, "{% for k in d %}{{ k }}{% endfor %}", d={"b": 1, "a": 2}).text == "ab"  # no preserve_order
    assert render(SMG, "{% for k in d %}{{ k }}{% endfor %}", d={"b": 1, "a": 2}).text == "ba"
    assert render(TGI, "{% if x %}\n  x\n{% endif %}", x=True).text == "\n  x\n"  # no trim_blocks / lstrip_blocks
    assert render(SMG, "{% if x %}\n  x\n{% endif %}", x=True).text == "  x\n"
    assert render(DYNAMO, "{{ tools|length }}", tools=None).text == "0"
    assert render(SMG, "{{ tools|length }}", tools=None).kind == "error"
    assert render(SMG, "{{ strftime_now('%Y') }}").error.startswith("unknown function: strftime_now is unknown")
    assert render(TGI, "{{ strftime_now('%d %b %Y') }}").text == "15 Jan 2026"  # a fixed instant


def test_rename_get_with_default() -> None:
    assert rename_get_with_default("{{ m.get('a', 'b,c') }} {{ m.get('a') }} {{ m.get(f(x, y)) }}") == (
        "{{ m.get_with_default_needs_minijinja_2_15('a', 'b,c') }} {{ m.get('a') }} {{ m.get(f(x, y)) }}"
    )
    text = "plain .get('a', 'b') text {% set x = m.get(\"k\", [1, 2]) %}{# .get(1, 2) #}"
    assert rename_get_with_default(text) == (
        "plain .get('a', 'b') text {% set x = m.get_with_default_needs_minijinja_2_15(\"k\", [1, 2]) %}{# .get(1, 2) #}"
    )


@pytest.mark.parametrize("config", [JINJA2_TRANSFORMERS, MJ], ids=["jinja2", "minijinja"])
def test_engine_helpers(config: EngineConfig) -> None:
    # a fixed clock, raise_exception, python string methods, no file access
    assert render(config, "{{ strftime_now('%d %b %Y') }}").text == "15 Jan 2026"
    raised = render(config, "{{ raise_exception('Conversation roles must alternate') }}")
    assert (raised.kind, raised.error) == ("raise", "raise_exception: Conversation roles must alternate")
    assert (
        render(
            config, "{{ ' a '.strip() + 'b'.upper() }}{% for k, v in d.items() %}{{ k }}{% endfor %}", d={"z": 1}
        ).text
        == "aBz"
    )
    included = render(config, "{% include '/etc/passwd' %}")
    assert included.text is None and included.kind == "error"


@pytest.mark.parametrize("config", [JINJA2_TRANSFORMERS, MJ], ids=["jinja2", "minijinja"])
def test_hostile_templates_end_within_the_budget(config: EngineConfig) -> None:
    budget = Budget(seconds=0.5, fuel=5_000_000, max_chars=10_000)
    start = time.perf_counter()
    loop = prepare(
        config, "{% for i in range(100000) %}{% for j in range(100000) %}{{ j }}{% endfor %}{% endfor %}", budget
    ).render({})
    assert time.perf_counter() - start < 3
    assert loop.kind == "budget"
    assert prepare(config, "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", budget).render({}).kind == "budget"
    big = prepare(config, "{% for i in range(20000) %}xxxxxxxxxx{% endfor %}", budget).render({})
    assert big.kind == "budget" and big.error == "output exceeds 10000 characters"


def test_generation_tag_per_stack() -> None:
    template = "{% generation %}hi{% endgeneration %}|{%- generation -%}yo{%- endgeneration -%}"
    assert render(JINJA2_TRANSFORMERS, template).text == "hi|yo"  # transformers' AssistantTracker renders the body
    assert render(SMG, template).kind == "syntax"  # smg does nothing about it
    assert rewrite(template, ("tgi",)) == "hi|{%- generation -%}yo{%- endgeneration -%}"  # the exact spelling only
    assert rewrite(template, ("dynamo",)) == "hi|{%- generation -%}yo{%- endgeneration -%}"
    assert rewrite(template, ("mistral.rs",)) == "hi|yo"  # a regex
    assert rewrite(
        "{% for m in messages[::-1] %}{% endfor %}{% for i in range(n, -1, -1) %}{% endfor %}", ("mistral.rs",)
    ) == ("{% for m in messages|reverse %}{% endfor %}{% for i in range(n)|reverse %}{% endfor %}")
    # the steps Jinja2's reference render keeps: only what changes what Jinja2 renders
    assert (
        rewrite("{{ messages[0]['content'][0]['text'] }}[::-1]", ("tgi",), semantic_only=True)
        == "{{ messages[0]['content'] }}[::-1]"
    )


# ---- the profiles: what each stack makes of a request ----------------------------------------


def tool_call_request() -> dict[str, Any]:
    return next(r for r in builtin_requests("", "default") if r.name == "tool-call").to_json()


def contexts(template: str = "{{ messages }}{{ tools }}") -> dict[str, Any]:
    facts = template_facts(template)
    special = {"bos_token": "<s>", "eos_token": "</s>"}
    return {s: build_context(profile(s).rules, tool_call_request(), facts, special) for s in STACK_NAMES}


def test_each_stack_turns_the_tool_call_request_into_its_own_variables() -> None:
    ctx = contexts()
    call = {"id": "a1B2c3D4e", "type": "function", "function": {"name": "get_weather", "arguments": ARGS_DICT}}
    system = {"role": "system", "content": "You are a helpful assistant."}
    ask = {"role": "user", "content": "Weather in São Paulo?"}
    result = {
        "role": "tool",
        "content": '{"temperature": 21, "sky": "<clear>"}',
        "tool_call_id": "a1B2c3D4e",
        "name": "get_weather",
    }
    # transformers 5: None-valued keys dropped (content absent), arguments as the dicts its documentation asks for
    assert ctx["transformers"]["messages"][2] == {"role": "assistant", "tool_calls": [call]}
    assert ctx["transformers"]["messages"] == [system, ask, {"role": "assistant", "tool_calls": [call]}, result]
    assert ctx["transformers"]["tools"] == [WEATHER_TOOL] and ctx["transformers"]["documents"] is None
    # vLLM: content null -> "" for a string-format template, arguments parsed
    assert ctx["vllm"]["messages"][2] == {"role": "assistant", "content": "", "tool_calls": [call]}
    # SGLang: the same, a tool message keeps its name
    assert ctx["sglang"]["messages"][2:] == [{"role": "assistant", "content": "", "tool_calls": [call]}, result]
    # smg: content null kept with dict arguments; a tool message's name dropped; no documents
    assert ctx["smg"]["messages"][2:] == [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "content": result["content"], "tool_call_id": "a1B2c3D4e"},
    ]
    assert "documents" not in ctx["smg"]
    # TGI: no tool_calls (serialized into the content: the JSON-string arguments encoded twice), no tool_call_id,
    # no name; tools renamed and a no_tool function added; the tool prompt appended to the last message
    assert ctx["tgi"]["messages"][2] == {
        "role": "assistant",
        "content": json.dumps(
            [
                {
                    "id": "a1B2c3D4e",
                    "type": "function",
                    "function": {
                        "description": None,
                        "name": "get_weather",
                        "arguments": json.dumps(ARGS, ensure_ascii=False),
                    },
                }
            ],
            ensure_ascii=False,
            separators=(",", ":"),
        ),
    }
    assert ctx["tgi"]["messages"][3] == {"role": "tool", "content": result["content"] + "\n---\n" + TGI_TOOL_PROMPT}
    assert ctx["tgi"]["tools"][1] == TGI_NO_TOOL and ctx["tgi"]["tools"][0]["function"]["arguments"] == json.dumps(
        WEATHER_TOOL["function"]["parameters"], ensure_ascii=False, separators=(",", ":")
    )
    # mistral.rs: content "", date_string and enable_thinking always set, tools rebuilt
    assert ctx["mistral.rs"]["messages"][2] == {"role": "assistant", "content": "", "tool_calls": [call]}
    assert (ctx["mistral.rs"]["date_string"], ctx["mistral.rs"]["enable_thinking"]) == ("15, January, 2026", True)
    assert list(ctx["mistral.rs"]["tools"][0]["function"]) == ["name", "description", "parameters"]
    # Dynamo: content absent, a tool message without name
    assert ctx["dynamo"]["messages"][2:] == [
        {"role": "assistant", "tool_calls": [call]},
        {"role": "tool", "content": result["content"], "tool_call_id": "a1B2c3D4e"},
    ]


def test_tools_absent_null_or_undefined() -> None:
    facts = template_facts("{{ tools }}")
    request = builtin_requests("", "default")[0].to_json()
    tools = {s: build_context(profile(s).rules, request, facts, {}).get("tools", "absent") for s in STACK_NAMES}
    assert tools == {
        "transformers": None,
        "vllm": None,
        "sglang": None,
        "smg": "absent",
        "tgi": None,
        "mistral.rs": "absent",
        "llama.cpp": "absent",
        "dynamo": None,
    }


def test_content_parts_and_the_detected_format() -> None:
    string_fmt = "{% for m in messages %}{{ m.content }}{% endfor %}"
    openai_fmt = "{% for m in messages %}{% for p in m.content %}{{ p.text }}{% endfor %}{% endfor %}"
    assert (template_facts(string_fmt).vllm_format, template_facts(openai_fmt).vllm_format) == ("string", "openai")
    parts = next(r for r in builtin_requests("", "default") if r.name == "content-parts").to_json()

    def content(stack: str, template: str) -> Any:
        return build_context(profile(stack).rules, parts, template_facts(template), {})["messages"][0]["content"]

    assert [
        content(s, string_fmt) for s in ("transformers", "vllm", "sglang", "smg", "tgi", "mistral.rs", "dynamo")
    ] == [
        parts["messages"][0]["content"],
        "Describe \nthis in one line.",
        "Describe  this in one line.",
        "Describe \nthis in one line.",
        "Describe this in one line.",
        [{"type": "text", "text": "Describe  this in one line."}],
        "Describe \nthis in one line.",
    ]
    assert content("vllm", openai_fmt) == [
        {"type": "text", "text": "Describe "},
        {"type": "text", "text": "this in one line."},
    ]


def test_stack_names() -> None:
    assert STACK_NAMES == ("transformers", "vllm", "sglang", "smg", "tgi", "mistral.rs", "llama.cpp", "dynamo")
    assert parse_stacks("tgi, vllm") == ("vllm", "tgi") and parse_stacks(None) == STACK_NAMES
    for p in map(profile, STACK_NAMES):  # every profile names what it mirrors, and its module's docstring the sources
        assert p.version and p.source and p.differs
        assert "Mirrored" in (
            sys.modules[f"tokaudit.template.stacks.{p.id.replace('.', '').replace('mistralrs', 'mistralrs')}"].__doc__
            or ""
        )


# ---- the command on each fixture ------------------------------------------------------------


def test_clean_chatml_fixture() -> None:
    code, doc = template_json(T / "chatml")
    assert code == 0 and doc["findings"] == []
    assert doc["template"] == {"source": "chat_template.jinja:1", "name": "default"}
    assert [s["id"] for s in doc["stacks"]] == list(STACK_NAMES)
    assert [s["id"] for s in doc["stacks"] if not s["rendered"]] == []  # llama.cpp with its own engine
    names = [c["name"] for c in doc["conversations"]]
    assert names == [
        "system-user",
        "system-user-no-generation-prompt",
        "user-only",
        "multi-turn",
        "tools-offered",
        "tool-call",
        "tool-call-empty-content",
        "tool-call-multi-turn",
        "tool-call-with-content",
        "parallel-tool-calls",
        "tool-result-then-user",
        "empty-content",
        "content-parts",
        "long-non-ascii",
        "system-midway",
        "assistant-prefill",
        "reasoning-only",
    ]
    first = doc["conversations"][0]["renders"]
    assert [r["stack"] for r in first] == STACKS
    assert {r["text"] for r in first} == {
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
        "What is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
    }
    tok = Tokenizer.from_file(str(T / "chatml" / "tokenizer.json"))
    assert first[0]["ids"] == tok.encode(first[0]["text"], add_special_tokens=True).ids and first[0]["ids"][0] == 261
    # a request a stack that always adds the generation prompt cannot be sent is not rendered for it
    assert [r["stack"] for r in doc["conversations"][1]["renders"]] == ["transformers", "vllm", "llama.cpp"]
    # content parts: the template joins them itself ("openai" format: vLLM, SGLang and smg keep the list); mistral.rs
    # joins them into one part with " ", Dynamo into a string with "\n"
    div = next(c for c in doc["conversations"] if c["name"] == "content-parts")["divergence"]
    # llama-server joins the parts with "\n" for a template that reads content as a string
    assert div["groups"] == [["transformers", "vllm", "sglang", "smg", "tgi"], ["mistral.rs"], ["llama.cpp", "dynamo"]]
    assert [side["excerpt"][:28] for side in div["sides"]] == [
        "<|im_start|>user\nDescribe  t",
        "<|im_start|>user\nDescribe \nt",
    ]


def test_qwen_tools_names_the_stacks_whose_prompts_differ() -> None:
    code, doc = template_json(T / "qwen-tools", *NO_PARTS)
    # only the spelling of the tools' JSON differs (compact, escaped, keys in order): warnings, exit 0
    assert code == 0
    assert [
        (
            f["code"],
            f["severity"],
            f["details"]["stacks"],
            f["details"].get("causes"),
            f["details"].get("json_spelling_only"),
        )
        for f in doc["findings"]
    ] == [
        ("TA802", "warning", ["tgi"], ["tojson", "sorted_maps"], True),
        ("TA802", "warning", ["dynamo"], ["tojson"], True),
        ("TA820", "note", [], None, None),
    ]
    # the parser round trip: which stacks' parsers read back the <tool_call> JSON this template teaches
    # (Dynamo's llama3_json reads the bare JSON left once skip_special_tokens deleted the special <tool_call> markers)
    assert doc["findings"][2]["message"] == (
        "tool calls of chat_template.jinja recovered by vllm: hermes, qwen3_json, granite4; "
        "sglang: hermes, qwen25; smg: qwen; tgi: its own JSON grammar, not the template's format; "
        "llama.cpp: auto; dynamo: hermes, qwen25, llama3_json"
    )
    tgi, dynamo = doc["findings"][:2]
    assert tgi["details"]["conversations"] == [
        "tools-offered",
        "tool-call",
        "tool-call-empty-content",
        "tool-call-multi-turn",
        "tool-call-with-content",
        "parallel-tool-calls",
        "tool-result-then-user",
    ]
    assert (
        "MiniJinja's escapes < > & '" in tgi["message"]
        and "its maps iterate and serialize in key order" in tgi["message"]
    )
    assert dynamo["details"]["excerpts"]["stack"].endswith('{"type":"function","function":{"name":"get_weath…')
    # no stack that registers its own tojson is named: smg and mistral.rs render the tools as transformers does
    renders = {r["stack"]: r["text"] for r in doc["conversations"][4]["renders"]}
    assert renders["smg"] == renders["mistral.rs"] == renders["transformers"]
    assert '"Current weather for a city. Units are <celsius> or <fahrenheit>."' in renders["smg"]
    assert "\\u003ccelsius\\u003e" in renders["tgi"] and "\\u003ccelsius\\u003e" in renders["dynamo"]
    # <tools>, <function-name>, <args-json-object> are prose: neither TA804 nor TA205
    scan = run_cli("scan", str(T / "qwen-tools"), "--format", "json", "--select", "TA205,TA804")
    assert scan.exit_code == 0 and json.loads(scan.stdout)["findings"] == []


def test_stack_option_limits_findings_and_exit_code() -> None:
    code, doc = template_json(T / "qwen-tools", "--stack", "vllm,smg")
    assert code == 0 and [s["id"] for s in doc["stacks"]] == ["vllm", "smg"]
    assert [r["stack"] for r in doc["conversations"][0]["renders"]] == ["vllm", "smg"]
    # the parser round trip runs for the selected stacks that have parsers (smg reads the <tool_call> JSON as qwen)
    assert [(f["code"], f["message"]) for f in doc["findings"]] == [
        ("TA820", "tool calls of chat_template.jinja recovered by vllm: hermes, qwen3_json, granite4; smg: qwen")
    ]
    code, doc = template_json(T / "qwen-tools", "--stack", "tgi", "--fail-on", "warning")
    assert code == 1 and [f["code"] for f in doc["findings"]] == ["TA802", "TA820"]
    assert doc["findings"][1]["message"] == (
        "tool calls of chat_template.jinja recovered by tgi: its own JSON grammar, not the template's format"
    )
    bad = run_cli("template", str(T / "qwen-tools"), "--stack", "tgi", "--tool-parser", "hermes")
    assert (bad.exit_code, bad.stderr) == (
        2,
        "tokaudit: error: key --tool-parser: unknown tool parser 'hermes' for tgi (choose from grammar)\n",
    )
    bad = run_cli("template", str(T / "qwen-tools"), "--stack", "mistral.rs", "--tool-parser", "hermes")
    assert (bad.exit_code, bad.stderr) == (
        2,
        "tokaudit: error: key --tool-parser: no selected stack has a parser round trip "
        "(choose from vllm, sglang, smg, tgi, llama.cpp, dynamo)\n",
    )
    bad = run_cli("template", str(T / "chatml"), "--stack", "vllm,tgx")
    assert bad.exit_code == 2 and bad.stdout == ""
    assert bad.stderr == (
        "tokaudit: error: key --stack: unknown stack 'tgx' (choose from transformers, vllm, sglang, smg, tgi, "
        "mistral.rs, llama.cpp, dynamo)\n"
    )
    scan = run_cli("scan", str(T / "qwen-tools"), "--format", "json", "--stack", "mistral.rs", *NO_PARTS)
    assert (
        scan.exit_code == 0
        and [f["code"] for f in json.loads(scan.stdout)["findings"] if f["code"].startswith("TA8")] == []
    )
    assert run_cli("scan", str(T / "qwen-tools"), "--stack", "dynamo", "--fail-on", "warning").exit_code == 1


def test_stacks_in_pyproject(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.tokaudit]\nstacks = ["vllm", "sglang"]\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, doc = template_json(T / "qwen-tools")
    assert code == 0 and [s["id"] for s in doc["stacks"]] == ["vllm", "sglang"]
    assert run_cli("scan", str(T / "qwen-tools"), "--select", "TA8").exit_code == 0
    assert [s["id"] for s in template_json(T / "qwen-tools", "--stack", "tgi")[1]["stacks"]] == [
        "tgi"
    ]  # the option wins
    (tmp_path / "pyproject.toml").write_text('[tool.tokaudit]\nstacks = ["vlm"]\n', encoding="utf-8")
    bad = run_cli("scan", str(T / "qwen-tools"))
    assert bad.exit_code == 2 and bad.stderr.startswith(
        f"tokaudit: error: {tmp_path / 'pyproject.toml'} (key tool.tokaudit.stacks): "
        "unknown stack 'vlm' (choose from transformers,"
    )
    (tmp_path / "pyproject.toml").write_text("[tool.tokaudit]\nstacks = [3]\n", encoding="utf-8")
    bad = run_cli("template", str(T / "qwen-tools"))
    assert bad.exit_code == 2 and bad.stderr.endswith("(key tool.tokaudit.stacks): expected a list of stack names\n")


def test_llama3_double_bos_whole_process() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tokaudit", "template", str(T / "llama3-double-bos"), "--format", "json", *NO_PARTS],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert (
        proc.returncode == 0
    )  # a warning: no serving stack's chat endpoint adds special tokens to the rendered prompt
    doc = json.loads(proc.stdout)
    assert codes(doc) == [("TA803", "warning", [])]
    f = doc["findings"][0]
    assert "no stack's chat endpoint is hit" in f["message"] and f["details"]["rendered_by"] == STACKS
    assert f["ids"] == [[260, 260]] and f["details"]["added_by"] == "tokenizer.json post_processor"
    assert f["details"]["first_ids"][:2] == [260, 260] and len(f["details"]["conversations"]) == 17
    tok = Tokenizer.from_file(str(T / "llama3-double-bos" / "tokenizer.json"))
    text = doc["conversations"][0]["renders"][0]["text"]
    assert text.startswith("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n")
    assert doc["conversations"][0]["renders"][0]["ids"] == tok.encode(text).ids
    assert proc.stderr == "tokaudit template: 0 errors, 1 warning, 0 notes\n"
    code, clean = template_json(T / "llama3", *NO_PARTS)  # same template, no BOS from the post-processor
    assert code == 0 and clean["findings"] == []
    assert clean["conversations"][0]["renders"][0]["ids"][:2] == [260, 262]
    # a finding no stack is hit by concerns the stacks only when every stack is checked
    assert template_json(T / "llama3-double-bos", "--stack", "vllm")[1]["findings"] == []  # vLLM joins text parts


def test_deepseek_percent_format_fails_in_minijinja_stacks() -> None:
    code, doc = template_json(T / "deepseek-percent", "--select", "TA801")
    # the template offers tools and these stacks render them: the tool-call turn they send must render too (issue 35)
    # llama.cpp's engine has no %-formatting either (its own error)
    assert code == 1 and codes(doc) == [
        ("TA801", "error", ["smg", "mistral.rs", "dynamo"]),
        ("TA801", "error", ["llama.cpp"]),
    ]
    assert doc["findings"][1]["details"]["error"].startswith('Unknown operator "%" between String and Tuple')
    f = doc["findings"][0]
    assert f["details"]["conversations"] == [
        "tool-call",
        "tool-call-empty-content",
        "tool-call-multi-turn",
        "tool-call-with-content",
        "parallel-tool-calls",
        "tool-result-then-user",
    ]
    assert "% operator" in f["message"] and f["message"].endswith("; transformers, vllm, sglang, tgi render them.")
    # TGI renders it: it never passes tool_calls (the calls are JSON in the content)
    j2 = doc["conversations"][5]["renders"][0]["text"]
    assert '<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "São Paulo <Centro>"' in j2
    assert run_cli("template", str(T / "deepseek-percent"), "--fail-on", "warning", "--select", "TA801").exit_code == 1
    # TGI keeps the newline after a block tag (no trim_blocks): its engine, not its variables, changes the prompt
    code, doc = template_json(T / "deepseek-percent", "--select", "TA802")
    assert [(f["details"]["stacks"], f["details"]["causes"]) for f in doc["findings"]] == [(["tgi"], ["trim_blocks"])]


def test_broken_template_is_an_error_for_every_stack() -> None:
    code, doc = template_json(T / "broken")
    assert code == 1 and codes(doc) == [
        ("TA801", "error", ["transformers", "vllm", "sglang"]),
        ("TA801", "error", ["smg", "tgi", "mistral.rs", "dynamo"]),
        ("TA801", "error", ["llama.cpp"]),
    ]
    assert [f["details"]["kind"] for f in doc["findings"]] == ["syntax", "syntax", "syntax"]
    # llama.cpp's parser names no line
    assert [f["location"] for f in doc["findings"]] == [{"file": "chat_template.jinja", "line": 16}] * 2 + [
        {"file": "chat_template.jinja", "line": 1}
    ]
    assert doc["findings"][0]["details"]["error"].startswith(
        "TemplateSyntaxError: line 16: Unexpected end of template."
    )
    assert len(doc["findings"][0]["details"]["conversations"]) == 17


def test_token_split_agrees_with_ta205() -> None:
    code, doc = template_json(T / "token-split")
    assert code == 1 and codes(doc) == [("TA804", "error", STACKS)]
    f = doc["findings"][0]
    tok = Tokenizer.from_file(str(T / "token-split" / "tokenizer.json"))
    assert f["details"]["encoded_ids"] == tok.encode("<|im_sep|>", add_special_tokens=False).ids
    assert f["details"]["token"] == "<|im_sep|>" and f["details"]["conversation"] == "system-user"
    scan = json.loads(run_cli("scan", str(T / "token-split"), "--format", "json", "--select", "TA205,TA804").stdout)
    assert [
        (x["code"], x["details"]["token"], x["details"]["encoded_ids"], x["details"]["stacks"])
        for x in scan["findings"]
    ] == [
        ("TA205", "<|im_sep|>", f["details"]["encoded_ids"], STACKS),
        ("TA804", "<|im_sep|>", f["details"]["encoded_ids"], STACKS),
    ]


def test_ta205_only_for_literals_that_reach_a_render(tmp_path: Path) -> None:
    # functionary-v3.2-shaped: <|NONE|> is a value the template compares, never one it writes
    path = tmp_path / "cmp.jinja"
    path.write_text(
        "{% for m in messages %}{% if m.content != '<|NONE|>' %}{{ '<|im_start|>' + m.content }}{% endif %}"
        "{% endfor %}",
        encoding="utf-8",
    )
    (tmp_path / "m").mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json", "config.json"):
        (tmp_path / "m" / name).write_bytes((T / "chatml" / name).read_bytes())
    (tmp_path / "m" / "chat_template.jinja").write_bytes(path.read_bytes())
    out = run_cli("scan", str(tmp_path / "m"), "--format", "json", "--select", "TA205")
    assert out.exit_code == 0 and json.loads(out.stdout)["findings"] == []
    (tmp_path / "m" / "chat_template.jinja").write_text(
        "{{ '<|NONE|>' }}" + path.read_text(encoding="utf-8"), encoding="utf-8"
    )
    out = run_cli("scan", str(tmp_path / "m"), "--format", "json", "--select", "TA205")
    assert [(f["details"]["token"], f["details"]["stacks"]) for f in json.loads(out.stdout)["findings"]] == [
        ("<|NONE|>", STACKS)
    ]


def test_generation_prompt_missing_newline() -> None:
    code, doc = template_json(T / "generation-prompt")
    # llama.cpp's server is not probed for TA805 (it never renders a finished turn without its generation prompt)
    assert code == 0 and codes(doc) == [("TA805", "warning", [s for s in STACKS if s != "llama.cpp"])]
    f = doc["findings"][0]
    assert (
        f["details"]["header"] == "<|im_start|>assistant\n"
        and f["details"]["generation_suffix"] == "<|im_start|>assistant"
    )


def test_tool_call_dropped() -> None:
    code, doc = template_json(T / "drops-tool-calls", *NO_PARTS)
    assert code == 1 and codes(doc) == [
        ("TA806", "error", ["transformers", "vllm", "sglang", "smg", "mistral.rs", "llama.cpp", "dynamo"])
    ]
    f = doc["findings"][0]
    assert f["details"]["conversations"] == [
        "tool-call",
        "tool-call-empty-content",
        "tool-call-multi-turn",
        "tool-call-with-content",
        "parallel-tool-calls",
        "tool-result-then-user",
    ]
    assert f["details"]["missing"] == ["get_weather", "Centro"]
    # the template offers the tools (TA806's condition) ...
    assert "Tools: get_weather" in doc["conversations"][4]["renders"][0]["text"]
    # ... and ChatML, which writes the call, has none. TGI passes no tool_calls (with content "" it drops them,
    # whatever the template): a property of the stack its profile states, not a finding on every template
    code, doc = template_json(T / "qwen-tools", "--select", "TA806")
    assert code == 0 and doc["findings"] == []
    (conv,) = (c for c in doc["conversations"] if c["name"] == "tool-call-empty-content")
    tgi = next(r for r in conv["renders"] if r["stack"] == "tgi")
    assert "Weather in São Paulo?<|im_end|>\n<|im_start|>assistant\n<|im_end|>\n" in tgi["text"]


def test_prefix_instability() -> None:
    code, doc = template_json(T / "thinking-history", *NO_PARTS)
    assert code == 0 and [
        (f["code"], f["severity"], f["details"]["conversations"], f["details"]["field"]) for f in doc["findings"]
    ] == [
        ("TA807", "warning", ["multi-turn", "tool-call-multi-turn", "reasoning", "reasoning-only"], "reasoning"),
        ("TA807", "warning", ["reasoning", "reasoning-only"], "reasoning_content"),
    ]
    first = doc["findings"][0]
    # llama.cpp's server is not probed for TA807 (it never renders a finished turn without its generation prompt)
    assert (
        first["details"]["stacks"] == [s for s in STACKS if s != "llama.cpp"]
        and first["details"]["turn"] == 2
        and first["details"]["position"] == 138
    )
    assert first["details"]["excerpts"]["turn"].endswith("assistant\n<think>\n\n</think>\n\nThe capital of France…")
    assert first["details"]["token_position"] == 85
    kept = doc["findings"][1]
    # vLLM reads only `reasoning`: the client's reasoning_content never reaches the template, nothing to drop
    assert kept["details"]["stacks"] == ["transformers", "sglang", "smg", "mistral.rs"]
    assert (
        "keeps the reasoning_content of the last assistant turn and drops it once a later turn follows"
        in kept["message"]
    )
    code, doc = template_json(T / "chatml", "--select", "TA807")
    assert doc["findings"] == []


def test_strftime_now_missing_in_smg() -> None:
    code, doc = template_json(T / "dated")
    # and the date is in every other stack's prompt (TA813, a note)
    assert code == 1 and codes(doc) == [
        ("TA801", "error", ["smg"]),
        ("TA813", "note", ["transformers", "vllm", "sglang", "tgi", "mistral.rs", "llama.cpp", "dynamo"]),
    ]
    assert doc["findings"][0]["details"]["error"] == "unknown function: strftime_now is unknown (in chat:1)"
    assert template_json(T / "dated", "--stack", "vllm,tgi")[0] == 0


def test_template_source_disagreement() -> None:
    code, doc = template_json(T / "two-sources")
    assert code == 0 and codes(doc) == [("TA808", "warning", ["tgi"])]
    f = doc["findings"][0]
    assert f["details"]["reads"] == {
        "transformers": "chat_template.jinja",
        "vllm": "chat_template.jinja",
        "sglang": "chat_template.jinja",
        "smg": "chat_template.jinja",
        "tgi": "tokenizer_config.json",
    }
    assert "transformers, vllm, sglang, smg read chat_template.jinja; tgi reads tokenizer_config.json" in f["message"]
    scan = json.loads(run_cli("scan", str(T / "two-sources"), "--format", "json", "--select", "TA808").stdout)
    assert [(x["code"], x["location"]) for x in scan["findings"]] == [
        ("TA808", {"file": "tokenizer_config.json", "line": 46, "column": 3, "key": "chat_template"})
    ]


def test_hostile_template_ends_within_the_bound() -> None:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "tokaudit", "template", str(T / "hostile"), "--format", "json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    elapsed = time.perf_counter() - start
    assert proc.returncode == 1 and elapsed < 30
    doc = json.loads(proc.stdout)
    assert [
        (f["code"], f["details"]["stacks"], f["details"]["kind"], f["details"]["error"]) for f in doc["findings"]
    ] == [
        ("TA801", ["transformers", "vllm", "sglang"], "budget", "render took longer than 2 s"),
        ("TA801", ["smg", "tgi", "mistral.rs", "dynamo"], "budget", "engine ran out of fuel (in chat:1)"),
        ("TA801", ["llama.cpp"], "budget", "the render ran past 2 s"),
    ]  # once: the others are skipped
    # the template reads no variable: every request is the same render, made once per engine configuration
    assert {r["error"] for c in doc["conversations"] for r in c["renders"] if r["stack"] == "vllm"} == {
        "render took longer than 2 s"
    }


def test_hostile_template_inside_scan_and_a_repetition_bomb(tmp_path: Path) -> None:
    start = time.perf_counter()
    out = run_cli("scan", str(T / "hostile"), "--format", "json", "--select", "TA801")
    assert time.perf_counter() - start < 20
    doc = json.loads(out.stdout)
    assert [(f["details"]["stacks"], f["details"]["error"]) for f in doc["findings"]] == [
        (["transformers", "vllm", "sglang"], "render took longer than 1 s"),
        (["smg", "tgi", "mistral.rs", "dynamo"], "engine ran out of fuel (in chat:1)"),
        (["llama.cpp"], "the render ran past 1 s"),
    ]
    # a string repetition Jinja2 refuses is not handed to MiniJinja, which would allocate it whole
    path = tmp_path / "bomb.jinja"
    path.write_text("{{ 'x' * 10000000000 }}", encoding="utf-8")
    code, doc = template_json(T / "chatml", "--template", str(path), "--select", "TA801")
    assert code == 1 and [(f["details"]["stacks"], f["details"]["kind"]) for f in doc["findings"]] == [
        (["transformers", "vllm", "sglang"], "budget"),
        (["smg", "tgi", "mistral.rs", "dynamo"], "budget"),
        (["llama.cpp"], "budget"),
    ]
    assert doc["findings"][1]["details"]["error"].startswith("not rendered: Jinja2 found an unbounded repetition")


def test_named_templates_are_each_rendered() -> None:
    code, doc = template_json(T / "named-templates")
    assert [t["name"] for t in doc["templates"]] == ["default", "tool_use"]
    assert doc["templates"][1]["source"] == "tokenizer_config.json (chat_template[1].template)"
    assert {c["template"] for c in doc["conversations"]} == {"default", "tool_use"}
    # the tool_use template's findings only (TA802 warnings: its tools' JSON spelled otherwise by TGI and Dynamo)
    assert code == 0 and {f["details"]["template"] for f in doc["findings"]} == {"tool_use"}


def test_scan_runs_the_template_rules_by_default() -> None:
    out = run_cli("scan", str(T / "llama3-double-bos"), "--format", "json", *NO_PARTS)
    doc = json.loads(out.stdout)
    assert out.exit_code == 0 and [
        (f["code"], f["severity"]) for f in doc["findings"] if f["code"].startswith("TA8")
    ] == [("TA803", "warning")]
    assert {"TA205", "TA801", "TA802", "TA803", "TA804", "TA805", "TA806", "TA807", "TA808"} <= {
        r["code"] for r in doc["rules"]
    }
    assert [
        f["code"]
        for f in json.loads(run_cli("scan", str(T / "chatml"), "--format", "json").stdout)["findings"]
        if f["code"].startswith("TA8")
    ] == []


# ---- user input ------------------------------------------------------------------------------


def test_messages_json_and_jsonl(tmp_path: Path) -> None:
    convs = [
        {"name": "mine", "messages": [{"role": "user", "content": "hi <b>"}], "chat_template_kwargs": {"x": 1}},
        [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}],
    ]
    (tmp_path / "m.json").write_text(json.dumps(convs), encoding="utf-8")
    code, doc = template_json(T / "chatml", "--messages", str(tmp_path / "m.json"))
    assert code == 0 and [c["name"] for c in doc["conversations"]] == ["mine", "messages-2"]
    assert [c["add_generation_prompt"] for c in doc["conversations"]] == [True, False]
    assert (
        doc["conversations"][0]["renders"][0]["text"] == "<|im_start|>user\nhi <b><|im_end|>\n<|im_start|>assistant\n"
    )
    assert [r["stack"] for r in doc["conversations"][1]["renders"]] == ["transformers", "vllm", "llama.cpp"]
    (tmp_path / "m.jsonl").write_text("\n".join(json.dumps(c) for c in convs) + "\n", encoding="utf-8")
    code, doc2 = template_json(T / "chatml", "--messages", str(tmp_path / "m.jsonl"))
    assert [c["origin"] for c in doc2["conversations"]] == ["m.jsonl:1", "m.jsonl:2"]
    assert doc2["conversations"][0]["renders"] == doc["conversations"][0]["renders"]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            '{"messages": [{"role": "user", "content": "a"}]}\n{"messages": [{"role": "user", "content": "b"}\n',
            "m.jsonl:2: invalid JSON: Expecting ',' delimiter (column 47)",
        ),
        (
            '[{"role": "user", "content": "a"}]\n{"messages": [{"content": "b"}]}\n',
            "m.jsonl:2 (key messages[0].role): expected a string 'role'",
        ),
        (
            '[{"role": "user", "content": 5}]',
            "m.jsonl (key messages[0].content): expected 'content' to be a string, a list of parts or null",
        ),
        (
            '[\n  {"role": "user",\n   "content": "a",,}\n]',
            "m.jsonl:3: invalid JSON: Expecting property name enclosed in double quotes (column 19)",
        ),
        (
            '{"messages": [{"role": "user", "content": "a"}], "chat_template_kwargs": [1]}',
            "m.jsonl (key chat_template_kwargs): expected an object",
        ),
    ],
)
def test_malformed_messages_exit_2_naming_the_line(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text(content, encoding="utf-8")
    out = run_cli("template", str(T / "chatml"), "--messages", str(path))
    assert out.exit_code == 2 and out.stdout == ""
    assert out.stderr == f"tokaudit: error: {tmp_path}/{expected}\n"


def test_a_stack_refusing_a_request(tmp_path: Path) -> None:
    bad = [
        {"role": "user", "content": "x"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "1", "type": "function", "function": {"name": "f", "arguments": "{not json"}}],
        },
        {"role": "tool", "tool_call_id": "1", "content": "r"},
    ]
    (tmp_path / "m.json").write_text(json.dumps([bad]), encoding="utf-8")
    code, doc = template_json(T / "chatml", "--messages", str(tmp_path / "m.json"))
    f = doc["findings"][0]
    assert code == 1 and (f["details"]["stacks"], f["details"]["kind"]) == (["vllm", "sglang", "smg"], "refused")
    assert (
        f["details"]["error"]
        == "the stack refuses the request: Failed to parse tool call arguments as JSON: '{not json'"
    )


def test_tools_file_and_bad_options(tmp_path: Path) -> None:
    tools = [{"type": "function", "function": {"name": "lookup", "description": "find <x>", "parameters": {}}}]
    (tmp_path / "tools.json").write_text(json.dumps(tools), encoding="utf-8")
    code, doc = template_json(
        T / "qwen-tools", "--tools", str(tmp_path / "tools.json"), "--stack", "transformers", *NO_PARTS
    )
    assert code == 0 and [s["id"] for s in doc["stacks"]] == ["transformers"]
    assert '"name": "lookup", "description": "find <x>"' in doc["conversations"][0]["renders"][0]["text"]
    own = [
        {"messages": [{"role": "user", "content": "a"}], "tools": [{"type": "function", "function": {"name": "mine"}}]},
        [{"role": "user", "content": "b"}],
    ]
    (tmp_path / "m.json").write_text(json.dumps(own), encoding="utf-8")
    code, doc = template_json(
        T / "qwen-tools", "--messages", str(tmp_path / "m.json"), "--tools", str(tmp_path / "tools.json")
    )
    first, second = (c["renders"][0]["text"] for c in doc["conversations"])
    assert '"name": "mine"' in first and "lookup" not in first and '"name": "lookup"' in second
    none = run_cli("template", str(FIXTURES / "bert-wordpiece"))
    assert none.exit_code == 2 and "no chat template" in none.stderr and none.stderr.count("\n") == 1


def test_template_file_option_and_select(tmp_path: Path) -> None:
    path = tmp_path / "mine.jinja"
    path.write_text("{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}", encoding="utf-8")
    code, doc = template_json(T / "llama3-double-bos", "--template", str(path))
    assert doc["template"] == {"source": "mine.jinja:1", "name": "mine"} and codes(doc)[0] == ("TA803", "warning", [])
    code, doc = template_json(
        T / "llama3-double-bos", "--template", str(path), "--ignore", "double-bos", "--stack", "vllm"
    )
    assert code == 0 and doc["findings"] == []


def test_rich_view_groups_stacks_and_shows_the_divergence() -> None:
    out = run_cli("template", str(T / "qwen-tools"), "--stack", "transformers,tgi")
    assert out.exit_code == 0  # TGI spells the tools' JSON otherwise: a warning
    assert "first divergence at character 210, token 196" in out.stdout
    assert '{"function":{"arguments"' in out.stdout and "TA802 template-engine-divergence" in out.stdout
    assert (
        "stack       tgi" in out.stdout and "transformers, tgi" in out.stdout
    )  # stacks with the same prompt share a row


def test_a_template_stops_after_its_total_time() -> None:
    from tokaudit.records import Provenance
    from tokaudit.template.engine_findings import render_errors
    from tokaudit.template.rendering import render_template
    from tokaudit.template.requests import Request
    from tokaudit.template.source import TemplateSource

    slow = TemplateSource(
        "slow",
        "{% for i in range(3000) %}{% for j in range(100) %}{% endfor %}{% endfor %}{{ messages[0].content }}",
        Provenance("slow.jinja", line=1),
    )
    requests = [Request(f"c{i}", [{"role": "user", "content": f"x{i}"}]) for i in range(200)]
    start = time.perf_counter()
    run = render_template(slow, requests, [profile("vllm")], {}, Budget(total_seconds=0.3), probes=False)
    rendered = sum(r.stacks["vllm"].render.ok for r in run.requests)
    assert time.perf_counter() - start < 5 and 1 <= rendered < 200
    assert all(r.stacks["vllm"].render.text == f"x{i}" for i, r in enumerate(run.requests[:rendered]))
    (f,) = render_errors([run])
    assert f.severity.value == "warning" and len(f.details["conversations"]) == 200 - rendered
    assert "the 0.3 s all renders of one template may take ran out" in f.message


def test_assistant_prefill_is_continued_by_the_stacks_that_take_it() -> None:
    """continue_final_message: transformers and vLLM cut the prompt after the final message's text (transformers 5.24
    tags it and cuts at the tag), llama-server's prefill_assistant continues it too; the stacks that always add the
    generation prompt are not sent the request. transformers' own function gives the same prompt."""
    from transformers.utils.chat_template_utils import render_jinja_template

    code, doc = template_json(T / "chatml")
    (conv,) = [c for c in doc["conversations"] if c["name"] == "assistant-prefill"]
    prompt = (
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nWhat is the capital of France?"
        "<|im_end|>\n<|im_start|>assistant\nThe capital of France is"
    )
    assert [(r["stack"], r["text"]) for r in conv["renders"]] == [
        ("transformers", prompt),
        ("vllm", prompt),
        ("llama.cpp", prompt),
    ]
    template = (T / "chatml" / "chat_template.jinja").read_text(encoding="utf-8")
    messages = next(r for r in builtin_requests(template) if r.name == "assistant-prefill").messages
    (rendered,), _ = render_jinja_template(
        conversations=[messages], chat_template=template, continue_final_message=True
    )
    assert rendered == prompt
