"""``--parsers installed|auto``: the round trip through the installed vLLM / SGLang parser classes, in the bounded
worker (tokaudit.roundtrip.installed, tokaudit.parsers.installed).

Without the stacks (CI): the "not importable" exit, ``auto`` falling back to the grammars and saying so, the worker's
allow-list and the child's replies. With the golden venv of scripts/golden_parsers.py (vLLM 0.33.0 + SGLang 0.5.23 on
CPU, ~7.5 GB, not installable in CI): issue 30's cases through the real classes, which must agree with the grammars."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

import parser_data
from conftest import run_cli
from tokaudit.parsers.installed import probe
from tokaudit.roundtrip.choice import ParserChoice, resolve_parsers
from tokaudit.roundtrip.installed import LIMITS, MODULE
from tokaudit.worker import Worker, WorkerError

#: the golden venv (see scripts/golden_parsers.py): its interpreter and SGLang's separate site directory
GOLDEN_PYTHON = Path(os.environ.get("TOKAUDIT_GOLDEN_PYTHON", "/work/golden/venv/bin/python"))
GOLDEN_SITE = Path(os.environ.get("TOKAUDIT_GOLDEN_SITE", "/work/golden/sglang-site"))
STACKS_HERE = any(importlib.util.find_spec(m) is not None for m in ("vllm", "sglang"))
no_stacks = pytest.mark.skipif(
    STACKS_HERE, reason="vLLM or SGLang is importable in this venv: the 'not importable' path cannot run"
)
golden = pytest.mark.skipif(
    not (GOLDEN_PYTHON.is_file() and GOLDEN_SITE.is_dir()),
    reason=f"needs the golden venv with vLLM 0.33.0 and SGLang 0.5.23 ({GOLDEN_PYTHON}, SGLang in {GOLDEN_SITE}; "
    "TOKAUDIT_GOLDEN_PYTHON / TOKAUDIT_GOLDEN_SITE), not installable in CI",
)


def _model(tmp_path: Path, template: str, tokenizer: str = "qwen3") -> Path:
    text = parser_data.llamacpp_template(template)
    real = parser_data.real_model(tokenizer)
    if text is None or real is None:
        pytest.skip(
            "llama-cpp-python 0.3.36 sdist or a real tokenizer not in the real cache (scripts/fetch_real_tokenizers.py)"
        )
    return parser_data.model_dir(real, text, tmp_path / "m")


@no_stacks
def test_installed_names_the_stack_that_does_not_import_and_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _model(tmp_path, "Qwen-Qwen3-0.6B.jinja")
    monkeypatch.delenv("TOKAUDIT_STACK_PYTHON", raising=False)
    out = run_cli("template", str(model), "--stack", "sglang", "--parsers", "installed")
    assert (out.exit_code, out.stdout, out.stderr) == (
        2,
        "",
        "tokaudit: error: key --parsers: sglang is not importable in tokaudit's Python: ModuleNotFoundError: No "
        "module named 'sglang'\n",
    )
    out = run_cli("scan", str(model), "--stack", "vllm", "--parsers", "installed")
    assert (out.exit_code, out.stderr) == (
        2,
        "tokaudit: error: key --parsers: vllm is not importable in tokaudit's Python: ModuleNotFoundError: No module "
        "named 'vllm'\n",
    )
    monkeypatch.setenv("TOKAUDIT_STACK_PYTHON", str(tmp_path / "no-python"))
    out = run_cli("template", str(model), "--stack", "vllm", "--parsers", "installed")
    assert (out.exit_code, out.stderr) == (
        2,
        f"tokaudit: error: key --parsers: vllm is not importable in {tmp_path / 'no-python'}: the worker process died "
        "(cannot start a "
        "worker process: No such file or directory)\n",
    )


@no_stacks
def test_auto_without_the_stacks_runs_the_grammars_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = _model(tmp_path, "Qwen-Qwen3-0.6B.jinja")
    monkeypatch.delenv("TOKAUDIT_STACK_PYTHON", raising=False)
    args = ("template", str(model), "--stack", "vllm,sglang", "--tool-parser", "hermes", "--format", "json")
    auto, builtin = (json.loads(run_cli(*args, *extra).stdout) for extra in (("--parsers", "auto"), ()))
    assert auto["parser_choice"]["parsers"] == "auto" and builtin["parser_choice"]["parsers"] == "builtin"
    assert (
        auto["parser_choice"]["grammar"]
        == builtin["parser_choice"]["grammar"]
        == {"vllm": "built-in", "sglang": "built-in"}
    )
    assert [r["grammar"] for r in auto["parsers"]] == ["built-in", "built-in"]
    assert auto["parsers"] == builtin["parsers"]
    rich = run_cli(
        "template", str(model), "--stack", "vllm", "--tool-parser", "hermes", "--parsers", "auto", "--select", "TA82"
    )
    assert "    grammar: vllm built-in\n" in rich.stdout


def test_the_parsers_mode_is_checked_on_the_command_line_and_in_pyproject(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _model(tmp_path, "Qwen-Qwen3-0.6B.jinja")
    out = run_cli("template", str(model), "--parsers", "real")
    assert (out.exit_code, out.stderr) == (
        2,
        "tokaudit: error: key --parsers: unknown parsers mode 'real' (choose from builtin, installed, auto)\n",
    )
    (tmp_path / "pyproject.toml").write_text('[tool.tokaudit]\nparsers = "yes"\n')
    monkeypatch.chdir(tmp_path)
    out = run_cli("scan", str(model))
    assert (out.exit_code, out.stderr) == (
        2,
        f'tokaudit: error: {tmp_path / "pyproject.toml"} (key tool.tokaudit.parsers): expected "builtin", "installed" '
        'or "auto"\n',
    )
    (tmp_path / "pyproject.toml").write_text(
        '[tool.tokaudit]\nparsers = "auto"\nstacks = ["vllm"]\ntool-parser = "hermes"\n'
    )
    out = run_cli("template", str(model), "--format", "json", "--select", "TA82")
    assert json.loads(out.stdout)["parser_choice"]["parsers"] == "auto"
    assert ParserChoice(parsers="builtin").grammars == resolve_parsers(ParserChoice(parsers="builtin")).grammars == ()


def test_the_worker_runs_only_the_installed_parsers_module_and_sends_back_plain_data() -> None:
    worker = Worker(LIMITS, (f"{MODULE}:",))
    try:
        with pytest.raises(ValueError, match=r"^not a function this worker runs: 'tokaudit.worker:echo'$"):
            worker.call("tokaudit.worker:echo", 1)
        assert worker.call(f"{MODULE}:probe", "ollama") == {"error": "ValueError: no installed parsers for 'ollama'"}
        with pytest.raises(WorkerError, match=r"^no installed parsers for 'tgi'$") as raised:
            worker.call(f"{MODULE}:run_pairs", "tgi", ".", {}, [])
        assert raised.value.kind == "ValueError"
        if not STACKS_HERE:
            assert (
                worker.call(f"{MODULE}:probe", "vllm")
                == probe("vllm")
                == {"error": "ModuleNotFoundError: No module named 'vllm'"}
            )
    finally:
        worker.close()


# --- with the golden venv: the real classes ------------------------------------------------------------------------


@pytest.fixture
def golden_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKAUDIT_STACK_PYTHON", str(GOLDEN_PYTHON))
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(p for p in (str(GOLDEN_SITE), os.environ.get("PYTHONPATH", "")) if p)
    )


def _rows(doc: dict, *keys: str) -> list[tuple]:
    return [tuple(r[k] for k in keys) for r in doc["parsers"]]


@golden
def test_installed_vllm_and_sglang_recover_qwen3_0_6b_call_and_reasoning(tmp_path: Path, golden_env: None) -> None:
    model = _model(tmp_path, "Qwen-Qwen3-0.6B.jinja")
    args = (
        "template",
        str(model),
        "--stack",
        "vllm,sglang",
        "--tool-parser",
        "hermes",
        "--reasoning-parser",
        "qwen3",
        "--format",
        "json",
        "--select",
        "TA82",
    )
    out = run_cli(*args, "--parsers", "installed")
    assert out.exit_code == 0, out.stderr
    doc = json.loads(out.stdout)
    grammar = doc["parser_choice"]["grammar"]
    assert grammar["vllm"].startswith("installed (vllm ") and grammar["sglang"].startswith("installed (sglang ")
    keys = (
        "stack",
        "tool_parser",
        "reasoning_parser",
        "tool_calls",
        "reasoning",
        "stage",
        "skip_special_tokens",
        "stream_differs",
    )
    assert _rows(doc, *keys) == [
        ("vllm", "hermes", "qwen3", "ok", "ok", None, False, None),
        ("sglang", "hermes", "qwen3", "ok", "ok", None, False, None),
    ]
    assert [r["grammar"] for r in doc["parsers"]] == [grammar["vllm"], grammar["sglang"]]
    assert _rows(json.loads(run_cli(*args).stdout), *keys) == _rows(
        doc, *keys
    )  # the grammars agree with the real classes


@golden
def test_installed_vllm_refuses_llama3_json_on_a_llama_3_0_tokenizer_in_its_own_words(
    tmp_path: Path, golden_env: None
) -> None:
    model = _model(tmp_path, "meta-llama-Llama-3.1-8B-Instruct.jinja", "llama3")
    out = run_cli(
        "template",
        str(model),
        "--stack",
        "vllm",
        "--tool-parser",
        "llama3_json",
        "--parsers",
        "installed",
        "--format",
        "json",
    )
    assert out.exit_code == 1, out.stderr
    doc = json.loads(out.stdout)
    assert _rows(doc, "tool_calls", "stage") == [("refused", "startup")]
    startup = [f["message"] for f in doc["findings"] if f["code"] == "TA822"]
    assert len(startup) == 1 and startup[0].startswith("vllm refuses the tool parser llama3_json: ")
    assert "could not locate the bot token '<|python_tag|>' in the tokenizer" in startup[0]


@golden
def test_installed_vllm_puts_qwq_call_into_reasoning_whole_but_not_streamed(tmp_path: Path, golden_env: None) -> None:
    model = _model(tmp_path, "Qwen-QwQ-32B.jinja")
    out = run_cli(
        "template",
        str(model),
        "--stack",
        "vllm",
        "--tool-parser",
        "hermes",
        "--reasoning-parser",
        "deepseek_r1",
        "--parsers",
        "installed",
        "--format",
        "json",
    )
    assert out.exit_code == 1, out.stderr
    doc = json.loads(out.stdout)
    assert _rows(doc, "tool_calls", "reasoning", "stage", "stream_differs") == [
        ("lost", "overran", "reasoning", [1, 3, 8])
    ]
    assert [(f["code"], f["severity"]) for f in doc["findings"] if f["code"] >= "TA820"] == [
        ("TA820", "error"),
        ("TA821", "error"),
        ("TA823", "warning"),
        ("TA824", "warning"),
    ]
    streamed = next(f for f in doc["findings"] if f["code"] == "TA823")["details"]["streamed"]
    assert [c["name"] for c in streamed["calls"]] == ["tokaudit_probe"]


def test_the_child_module_imports_only_the_standard_library() -> None:
    source = (Path(__file__).resolve().parents[2] / "tokaudit" / "parsers" / "installed.py").read_text(encoding="utf-8")
    import ast

    top = [n for n in ast.parse(source).body if isinstance(n, (ast.Import, ast.ImportFrom))]
    names = sorted(
        {(a.name if isinstance(n, ast.Import) else n.module or "").split(".")[0] for n in top for a in n.names}
    )
    assert [m for m in names if m not in sys.stdlib_module_names and m != "__future__"] == []


@golden
def test_installed_sglang_forces_reasoning_as_its_server_decides_from_template_and_kwargs(
    tmp_path: Path, golden_env: None
) -> None:
    """SGLang's server starts the output inside reasoning when its template detection or the request says so
    (detect_reasoning_pattern, _get_reasoning_from_request): Qwen3's enable_thinking toggle (default on), and for a
    template with no toggle the detector's own default (kimi_k2: on). The grammars model the same decision
    (tokaudit.parsers.toggle): the Qwen2.5 row, where the generation prompt alone said "not forced", agrees."""
    model = _model(tmp_path, "Qwen-Qwen3-0.6B.jinja")
    args = (
        "template",
        str(model),
        "--stack",
        "sglang",
        "--tool-parser",
        "hermes",
        "--reasoning-parser",
        "qwen3",
        "--parsers",
        "installed",
        "--format",
        "json",
        "--select",
        "TA82",
    )
    on, off = (
        json.loads(run_cli(*args, *extra).stdout)["parsers"]
        for extra in ((), ("--chat-template-kwargs", '{"enable_thinking": false}'))
    )
    assert [(r["force_reasoning"], r["tool_calls"]) for r in (*on, *off)] == [(True, "ok"), (False, "ok")]
    qwen25 = parser_data.model_dir(
        parser_data.real_model("qwen3"),
        parser_data.llamacpp_template("Qwen-Qwen2.5-7B-Instruct.jinja"),
        tmp_path / "qwen25",
    )
    args = (
        "template",
        str(qwen25),
        "--stack",
        "sglang",
        "--reasoning-parser",
        "kimi_k2",
        "--format",
        "json",
        "--select",
        "TA82",
    )
    installed, builtin = (json.loads(run_cli(*args, *extra).stdout) for extra in (("--parsers", "installed"), ()))
    assert _rows(installed, "reasoning", "force_reasoning") == [("overran", True)]
    assert installed["parsers"][0]["parsed"]["reasoning"].startswith('<tool_call>\n{"name": "tokaudit_probe"')
    assert [f["message"] for f in installed["findings"]] == ["sglang kimi_k2: the call or content went into reasoning"]
    assert _rows(builtin, "reasoning", "force_reasoning") == [("overran", True)]
    assert builtin["findings"] == installed["findings"]
