"""``tokaudit template`` and the TA8xx rules: real engines (jinja2, minijinja), real tokenizers, the
fixtures of fixtures/make_template_fixtures.py, run as a whole process or through the CLI runner."""

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
from tokaudit.template.engines import Jinja2Engine, MiniJinjaEngine
from tokaudit.template.renders import Budget

T = FIXTURES / "templates"


def template_json(path: Path, *args: str) -> tuple[int, dict[str, Any]]:
    out = run_cli("template", str(path), "--format", "json", *args)
    return out.exit_code, json.loads(out.stdout)


def codes(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f["code"], f["severity"]) for f in doc["findings"]]


def render(engine: Any, template: str, **context: Any) -> Any:
    return engine.prepare(template).render(context)


# ---- the engines, configured as the stacks configure them ------------------------------------


def test_tojson_escapes_lt_in_minijinja_only() -> None:
    args = {"q": "<b> it's é"}
    assert render(Jinja2Engine(), "{{ x|tojson }}", x=args).text == '{"q": "<b> it\'s é"}'
    assert render(MiniJinjaEngine(), "{{ x|tojson }}", x=args).text == '{"q": "\\u003cb\\u003e it\\u0027s é"}'


def test_percent_formatting_works_in_jinja2_only() -> None:
    assert render(Jinja2Engine(), "{{ '%s-%s' % (a, b) }}", a=1, b="x").text == "1-x"
    out = render(MiniJinjaEngine(), "{{ '%s-%s' % (a, b) }}", a=1, b="x")
    assert out.text is None and out.kind == "error"
    assert out.error.startswith("invalid operation: tried to use % operator on unsupported types string and")


@pytest.mark.parametrize("engine", [Jinja2Engine(), MiniJinjaEngine()], ids=lambda e: e.name)
def test_engine_helpers(engine: Any) -> None:
    # a fixed clock, raise_exception, python string methods, no file access
    assert render(engine, "{{ strftime_now('%d %b %Y') }}").text == "15 Jan 2026"
    raised = render(engine, "{{ raise_exception('Conversation roles must alternate') }}")
    assert (raised.kind, raised.error) == ("raise", "raise_exception: Conversation roles must alternate")
    assert render(engine, "{{ ' a '.strip() + 'b'.upper() }}{% for k, v in d.items() %}{{ k }}{% endfor %}", d={"z": 1}).text == "aBz"
    included = render(engine, "{% include '/etc/passwd' %}")
    assert included.text is None and included.kind == "error"


@pytest.mark.parametrize("engine_cls", [Jinja2Engine, MiniJinjaEngine], ids=["jinja2", "minijinja"])
def test_hostile_templates_end_within_the_budget(engine_cls: Any) -> None:
    engine = engine_cls(Budget(seconds=0.5, fuel=5_000_000, max_chars=10_000))
    start = time.perf_counter()
    loop = render(engine, "{% for i in range(100000) %}{% for j in range(100000) %}{{ j }}{% endfor %}{% endfor %}")
    assert time.perf_counter() - start < 3
    assert loop.kind == "budget"
    recursion = render(engine, "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}")
    assert recursion.kind == "budget"
    big = render(engine, "{% for i in range(20000) %}xxxxxxxxxx{% endfor %}")
    assert big.kind == "budget" and big.error == "output exceeds 10000 characters"


def test_jinja2_generation_tag_renders_its_body_and_minijinja_rejects_it() -> None:
    template = "{% generation %}hi{% endgeneration %}"
    assert render(Jinja2Engine(), template).text == "hi"
    assert render(MiniJinjaEngine(), template).kind == "syntax"


# ---- the command on each fixture ------------------------------------------------------------


def test_clean_chatml_fixture() -> None:
    code, doc = template_json(T / "chatml")
    assert code == 0 and doc["findings"] == []
    assert doc["template"] == {"source": "chat_template.jinja:1", "name": "default"}
    assert [e["name"] for e in doc["engines"]] == ["jinja2", "minijinja"] and all(e["available"] for e in doc["engines"])
    names = [c["name"] for c in doc["conversations"]]
    assert names == ["system-user", "system-user-no-generation-prompt", "user-only", "multi-turn", "tool-call",
                     "tool-call-json-arguments", "tools-offered", "empty-content", "content-parts", "long-non-ascii"]
    first = doc["conversations"][0]["renders"][0]
    assert first["engine"] == "jinja2" and first["error"] is None
    assert first["text"] == ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
                             "What is the capital of France?<|im_end|>\n<|im_start|>assistant\n")
    tok = Tokenizer.from_file(str(T / "chatml" / "tokenizer.json"))
    assert first["ids"] == tok.encode(first["text"], add_special_tokens=True).ids
    assert first["ids"][0] == 261  # <|im_start|> as its one id
    long = doc["conversations"][-1]["renders"][1]
    assert len(long["text"]) == len("<|im_start|>user\n<|im_end|>\n<|im_start|>assistant\n") + 2000


def test_qwen_tools_tojson_divergence_and_prose_tags() -> None:
    code, doc = template_json(T / "qwen-tools")
    assert code == 1
    # one cause (the tool description through tojson), one finding naming every conversation it hits
    assert [(f["code"], f["severity"], f["details"].get("conversations")) for f in doc["findings"]] == [
        ("TA802", "error", ["tool-call", "tool-call-json-arguments", "tools-offered"]), ("TA820", "note", None)]
    # the parser round trip: which stacks' parsers read back the <tool_call> JSON this template teaches
    assert doc["findings"][1]["message"] == ("tool calls of chat_template.jinja recovered by vllm: hermes, qwen3_json, granite4; "
                                             "sglang: hermes, qwen25; llama.cpp: auto")
    f = doc["findings"][0]
    assert f["details"]["position"] == 319 and f["details"]["chars"] == {"jinja2": "<", "minijinja": "\\"}
    assert "\\u003ccelsius" in f["details"]["excerpts"]["minijinja"]
    # an error because a real gateway prompts with it: TGI keeps MiniJinja's tojson, smg overrides it
    assert {k: f["details"][k] for k in ("cause", "stacks_hit", "stacks_not_hit")} == {
        "cause": "minijinja-tojson-escaping", "stacks_hit": ["TGI"], "stacks_not_hit": ["smg"]}
    assert f["message"].endswith("TGI registers no tojson of its own, so it prompts with the minijinja text; "
                                 "smg (SGLang's router) overrides tojson and is not hit.")
    conv = doc["conversations"][4]
    j2, mj = (r["text"] for r in conv["renders"])
    assert '"São Paulo <Centro>"' in j2 and '"São Paulo \\u003cCentro\\u003e"' in mj
    # arguments given as a JSON string are written as they are by both engines
    j2s, mjs = (r["text"] for r in doc["conversations"][5]["renders"])
    assert '"arguments": {"city": "São Paulo <Centro>"' in j2s and '"arguments": {"city": "São Paulo <Centro>"' in mjs
    # <tools>, <function-name>, <args-json-object> are prose: neither TA804 nor TA205, not highlighted
    assert "<tools>" in j2 and "<function-name>" in j2
    scan = run_cli("scan", str(T / "qwen-tools"), "--format", "json", "--select", "TA205,TA804")
    assert scan.exit_code == 0 and json.loads(scan.stdout)["findings"] == []
    shown = {j2[a:b] for a, b in conv["renders"][0]["controls"]}
    assert shown == {"<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"}


def test_llama3_double_bos_whole_process() -> None:
    proc = subprocess.run([sys.executable, "-m", "tokaudit", "template", str(T / "llama3-double-bos"), "--format", "json"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0  # a warning: no serving stack's chat endpoint adds special tokens to the rendered prompt
    doc = json.loads(proc.stdout)
    assert codes(doc) == [("TA803", "warning")]
    f = doc["findings"][0]
    assert "vLLM, SGLang and TGI tokenize a chat prompt without special tokens and llama.cpp's server strips the leading BOS" in f["message"]
    assert f["details"]["stacks_not_hit"] == ["vLLM", "SGLang", "TGI", "llama.cpp server"]
    assert f["ids"] == [[260, 260]] and f["details"]["added_by"] == "tokenizer.json post_processor"
    assert f["details"]["first_ids"][:2] == [260, 260] and len(f["details"]["conversations"]) == 10
    tok = Tokenizer.from_file(str(T / "llama3-double-bos" / "tokenizer.json"))
    text = doc["conversations"][0]["renders"][0]["text"]
    assert text.startswith("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n")
    assert doc["conversations"][0]["renders"][0]["ids"] == tok.encode(text).ids
    assert proc.stderr == "tokaudit template: 0 errors, 1 warning, 0 notes\n"
    code, clean = template_json(T / "llama3")  # same template, no BOS from the post-processor
    assert code == 0 and clean["findings"] == []
    assert clean["conversations"][0]["renders"][0]["ids"][:2] == [260, 262]


def test_deepseek_percent_format_fails_in_minijinja() -> None:
    code, doc = template_json(T / "deepseek-percent")
    assert code == 0 and codes(doc) == [("TA801", "warning"), ("TA820", "note")]  # tool calls are optional: a warning
    # the template writes <｜tool▁call▁begin｜> without the <｜tool▁calls▁begin｜> every DeepSeek parser looks for
    assert doc["findings"][1]["details"]["stacks"] == ["vllm", "sglang", "llama.cpp"]
    f = doc["findings"][0]
    assert f["details"]["engine"] == "minijinja" and f["details"]["conversations"] == ["tool-call", "tool-call-json-arguments"]
    assert "% operator" in f["message"] and "jinja2 renders it" in f["message"]
    j2 = doc["conversations"][4]["renders"][0]["text"]
    assert '<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "São Paulo <Centro>"' in j2
    assert run_cli("template", str(T / "deepseek-percent"), "--fail-on", "warning").exit_code == 1


def test_broken_template_is_an_error_in_both_engines() -> None:
    code, doc = template_json(T / "broken")
    assert code == 1 and codes(doc) == [("TA801", "error"), ("TA801", "error")]
    assert [f["details"]["kind"] for f in doc["findings"]] == ["syntax", "syntax"]
    assert [f["location"] for f in doc["findings"]] == [{"file": "chat_template.jinja", "line": 16}] * 2
    assert doc["findings"][0]["details"]["error"].startswith("TemplateSyntaxError: line 16: Unexpected end of template.")
    assert len(doc["findings"][0]["details"]["conversations"]) == 10


def test_token_split_agrees_with_ta205() -> None:
    code, doc = template_json(T / "token-split")
    assert code == 1 and codes(doc) == [("TA804", "error")]
    f = doc["findings"][0]
    tok = Tokenizer.from_file(str(T / "token-split" / "tokenizer.json"))
    assert f["details"]["encoded_ids"] == tok.encode("<|im_sep|>", add_special_tokens=False).ids
    assert f["details"]["token"] == "<|im_sep|>" and f["details"]["conversation"] == "system-user"
    scan = json.loads(run_cli("scan", str(T / "token-split"), "--format", "json", "--select", "TA205,TA804").stdout)
    assert [(x["code"], x["details"]["token"], x["details"]["encoded_ids"]) for x in scan["findings"]] == [
        ("TA205", "<|im_sep|>", f["details"]["encoded_ids"]), ("TA804", "<|im_sep|>", f["details"]["encoded_ids"])]


def test_generation_prompt_missing_newline() -> None:
    code, doc = template_json(T / "generation-prompt")
    assert code == 0 and codes(doc) == [("TA805", "warning"), ("TA805", "warning")]
    f = doc["findings"][0]
    assert f["details"]["header"] == "<|im_start|>assistant\n" and f["details"]["generation_suffix"] == "<|im_start|>assistant"
    assert [x["details"]["engine"] for x in doc["findings"]] == ["jinja2", "minijinja"]


def test_hostile_template_ends_within_the_bound() -> None:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "tokaudit", "template", str(T / "hostile"), "--format", "json"],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    elapsed = time.perf_counter() - start
    assert proc.returncode == 1 and elapsed < 15
    doc = json.loads(proc.stdout)
    assert [(f["code"], f["details"]["engine"], f["details"]["kind"]) for f in doc["findings"]] == [
        ("TA801", "jinja2", "budget"), ("TA801", "minijinja", "budget")]
    assert doc["findings"][0]["details"]["error"] == "render took longer than 2 s"
    assert doc["findings"][1]["details"]["error"] == "engine ran out of fuel (in chat:1)"
    # after the first exhausted budget an engine's remaining renders are skipped
    assert doc["conversations"][1]["renders"][0]["error"].startswith("skipped: render took longer than 2 s")


def test_hostile_template_inside_scan_and_a_repetition_bomb(tmp_path: Path) -> None:
    start = time.perf_counter()
    out = run_cli("scan", str(T / "hostile"), "--format", "json", "--select", "TA801")
    assert time.perf_counter() - start < 10
    doc = json.loads(out.stdout)
    assert [(f["details"]["engine"], f["details"]["error"]) for f in doc["findings"]] == [
        ("jinja2", "render took longer than 1 s"), ("minijinja", "engine ran out of fuel (in chat:1)")]
    # a string repetition Jinja2 refuses is not handed to MiniJinja, which would allocate it whole
    path = tmp_path / "bomb.jinja"
    path.write_text("{{ 'x' * 10000000000 }}", encoding="utf-8")
    code, doc = template_json(T / "chatml", "--template", str(path), "--select", "TA801")
    assert code == 1 and [(f["details"]["engine"], f["details"]["kind"]) for f in doc["findings"]] == [
        ("jinja2", "budget"), ("minijinja", "budget")]
    assert doc["findings"][1]["details"]["error"].startswith("not rendered: jinja2 found an unbounded repetition")


def test_named_templates_are_each_rendered() -> None:
    code, doc = template_json(T / "named-templates")
    assert [t["name"] for t in doc["templates"]] == ["default", "tool_use"]
    assert doc["templates"][1]["source"] == "tokenizer_config.json (chat_template[1].template)"
    assert {c["template"] for c in doc["conversations"]} == {"default", "tool_use"}
    assert code == 1 and {f["details"]["template"] for f in doc["findings"]} == {"tool_use"}


def test_scan_runs_the_template_rules_by_default() -> None:
    out = run_cli("scan", str(T / "llama3-double-bos"), "--format", "json")
    doc = json.loads(out.stdout)
    assert out.exit_code == 0 and [(f["code"], f["severity"]) for f in doc["findings"] if f["code"].startswith("TA8")] == [("TA803", "warning")]
    assert {"TA801", "TA802", "TA803", "TA804", "TA805"} <= {r["code"] for r in doc["rules"]}
    assert [f["code"] for f in json.loads(run_cli("scan", str(T / "chatml"), "--format", "json").stdout)["findings"]
            if f["code"].startswith("TA8")] == []


# ---- user input ------------------------------------------------------------------------------


def test_messages_json_and_jsonl(tmp_path: Path) -> None:
    convs = [{"name": "mine", "messages": [{"role": "user", "content": "hi <b>"}]},
             [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]]
    (tmp_path / "m.json").write_text(json.dumps(convs), encoding="utf-8")
    code, doc = template_json(T / "chatml", "--messages", str(tmp_path / "m.json"))
    assert code == 0 and [c["name"] for c in doc["conversations"]] == ["mine", "messages-2"]
    assert [c["add_generation_prompt"] for c in doc["conversations"]] == [True, False]
    assert doc["conversations"][0]["renders"][0]["text"] == "<|im_start|>user\nhi <b><|im_end|>\n<|im_start|>assistant\n"
    (tmp_path / "m.jsonl").write_text("\n".join(json.dumps(c) for c in convs) + "\n", encoding="utf-8")
    code, doc2 = template_json(T / "chatml", "--messages", str(tmp_path / "m.jsonl"))
    assert [c["origin"] for c in doc2["conversations"]] == ["m.jsonl:1", "m.jsonl:2"]
    assert doc2["conversations"][0]["renders"] == doc["conversations"][0]["renders"]


@pytest.mark.parametrize(("content", "expected"), [
    ('{"messages": [{"role": "user", "content": "a"}]}\n{"messages": [{"role": "user", "content": "b"}\n',
     "m.jsonl:2: invalid JSON: Expecting ',' delimiter (column 47)"),
    ('[{"role": "user", "content": "a"}]\n{"messages": [{"content": "b"}]}\n', "m.jsonl:2 (key messages[0].role): expected a string 'role'"),
    ('[{"role": "user", "content": 5}]', "m.jsonl (key messages[0].content): expected 'content' to be a string, a list of parts or null"),
    ('[\n  {"role": "user",\n   "content": "a",,}\n]', "m.jsonl:3: invalid JSON: Expecting property name enclosed in double quotes (column 19)"),
])
def test_malformed_messages_exit_2_naming_the_line(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text(content, encoding="utf-8")
    out = run_cli("template", str(T / "chatml"), "--messages", str(path))
    assert out.exit_code == 2 and out.stdout == ""
    assert out.stderr == f"tokaudit: error: {tmp_path}/{expected}\n"


def test_tools_file_and_bad_options(tmp_path: Path) -> None:
    tools = [{"type": "function", "function": {"name": "lookup", "description": "find <x>", "parameters": {}}}]
    (tmp_path / "tools.json").write_text(json.dumps(tools), encoding="utf-8")
    code, doc = template_json(T / "qwen-tools", "--tools", str(tmp_path / "tools.json"), "--engine", "jinja2")
    assert code == 0 and [e["name"] for e in doc["engines"]] == ["jinja2"]
    assert '"name": "lookup", "description": "find <x>"' in doc["conversations"][0]["renders"][0]["text"]
    own = [{"messages": [{"role": "user", "content": "a"}], "tools": [{"type": "function", "function": {"name": "mine"}}]},
           [{"role": "user", "content": "b"}]]
    (tmp_path / "m.json").write_text(json.dumps(own), encoding="utf-8")
    code, doc = template_json(T / "qwen-tools", "--messages", str(tmp_path / "m.json"), "--tools", str(tmp_path / "tools.json"))
    first, second = (c["renders"][0]["text"] for c in doc["conversations"])
    assert '"name": "mine"' in first and "lookup" not in first and '"name": "lookup"' in second
    bad = run_cli("template", str(T / "chatml"), "--engine", "jinja3")
    assert bad.exit_code == 2 and bad.stderr == "tokaudit: error: key --engine: unknown engine 'jinja3' (choose from jinja2, minijinja)\n"
    none = run_cli("template", str(FIXTURES / "bert-wordpiece"))
    assert none.exit_code == 2 and "no chat template" in none.stderr and none.stderr.count("\n") == 1


def test_template_file_option_and_select(tmp_path: Path) -> None:
    path = tmp_path / "mine.jinja"
    path.write_text("{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}", encoding="utf-8")
    code, doc = template_json(T / "llama3-double-bos", "--template", str(path))
    assert doc["template"] == {"source": "mine.jinja:1", "name": "mine"} and codes(doc)[0] == ("TA803", "warning")
    code, doc = template_json(T / "llama3-double-bos", "--template", str(path), "--ignore", "double-bos")
    assert code == 0 and doc["findings"] == []


def test_rich_view_shows_the_divergence_side_by_side() -> None:
    out = run_cli("template", str(T / "qwen-tools"))
    assert out.exit_code == 1
    assert "first divergence at character 319, token 303" in out.stdout
    assert "\\u003ccelsius\\u003e" in out.stdout and "TA802 template-engine-divergence" in out.stdout


def test_tool_calls_work_when_either_argument_form_renders(tmp_path: Path) -> None:
    # DeepSeek-V3-shaped: concatenates the arguments, so only the JSON-string form renders; that is enough
    path = tmp_path / "ds.jinja"
    path.write_text("{% for m in messages %}{% if m['role'] == 'assistant' and m['content'] is none %}"
                    "{% for t in m['tool_calls'] %}{{ '<|im_start|>' + t['function']['name'] + '\\n' + t['function']['arguments'] }}"
                    "{% endfor %}{% else %}{{ '<|im_start|>' + m['role'] + '\\n' + (m['content'] or '') + '<|im_end|>' }}{% endif %}"
                    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}", encoding="utf-8")
    code, doc = template_json(T / "chatml", "--template", str(path))
    renders = {c["name"]: c["renders"][0] for c in doc["conversations"]}
    assert renders["tool-call"]["error"] is None  # content "" takes the other branch
    assert '<|im_start|>get_weather\n{"city": "São Paulo <Centro>"' in renders["tool-call-json-arguments"]["text"]
    assert code == 0 and [f["details"]["conversations"] for f in doc["findings"]] == [["content-parts"], ["content-parts"]]
    # a template that only concatenates object arguments fails both forms: a warning (tools are optional)
    path.write_text("{% for m in messages %}{{ m['role'] + (m['content'] or '') }}{% for t in m['tool_calls'] or [] %}"
                    "{{ t['function']['arguments'] + 1 }}{% endfor %}{% endfor %}", encoding="utf-8")
    code, doc = template_json(T / "chatml", "--template", str(path), "--engine", "jinja2", "--select", "TA801")
    tool = [f for f in doc["findings"] if f["details"]["conversations"][0].startswith("tool-call")]
    assert [(f["code"], f["severity"], f["details"]["conversations"]) for f in tool] == [
        ("TA801", "warning", ["tool-call"]), ("TA801", "warning", ["tool-call-json-arguments"])]


def test_an_engine_stops_after_its_total_time_on_one_template() -> None:
    from tokaudit.artifacts.base import Provenance
    from tokaudit.template.analysis import render_errors, render_template
    from tokaudit.template.conversations import Conversation
    from tokaudit.template.source import TemplateSource

    slow = TemplateSource("slow", "{% for i in range(3000) %}{% for j in range(100) %}{% endfor %}{% endfor %}{{ messages[0].content }}",
                          Provenance("slow.jinja", line=1))
    convs = [Conversation(f"c{i}", [{"role": "user", "content": "x"}]) for i in range(200)]
    start = time.perf_counter()
    run = render_template(slow, convs, [Jinja2Engine(Budget(total_seconds=0.3))], {}, probe_headers=False)
    rendered = sum(c.renders[0].ok for c in run.conversations)
    assert time.perf_counter() - start < 5 and 1 <= rendered < 200
    assert all(c.renders[0].text == "x" for c in run.conversations[:rendered])
    (f,) = render_errors([run])
    assert f.severity.value == "warning" and len(f.details["conversations"]) == 200 - rendered
    assert "the 0.3 s this engine may spend on one template ran out" in f.message
