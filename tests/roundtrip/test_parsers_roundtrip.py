"""The parser round trip on real files: llama.cpp's chat templates (llama-cpp-python 0.3.36 sdist) with real
tokenizers of their family, each case of issue 30 as the real parsers of vLLM 0.33.0 and SGLang 0.5.23 behave on it
(tests/data/parser_golden.jsonl holds their outputs on the same cases), plus the grammars on hand-written outputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import parser_data
from conftest import ROOT, run_cli
from tokaudit.records import Provenance
from tokaudit.parsers.families import STACKS
from tokaudit.parsers.reasoning_table import find_reasoning_parser
from tokaudit.parsers.tool_table import TOOL_PARSERS, find_tool_parser
from tokaudit.parsers.calls import Call
from tokaudit.parsers.grammars import GRAMMARS
from tokaudit.parsers.parse import parse_whole
from tokaudit.roundtrip.analysis import ParserChoice, run_template
from tokaudit.roundtrip.findings import parser_findings
from tokaudit.roundtrip.parser_run import ParserRun
from tokaudit.template.source import TemplateSource
from tokaudit.template.stacks import profile
from tokaudit.template.turn import SENTINEL_ARGUMENTS, SENTINEL_NAME, SENTINEL_TOOL


def _template(name: str) -> str:
    text = parser_data.llamacpp_template(name)
    if text is None:
        pytest.skip("llama-cpp-python 0.3.36 sdist not in the real cache (scripts/fetch_real_tokenizers.py)")
    return text


def _tokenizer(name: str) -> Path:
    path = parser_data.real_model(name)
    if path is None:
        pytest.skip(f"real tokenizer {name} not fetched (scripts/fetch_real_tokenizers.py)")
    return path


def _run(template: str, tokenizer: Path, choice: ParserChoice = ParserChoice()) -> ParserRun:
    from tokaudit.model.load import load_model

    source = TemplateSource("default", _template(template), Provenance("chat_template.jinja", line=1))
    return run_template(load_model(str(tokenizer)), source, choice)


def _run_text(template: str) -> ParserRun:
    """The round trip at text level (no tokenizer: markers taken as tokens)."""
    source = TemplateSource("default", _template(template), Provenance("chat_template.jinja", line=1))
    return run_template(None, source, ParserChoice())


def _row(run: ParserRun, stack: str, tool: str | None, reasoning: str | None) -> Any:
    return next(r for r in run.rows if (r.stack, r.tool_parser, r.reasoning_parser) == (stack, tool, reasoning))


def _findings(run: ParserRun, choice: ParserChoice = ParserChoice()) -> list[tuple[str, str, str]]:
    return [(f.code, f.severity.value, f.message) for f in parser_findings([run], choice)]


def test_qwen3_coder_needs_an_xml_parser_hermes_returns_the_call_as_text() -> None:
    run = _run("Qwen3-Coder.jinja", _tokenizer("qwen3"))
    summary = run.summary()
    assert summary["vllm"]["tool_parsers"] == ["qwen3_coder", "qwen3_xml", "seed_oss"]
    assert summary["sglang"]["tool_parsers"] == ["qwen3_coder", "step3p5"]
    assert summary["llama.cpp"]["tool_parsers"] == ["qwen3-coder"]
    # smg and Dynamo parse in Rust, under their own names; Dynamo's MiniJinja writes the nested argument compactly
    assert (summary["smg"]["tool_parsers"], summary["dynamo"]["tool_parsers"]) == (
        ["qwen_xml", "qwen_coder", "nemotron"],
        ["qwen3_coder", "nemotron_nano"],
    )
    assert '<parameter=filter>\n{"units":"celsius","days":[1,2],"strict":true}\n' in run.renders["dynamo"]
    # TGI passes no tool_calls (a null content becomes the calls serialized, arguments encoded twice), and holds a tool
    # request to its own JSON grammar
    assert run.renders["tgi"].startswith(
        'its own turn: [{"id":"tokaudit1","type":"function","function":{"description":null,'
        '"name":"tokaudit_probe","arguments":"\\"{'
    )
    assert _row(run, "tgi", "grammar", None).tool_calls == "constrained"
    hermes = _row(run, "vllm", "hermes", None)
    assert (hermes.tool_calls, hermes.stage) == ("lost", "format")
    assert hermes.outcome.content.startswith(
        "<tool_call>\n<function=tokaudit_probe>\n<parameter=city>\nSão Paulo <Centro>\n"
    )
    assert _findings(run) == [
        (
            "TA820",
            "note",
            "tool calls of chat_template.jinja recovered by vllm: qwen3_coder, qwen3_xml, seed_oss; "
            "sglang: qwen3_coder, step3p5; smg: qwen_xml, qwen_coder, nemotron; tgi: its own JSON grammar, not the "
            "template's format; llama.cpp: qwen3-coder; dynamo: qwen3_coder, nemotron_nano",
        )
    ]


def test_qwen3_0_6b_hermes_and_qwen3_recover_call_and_reasoning_qwen3_coder_loses_the_call() -> None:
    run = _run("Qwen-Qwen3-0.6B.jinja", _tokenizer("qwen3"))
    ok = _row(run, "vllm", "hermes", "qwen3")
    assert (ok.tool_calls, ok.reasoning, ok.stream_differs, ok.skip_special_tokens) == ("ok", "ok", None, False)
    assert ok.outcome.calls == (Call(SENTINEL_NAME, SENTINEL_ARGUMENTS),)
    coder = _row(run, "vllm", "qwen3_coder", "qwen3")
    assert (coder.tool_calls, coder.reasoning, coder.stage) == ("lost", "ok", "format")
    assert _row(run, "sglang", "qwen25", "qwen3").tool_calls == "ok"


def test_llama_3_1_template_with_a_llama_3_0_tokenizer_is_refused_by_vllm_llama3_json(tmp_path: Path) -> None:
    model = parser_data.model_dir(
        _tokenizer("llama3"), _template("meta-llama-Llama-3.1-8B-Instruct.jinja"), tmp_path / "m"
    )
    out = run_cli("template", str(model), "--stack", "vllm", "--tool-parser", "llama3_json", "--format", "json")
    assert out.exit_code == 1, out.stderr
    doc = json.loads(out.stdout)
    startup = [f for f in doc["findings"] if f["code"] == "TA822"]
    assert [(f["severity"], f["message"], f["details"]["stacks"]) for f in startup] == [
        ("error", "vllm refuses the tool parser llama3_json: the tokenizer has no token <|python_tag|>", ["vllm"])
    ]
    assert [(r["stack"], r["tool_parser"], r["tool_calls"], r["stage"]) for r in doc["parsers"]] == [
        ("vllm", "llama3_json", "refused", "startup")
    ]
    # SGLang's llama3 detector takes no such check: it reads the bare JSON the template teaches
    assert (
        _row(_run("meta-llama-Llama-3.1-8B-Instruct.jinja", _tokenizer("llama3")), "sglang", "llama3", None).tool_calls
        == "ok"
    )


def test_deepseek_v3_1_with_v3_tokenizer_only_deepseek_v31_recovers_the_call_and_think_parsers_are_refused() -> None:
    tokenizer = _tokenizer("deepseek-v3")
    run = _run("deepseek-ai-DeepSeek-V3.1.jinja", tokenizer)
    assert run.summary()["vllm"]["tool_parsers"] == ["deepseek_v31"]
    assert _row(run, "vllm", "deepseek_v3", None).stage == "format"
    assert (
        _row(run, "vllm", None, "deepseek_r1").reason
        == "vllm refuses the reasoning parser deepseek_r1: the tokenizer has no token <think>"
    )
    # deepseek_v3 is the identity parser unless the request sets thinking: then it is deepseek_r1, refused
    assert _row(run, "vllm", "deepseek_v31", "deepseek_v3").tool_calls == "ok"
    thinking = _run(
        "deepseek-ai-DeepSeek-V3.1.jinja",
        tokenizer,
        ParserChoice(("vllm",), "deepseek_v31", "deepseek_v3", (("thinking", True),)),
    )
    assert _findings(thinking, ParserChoice(("vllm",), "deepseek_v31", "deepseek_v3")) == [
        ("TA822", "error", "vllm refuses the reasoning parser deepseek_v3: the tokenizer has no token <think>"),
        (
            "TA825",
            "note",
            "the generation prompt of chat_template.jinja opens reasoning ('<｜Assistant｜><think>'): output cut by "
            "max_tokens is "
            "reasoning, not content; enable_thinking=false turns it off",
        ),
    ]


def test_deepseek_v31_streamed_in_bursts_truncates_the_arguments() -> None:
    run = _run("deepseek-ai-DeepSeek-V3.1.jinja", _tokenizer("deepseek-v3"))
    row = _row(run, "vllm", "deepseek_v31", None)
    assert (row.tool_calls, row.stream_differs) == ("ok", [2, 3, 4, 6, 7, 8])
    streamed = row.details["streamed"]["calls"][0]["arguments"]
    assert isinstance(streamed, str) and streamed.startswith('{"city": "São Paulo <Centro>"')
    assert _row(run, "sglang", "deepseekv31", None).stream_differs is None


def _kimi_and_glm(tmp_path: Path) -> list[tuple[str, ParserRun]]:
    glm = parser_data.glm_tokenizer(tmp_path / "glm")
    if glm is None:
        pytest.skip("real tokenizer qwen3 not fetched (scripts/fetch_real_tokenizers.py)")
    return [
        ("kimi_k2", _run("moonshotai-Kimi-K2.jinja", ROOT / "fixtures" / "kimi-k2.5")),
        ("glm45", _run("GLM-4.6.jinja", glm)),
    ]


def test_kimi_k2_and_glm_4_6_calls_survive_only_with_skip_special_tokens_off(tmp_path: Path) -> None:
    kimi, glm = (run for _, run in _kimi_and_glm(tmp_path))
    k = _row(kimi, "vllm", "kimi_k2", None)
    assert (k.tool_calls, k.skip_special_tokens, k.without_tools) == ("ok", False, "lost")
    assert (
        _row(kimi, "sglang", "kimi_k2", None).without_tools,
        _row(kimi, "llama.cpp", "kimi-k2", None).tool_calls,
    ) == ("lost", "ok")
    # vLLM's glm45 engine keeps special tokens for every request; SGLang only for requests with tools
    assert (_row(glm, "vllm", "glm45", None).without_tools, _row(glm, "sglang", "glm45", None).without_tools) == (
        None,
        "lost",
    )
    choice = ParserChoice(("vllm",), "kimi_k2")
    named = parser_findings([_run("moonshotai-Kimi-K2.jinja", ROOT / "fixtures" / "kimi-k2.5", choice)], choice)
    assert [(f.code, f.severity.value, f.details["stage"]) for f in named] == [("TA820", "note", "skip_special_tokens")]
    assert named[0].message == (
        "vllm kimi_k2: the call comes back only because the request carries tools; a request without tools keeps "
        "skip_special_tokens on and loses its markers"
    )


def test_qwq_hermes_with_deepseek_r1_loses_the_call_to_reasoning_unless_streamed(tmp_path: Path) -> None:
    model = parser_data.model_dir(_tokenizer("qwen3"), _template("Qwen-QwQ-32B.jinja"), tmp_path / "qwq")
    out = run_cli(
        "template",
        str(model),
        "--stack",
        "vllm",
        "--tool-parser",
        "hermes",
        "--reasoning-parser",
        "deepseek_r1",
        "--format",
        "json",
    )
    assert out.exit_code == 1
    doc = json.loads(out.stdout)
    codes = [(f["code"], f["severity"]) for f in doc["findings"] if f["code"] >= "TA820"]
    assert codes == [("TA820", "error"), ("TA821", "error"), ("TA823", "warning"), ("TA824", "warning")]
    lost = next(f for f in doc["findings"] if f["code"] == "TA820")
    assert lost["message"] == (
        "vllm hermes+deepseek_r1: the tool call chat_template.jinja teaches does not come back: the reasoning "
        "parser took the call into reasoning"
    )
    stream = next(f for f in doc["findings"] if f["code"] == "TA823")
    assert stream["details"]["steps"] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert [c["name"] for c in stream["details"]["streamed"]["calls"]] == [SENTINEL_NAME]
    assert stream["details"]["whole"]["calls"] == [] and SENTINEL_NAME in stream["details"]["whole"]["reasoning"]
    row = doc["parsers"][0]
    assert (row["tool_calls"], row["reasoning"], row["stage"]) == ("lost", "overran", "reasoning")


def test_unknown_parser_or_stack_is_exit_2_naming_the_option(tmp_path: Path) -> None:
    model = parser_data.model_dir(_tokenizer("qwen3"), _template("Qwen-QwQ-32B.jinja"), tmp_path / "qwq")
    out = run_cli("template", str(model), "--stack", "vllm", "--tool-parser", "hermez")
    assert out.exit_code == 2 and out.stdout == ""
    assert out.stderr.startswith(
        "tokaudit: error: key --tool-parser: unknown tool parser 'hermez' for vllm (choose from apertus, "
        "cohere_command3, "
    )
    out = run_cli("template", str(model), "--stack", "tgx,vllm")
    assert (out.exit_code, out.stderr.splitlines()[0]) == (
        2,
        "tokaudit: error: key --stack: unknown stack 'tgx' (choose from transformers, vllm, sglang, smg, tgi, "
        "mistral.rs, llama.cpp, dynamo)",
    )
    out = run_cli(
        "template", str(model), "--stack", "transformers,mistral.rs", "--reasoning-parser", "qwen3"
    )  # no parsers
    assert (out.exit_code, out.stderr.splitlines()[0]) == (
        2,
        "tokaudit: error: key --reasoning-parser: no selected stack has a parser round trip (choose from vllm, "
        "sglang, smg, tgi, "
        "llama.cpp, dynamo)",
    )
    out = run_cli("template", str(model), "--chat-template-kwargs", "[1]")
    assert (out.exit_code, out.stderr.splitlines()[0]) == (
        2,
        "tokaudit: error: key --chat-template-kwargs: expected a JSON object",
    )


def test_pyproject_names_the_deploy_parsers_for_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = parser_data.model_dir(_tokenizer("qwen3"), _template("Qwen-QwQ-32B.jinja"), tmp_path / "qwq")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.tokaudit]\nstacks = ["vllm"]\ntool-parser = "hermes"\nreasoning-parser = "deepseek_r1"\n'
    )
    monkeypatch.chdir(tmp_path)
    out = run_cli("scan", str(model), "--format", "json", "--select", "TA82")
    assert out.exit_code == 1, out.stderr
    assert [(f["code"], f["severity"]) for f in json.loads(out.stdout)["findings"]] == [
        ("TA820", "error"),
        ("TA821", "error"),
        ("TA823", "warning"),
        ("TA824", "warning"),
    ]
    (tmp_path / "pyproject.toml").write_text("[tool.tokaudit]\ntool-parser = 3\n")
    out = run_cli("scan", str(model))
    assert (out.exit_code, out.stderr.strip()) == (
        2,
        f"tokaudit: error: {tmp_path / 'pyproject.toml'} (key tool.tokaudit.tool-parser): expected a parser name",
    )


# --- the grammars on hand-written outputs -------------------------------------------------------------------------

ARGS = {"q": 'a "b" <c> ü', "n": {"x": [1, None]}}


@pytest.mark.parametrize(
    ("grammar", "markers", "text"),
    [
        (
            "json-tags",
            ("<tool_call>", "</tool_call>"),
            '<tool_call>\n{"name": "f", "arguments": {"q": "a \\"b\\" <c> ü", "n": {"x": [1, null]}}}\n</tool_call>',
        ),
        (
            "bare-json",
            ("<|python_tag|>",),
            '{"name": "f", "parameters": {"q": "a \\"b\\" <c> ü", "n": {"x": [1, null]}}}',
        ),
        (
            "sep-json",
            ("<A>", "<Z>", "<a>", "<z>", "<s>"),
            '<A><a>f<s>{"q": "a \\"b\\" <c> ü", "n": {"x": [1, null]}}<z><Z>',
        ),
        (
            "sep-fenced",
            ("<A>", "<Z>", "<a>", "<z>", "<s>"),
            '<A><a>function<s>f\n```json\n{"q": "a \\"b\\" <c> ü", "n": {"x": [1, null]}}\n```<z><Z>',
        ),
        (
            "section-calls",
            ("<S>", "<E>", "<b>", "<g>", "<e>"),
            '<S><b>functions.f:0<g>{"q": "a \\"b\\" <c> ü", "n": {"x": [1, null]}}<e><E>',
        ),
        ("name-args", ("[TOOL_CALLS]", "[ARGS]"), '[TOOL_CALLS]f[ARGS]{"q": "a \\"b\\" <c> ü", "n": {"x": [1, null]}}'),
        (
            "json-array",
            ("<|tool_call|>",),
            '<|tool_call|>[{"name": "f", "arguments": {"q": "a \\"b\\" <c> ü", "n": {"x": [1, null]}}}]',
        ),
        ("pythonic", (), '[f(q=\'a "b" <c> ü\', n={"x": [1, None]})]'),
        (
            "harmony",
            ("<|message|>", "<|call|>"),
            "<|start|>assistant to=functions.f<|channel|>commentary json<|message|>"
            '{"q": "a \\"b\\" <c> ü", "n": {"x": [1, null]}}<|call|>',
        ),
        (
            "arg-kv",
            ("<tool_call>", "</tool_call>", "<k>", "</k>", "<v>", "</v>"),
            '<tool_call>f\n<k>q</k><v>a "b" <c> ü</v>\n<k>n</k><v>{"x": [1, null]}</v></tool_call>',
        ),
        (
            "xml-function",
            ("<tool_call>", "</tool_call>"),
            '<tool_call>\n<function=f>\n<parameter=q>\na "b" <c> ü\n</parameter>\n'
            '<parameter=n>\n{"x": [1, null]}\n</parameter>\n</function>\n</tool_call>',
        ),
        (
            "invoke",
            ("<m>", "</m>", "<invoke name=", "</invoke>", "<parameter name=", "</parameter>"),
            '<m>\n<invoke name="f">\n<parameter name="q">a "b" <c> ü</parameter>\n<parameter name="n">{"x": [1, '
            "null]}</parameter>\n</invoke>\n</m>",
        ),
        (
            "json-block",
            ("<|START_ACTION|>", "<|END_ACTION|>"),
            '<|START_ACTION|>[\n {"tool_call_id": "0", "tool_name": "f", "parameters": '
            '{"q": "a \\"b\\" <c> ü", "n": {"x": [1, null]}}}\n]<|END_ACTION|>',
        ),
        (
            "json-block",
            ("<|tools_prefix|>", "<|tools_suffix|>"),
            '<|tools_prefix|>[{"f": {"q": "a \\"b\\" <c> ü", "n": {"x": [1, null]}}}]<|tools_suffix|>',
        ),
        (
            "gemma4",
            ("<|tool_call>", "<tool_call|>", '<|"|>'),
            '<|tool_call>call:f{n:{x:[1,null]},q:<|"|>a "b" <c> ü<|"|>}<tool_call|>',
        ),
        (
            "xtml",
            ("<|open|>", "<|close|>", "<|sep|>"),
            '<|open|>tools<|sep|><|open|>call tool="f" index="1"<|sep|><|open|>argument key="q" '
            'type="string"<|sep|>a "b" <c> ü<|close|>argument<|sep|><|open|>argument key="n" '
            'type="object"<|sep|>{"x": [1, null]}<|close|>argument<|sep|><|close|>call<|sep|>'
            "<|close|>tools<|sep|>",
        ),
        (
            "minimax-m3",
            ("]<]minimax[>[", "<tool_call>", "</tool_call>"),
            ']<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name="f">]<]minimax[>[<q>'
            'a "b" <c> ü]<]minimax[>[</q>]<]minimax[>[<n>]<]minimax[>[<x>]<]minimax[>['
            "<item>1]<]minimax[>[</item>]<]minimax[>[<item>null]<]minimax[>[</item>"
            "]<]minimax[>[</x>]<]minimax[>[</n>]<]minimax[>[</invoke>\n]<]minimax[>["
            "</tool_call>",
        ),
        (
            "lfm2",
            ("<|tool_call_start|>", "<|tool_call_end|>"),
            '<|tool_call_start|>[f(q=\'a "b" <c> ü\', n={"x": [1, null]})]<|tool_call_end|>',
        ),
        (
            "cdata-xml",
            ("<function name=", "</function>", "<param name=", "</param>"),
            '<function name="f"><param name="q"><![CDATA[a "b" <c> ü]]></param><param name="n">{\'x\': [1, '
            "None]}</param></function>",
        ),
        (
            "cdata-xml-json",
            ("<function name=", "</function>", "<param name=", "</param>"),
            '<function name="f"><param name="q">a "b" <c> ü</param><param name="n">{"x": [1, null]}</param></function>',
        ),
    ],
)
def test_each_grammar_reads_its_format_with_quotes_angle_brackets_non_ascii_and_nesting(
    grammar: str, markers: tuple[str, ...], text: str
) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "f",
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "object"}}},
            },
        }
    ]
    parsed = GRAMMARS[grammar](
        "Sure. " + text if grammar in ("json-tags", "sep-json", "name-args") else text, markers, tools
    )
    assert parsed.calls == (Call("f", ARGS),), parsed.error
    assert parsed.content == ("Sure. " if grammar in ("json-tags", "sep-json", "name-args") else None)


def test_a_call_whose_arguments_do_not_parse_is_returned_as_content() -> None:
    text = '<tool_call>\n{"name": "f", "arguments": {"q": "unterminated}\n</tool_call>'
    parsed = GRAMMARS["json-tags"](text, ("<tool_call>", "</tool_call>"), None)
    assert (parsed.calls, parsed.content, parsed.error) == ((), text, "the text after <tool_call> is not a JSON call")


def test_reasoning_split_follows_each_stack() -> None:
    text = 'R</think>\n\n<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>'
    hermes = find_tool_parser("vllm", "hermes")
    r1 = find_reasoning_parser("vllm", "deepseek_r1")
    assert parse_whole(text, hermes, r1, [SENTINEL_TOOL], "<|im_start|>assistant\n<think>\n").reasoning == "R"
    # SGLang's qwen3 needs the prompt to open reasoning; vLLM's starts in reasoning unless enable_thinking is false
    sg = find_reasoning_parser("sglang", "qwen3")
    assert parse_whole(text, hermes, sg, [SENTINEL_TOOL], "<|im_start|>assistant\n").reasoning is None
    vq = find_reasoning_parser("vllm", "qwen3")
    assert parse_whole(text, hermes, vq, [SENTINEL_TOOL], "<|im_start|>assistant\n").reasoning == "R"
    assert (
        parse_whole(text, hermes, vq, [SENTINEL_TOOL], "<|im_start|>assistant\n", {"enable_thinking": False}).reasoning
        is None
    )


def test_tgi_grammar_reads_its_function_json_and_no_tool_as_content() -> None:
    parsed = GRAMMARS["tgi-json"](
        '{"function": {"_name": "f", "q": "a \\"b\\" <c> ü", "n": {"x": [1, null]}}}', (), None
    )
    assert (parsed.calls, parsed.content) == ((Call("f", ARGS),), None)
    parsed = GRAMMARS["tgi-json"]('{"function": {"_name": "no_tool", "content": "Hi."}}', (), None)
    assert (parsed.calls, parsed.content) == ((), "Hi.")


def test_every_parser_row_names_a_known_grammar_stack_and_source() -> None:
    assert all(p.grammar in GRAMMARS and p.stack in STACKS and p.source for p in TOOL_PARSERS)
    # one source of truth per stack: a profile names its parser data; every stack with a profile is named by one
    from tokaudit.template.stacks import PROFILES

    assert {p.id: p.parsers for p in PROFILES if p.parsers} == {s: s for s in STACKS if s != "ollama"}
    assert profile("smg").tool_parsers[:3] == ("json", "mistral", "qwen") and profile("tgi").tool_parsers == (
        "grammar",
    )
    vllm = {p.name for p in TOOL_PARSERS if p.stack == "vllm"}
    assert {
        "hermes",
        "qwen3_coder",
        "qwen3_xml",
        "llama3_json",
        "llama4_json",
        "pythonic",
        "mistral",
        "deepseek_v3",
        "deepseek_v31",
        "deepseek_v32",
        "kimi_k2",
        "glm45",
        "glm47",
        "openai",
        "minimax_m2",
        "granite",
        "seed_oss",
    } <= vllm


def test_replay_runs_the_stack_parser_on_the_stream_as_captured(tmp_path: Path) -> None:
    """DeepSeek-V3.1's tool call, captured in steps of 3 ids: vLLM's deepseek_v31 streaming path drops the argument text
    that arrives with the call's end marker (what vLLM 0.33.0 itself returned on these ids, parser_golden.jsonl)."""
    case = next(
        c
        for c in map(
            json.loads, (ROOT / "tests" / "data" / "parser_cases.jsonl").read_text(encoding="utf-8").splitlines()
        )
        if c["case"] == "deepseek-v3.1+v3-tokenizer"
    )
    ids = case["output_ids"]
    stream = tmp_path / "steps.jsonl"
    stream.write_text("".join(json.dumps({"ids": ids[i : i + 3]}) + "\n" for i in range(0, len(ids), 3)))
    out = run_cli(
        "replay",
        str(_tokenizer("deepseek-v3")),
        str(stream),
        "--stack",
        "vllm",
        "--tool-parser",
        "deepseek_v31",
        "--format",
        "json",
    )
    assert out.exit_code == 1, out.stderr
    doc = json.loads(out.stdout)
    parser = doc["parser"]
    assert (parser["skip_special_tokens"], parser["whole"]["calls"]) == (
        True,
        [{"name": SENTINEL_NAME, "arguments": SENTINEL_ARGUMENTS}],
    )
    golden = next(
        json.loads(line)
        for line in (ROOT / "tests" / "data" / "parser_golden.jsonl").read_text(encoding="utf-8").splitlines()[1:]
        if '"deepseek-v3.1+v3-tokenizer"' in line
        and '"tool_parser": "deepseek_v31", "reasoning_parser": null' in line
        and '"stack": "vllm"' in line
    )
    assert parser["streamed"]["calls"][0]["arguments"].endswith('"limit": ')
    assert golden["stream3"]["calls"][0]["arguments"] == parser["streamed"]["calls"][0]["arguments"]
    assert [f["code"] for f in doc["findings"] if f["code"] == "TA507"] == ["TA507", "TA507"]


def test_a_template_that_prints_arguments_as_they_come_is_rendered_with_the_json_string() -> None:
    """The Kimi-K2.5 fixture's template prints ``arguments`` as given: vLLM's dict would come out as Python's repr, so
    the turn the model learnt is rendered from the JSON string, and kimi_k2 recovers it."""
    from tokaudit.model.load import load_model
    from tokaudit.template.source import model_templates

    model = load_model(str(ROOT / "fixtures" / "kimi-k2.5"))
    run = run_template(model, model_templates(model)[0], ParserChoice())
    assert run.case is not None and '<|tool_call_argument_begin|>{"city": "São Paulo <Centro>"' in run.case.text
    assert {s: v["tool_parsers"] for s, v in run.summary().items()} == {
        "vllm": ["kimi_k2"],
        "sglang": ["kimi_k2"],
        "smg": ["kimik2"],
        "tgi": [],
        "llama.cpp": ["kimi-k2"],
        "dynamo": ["kimi_k2"],
    }


def test_llama_cpp_picks_its_specialised_parsers_in_chat_cpp_order_and_minicpm5_needs_json_values() -> None:
    """llama.cpp's server picks GigaChat 3's parser only without <|function_call|> (GigaChat 3.1 goes to the
    auto-parser), and its MiniCPM5 parser reads a non-string value as JSON: the template prints the object as a
    Python literal."""
    from tokaudit.parsers.tool_table import picked_by_template

    picks = {
        n: picked_by_template("llama.cpp", _template(n)).name
        for n in (  # type: ignore[union-attr]
            "GigaChat3-10B-A1.8B.jinja",
            "GigaChat3.1-10B-A1.8B.jinja",
            "MiniMax-M3.jinja",
            "google-gemma-4-31B-it.jinja",
            "openbmb-MiniCPM5-1B.jinja",
            "Qwen3-Coder.jinja",
        )
    }
    assert picks == {
        "GigaChat3-10B-A1.8B.jinja": "gigachat-v3",
        "GigaChat3.1-10B-A1.8B.jinja": "auto",
        "MiniMax-M3.jinja": "minimax-m3",
        "google-gemma-4-31B-it.jinja": "gemma4",
        "openbmb-MiniCPM5-1B.jinja": "minicpm5",
        "Qwen3-Coder.jinja": "qwen3-coder",
    }
    run = _run_text("openbmb-MiniCPM5-1B.jinja")
    lcpp, vllm = _row(run, "llama.cpp", "minicpm5", None), _row(run, "vllm", "minicpm5", None)
    assert (lcpp.tool_calls, lcpp.stage, lcpp.outcome.error) == ("lost", "format", "the value of filter is not JSON")
    assert vllm.tool_calls == "ok"
