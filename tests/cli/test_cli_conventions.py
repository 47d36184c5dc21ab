"""CLI conventions a ruff/pytest/pip-audit user expects, run as whole processes: help and version,
completion, usage lines, ``-o -``, ``--color``, ``COLUMNS``, ``--quiet``, verdicts, suppressed counts."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
import typer

from conftest import FIXTURES, run_cli
from tokaudit import __version__
from tokaudit.cli.app import build_app

KIMI = FIXTURES / "kimi-k2.5"
TINY = FIXTURES / "tiny-tiktoken"
COMMANDS = ("scan", "compare", "replay", "explain", "decode", "encode", "fuzz", "diff", "template")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def tokaudit(
    *args: object, env: dict[str, str] | None = None, cwd: Path | None = None, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m tokaudit ARGS`` in a child process (stdout is a pipe, as in CI)."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "tokaudit", *map(str, args)],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        input=input,
        timeout=300,
    )


@pytest.fixture(scope="session")
def kimi_json() -> str:
    """``scan KIMI --format json``'s stdout: three tests read the same whole-process run (~2.5 s of CPU each)."""
    return tokaudit("scan", KIMI, "--format", "json").stdout


@pytest.fixture(scope="session")
def kimi_wide() -> str:
    """``scan KIMI`` at 1,000 columns, the unwrapped report both column widths are compared with."""
    return tokaudit("scan", KIMI, env={"COLUMNS": "1000"}).stdout


# --- help, version, completion ------------------------------------------------------------------


@pytest.mark.parametrize("command", [(), *((c,) for c in COMMANDS)])
def test_dash_h_is_help(command: tuple[str, ...]) -> None:
    short, long = run_cli(*command, "-h"), run_cli(*command, "--help")
    assert short.exit_code == long.exit_code == 0
    assert short.stdout == long.stdout and short.stdout.startswith(f"Usage: tokaudit {' '.join(command)}".rstrip())


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_the_common_output_options(command: str) -> None:
    out = run_cli(command, "--help", env={"COLUMNS": "200"}).stdout
    for option in ("--format", "-o, --output FILE", "--fail-on", "--color auto|always|never", "-q, --quiet", "--debug"):
        assert option in out, (command, option)


def test_version_lists_libraries_and_optional_ones() -> None:
    proc = tokaudit("--version")
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and proc.stderr == ""
    assert lines[0] == f"tokaudit {__version__}"
    assert f"tokenizers {version('tokenizers')}" in lines
    assert f"tiktoken {version('tiktoken')}" in lines
    assert f"sentencepiece {version('sentencepiece')}" in lines
    assert f"minijinja {version('minijinja')}" in lines
    assert f"transformers {version('transformers')} (optional: present)" in lines
    assert f"fastokens {version('fastokens')} (optional: present)" in lines
    assert f"llama-cpp-python {version('llama-cpp-python')} (optional: present)" in lines


def test_shell_completion_script_and_completions() -> None:
    # With shellingham installed, typer's --show-completion is a flag that detects the shell from the ancestor
    # processes, which a test runner does not guarantee ("Shell  not supported" under some pytest-xdist runs);
    # typer's own switch makes it take the shell as its value, so the script asked for is the one checked.
    script = tokaudit("--show-completion", "bash", env={"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"})
    assert script.returncode == 0 and "_TOKAUDIT_COMPLETE=complete_bash" in script.stdout
    # what bash asks the program when the user presses TAB after "tokaudit sc" / "--format "
    exe = Path(sys.executable).parent / "tokaudit"
    env = {**os.environ, "_TOKAUDIT_COMPLETE": "complete_bash"}
    words = subprocess.run(
        [exe], env={**env, "COMP_WORDS": "tokaudit sc", "COMP_CWORD": "1"}, capture_output=True, text=True
    )
    assert words.stdout.split() == ["scan"]
    formats = subprocess.run(
        [exe], env={**env, "COMP_WORDS": "tokaudit scan --format ", "COMP_CWORD": "3"}, capture_output=True, text=True
    )
    assert formats.stdout.split() == ["rich", "json", "sarif", "junit", "markdown", "github", "jsonl", "concise"]


# --- usage lines and placeholders ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "usage"),
    [
        ("scan", "Usage: tokaudit scan [OPTIONS] [TARGET...]"),  # optional: --targets-from may give them
        ("compare", "Usage: tokaudit compare [OPTIONS] TARGET"),
        ("replay", "Usage: tokaudit replay [OPTIONS] TARGET STREAM"),
        ("explain", "Usage: tokaudit explain [OPTIONS] TARGET ID|TEXT..."),
        ("decode", "Usage: tokaudit decode [OPTIONS] TARGET IDS..."),
        ("encode", "Usage: tokaudit encode [OPTIONS] TARGET TEXT"),
        ("fuzz", "Usage: tokaudit fuzz [OPTIONS] TARGET"),
        ("diff", "Usage: tokaudit diff [OPTIONS] TARGET_A [TARGET_B]"),
    ],
)
def test_usage_line_names_arguments_plainly(command: str, usage: str) -> None:
    out = tokaudit(command, "--help", env={"COLUMNS": "200"}).stdout
    assert out.splitlines()[0] == usage
    assert not re.search(r"[{}]|<str>|<int|<integer|<file>|<path>|<text>", out), out


@pytest.mark.parametrize(
    ("command", "placeholders"),
    [
        (
            "compare",
            ("--backends LIST", "--corpus PATH", "--pat-str REGEX", "--sample N", "--unicode-sweep planes|full|off"),
        ),
        ("replay", ("--detokenizers LIST", "--prompt IDS", "--stop-id N", "--stream-format json|ids|jsonl|sse")),
        ("decode", ("--backend NAME",)),
        ("fuzz", ("--backends LIST", "-n, --iterations N", "--seed N")),
    ],
)
def test_other_commands_placeholders(command: str, placeholders: tuple[str, ...]) -> None:
    out = tokaudit(command, "--help", env={"COLUMNS": "200"}).stdout
    for placeholder in placeholders:
        assert placeholder in out, placeholder


def test_option_placeholders_say_what_they_take() -> None:
    out = tokaudit("scan", "--help", env={"COLUMNS": "200"}).stdout
    for placeholder in (
        "--select RULES",
        "--ignore RULES",
        "-j, --jobs N",
        "--baseline FILE",
        "-o, --output FILE",
        "--revision REV",
        "--color auto|always|never",
        "--fail-on error|warning|note|never",
        "--targets-from FILE",
    ):
        assert placeholder in out, placeholder


# --- output: -o -, --color, COLUMNS, trailing spaces --------------------------------------------


def test_output_dash_is_stdout(tmp_path: Path, kimi_json: str) -> None:
    proc = tokaudit("scan", KIMI, "--format", "json", "-o", "-", cwd=tmp_path)
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["findings"] == json.loads(kimi_json)["findings"]
    assert not (tmp_path / "-").exists()


def test_color_always_never_and_environment() -> None:
    always = tokaudit("scan", TINY, "--color", "always", env={"NO_COLOR": "1"}).stdout
    assert "\x1b[1;31m✗ FAIL" in always or "\x1b[1;32m✓ PASS" in always
    never = tokaudit("scan", TINY, "--color", "never", env={"FORCE_COLOR": "1"}).stdout
    assert "\x1b[" not in never and never == ANSI.sub("", always)
    piped = tokaudit("scan", TINY).stdout  # auto, stdout a pipe
    assert "\x1b[" not in piped and piped == never
    forced = tokaudit("scan", TINY, env={"FORCE_COLOR": "1"}).stdout
    assert "\x1b[" in forced and ANSI.sub("", forced) == never


@pytest.mark.parametrize("columns", [60, 200])
def test_piped_output_follows_columns_without_trailing_spaces(columns: int, kimi_wide: str) -> None:
    out = tokaudit("scan", KIMI, env={"COLUMNS": str(columns)}).stdout
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= columns
    assert [line for line in lines if line != line.rstrip()] == []
    assert out.count("…") == kimi_wide.count("…")  # wrapped, never cut: only the ellipses the messages themselves hold
    if columns == 200:
        assert "  vocabulary  tiktoken.model · declared size 163840 (config.json text_config.vocab_size)" in lines
        assert max(len(line) for line in lines) > 120  # really uses the width
    else:
        # wrapped lines stay indented: only headings, badges and the verdict start at column 0
        assert [
            line for line in lines if line and not line.startswith(" ") and not line.startswith(("tokaudit scan", "✗"))
        ] == []
        assert " ERROR  TA101 vocab-gap" in lines and "  config.json:17 (text_config.vocab_size)" in lines
        joined = re.sub(r"\n\s+", "", out)
        assert "tokenization_kimi.TikTokenTokenizer" in joined  # folded across lines, not truncated


def test_without_columns_a_pipe_gets_120() -> None:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    proc = subprocess.run(
        [sys.executable, "-m", "tokaudit", "scan", str(KIMI)], capture_output=True, text=True, env=env
    )
    assert 100 < max(len(line) for line in proc.stdout.splitlines()) <= 120


def test_fuzz_table_at_60_columns_keeps_every_class() -> None:
    out = tokaudit("fuzz", KIMI, "--backends", "tiktoken,strict", "-n", "200", env={"COLUMNS": "60"}).stdout
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 60 and "…" not in out.split("\n\n")[0]  # the table: no cell cut
    doc = json.loads(tokaudit("fuzz", KIMI, "--backends", "tiktoken,strict", "-n", "200", "--format", "json").stdout)
    tiktoken = next(b for b in doc["backends"] if b["name"] == "tiktoken")
    for cls, c in tiktoken["by_class"].items():  # each class with its counts, whole on one line
        assert any(f"{cls} {c['count']} ({c['in_declared_range']})" in line for line in lines), cls


# --- quiet, verdicts, suppressed findings -------------------------------------------------------


def test_quiet_is_findings_and_verdict_only() -> None:
    proc = tokaudit("scan", KIMI, "-q")
    out = proc.stdout
    full = tokaudit("scan", KIMI)
    assert proc.returncode == 1 and proc.stderr == ""
    assert "loaders" not in out and "artifacts" not in out and "vocabulary" not in out
    assert out.startswith(" ERROR  TA101 vocab-gap")
    # exactly the findings and the verdict of the full report, in the same order
    assert out == full.stdout[full.stdout.index(" ERROR  TA101") :]
    json_quiet = tokaudit("scan", KIMI, "-q", "--format", "json")
    assert json_quiet.stderr == "" and json.loads(json_quiet.stdout)["summary"]["error"] == full.stdout.count(
        " ERROR  "
    )


def test_explain_and_decode_report_without_a_verdict() -> None:
    explain = tokaudit("explain", KIMI, "163586", "--backends", "tiktoken")
    assert explain.returncode == 0 and "PASS" not in explain.stdout and "FAIL" not in explain.stdout
    # said once: the key already names the loader rule
    assert "tokenizer_config.json (added_tokens_decoder.163586)\n" in explain.stdout
    assert "(added_tokens_decoder (special))" not in explain.stdout
    decode = tokaudit("decode", TINY, "1000", "300")
    assert decode.returncode == 0 and "PASS" not in decode.stdout
    crash = tokaudit("decode", TINY, "1003", "--backend", "strict")  # 1003 is a gap inside the declared range
    assert crash.returncode == 1 and crash.stdout.splitlines()[-1].startswith("✗ FAIL: 1 error")
    md = tokaudit("explain", KIMI, "163586", "--backends", "tiktoken", "--format", "markdown").stdout
    assert md.startswith("## tokaudit explain\n") and "PASS" not in md
    github = tokaudit("explain", KIMI, "163586", "--backends", "tiktoken", "--format", "github").stdout
    assert github.splitlines()[-1].startswith(f"tokaudit {__version__} explain: 0 errors, 0 warnings, 0 notes (python ")


def test_suppressed_findings_show_in_verdict_markdown_and_junit(tmp_path: Path, kimi_json: str) -> None:
    baseline = tmp_path / "baseline.json"
    baseline.write_text(kimi_json)
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.tokaudit]\n[[tool.tokaudit.per-target-ignores]]\ntarget = "{KIMI}"\n'
        'rules = ["TA401", "TA105"]\nreason = "we stream with a byte buffer"\n'
    )
    args = ("scan", KIMI, "--baseline", baseline)
    codes = [f["code"] for f in json.loads(baseline.read_text())["findings"]]
    ignored = codes.count("TA401") + codes.count("TA105")
    baselined = len(codes) - ignored
    assert ignored == 2 and baselined >= 5
    rich = tokaudit(*args, cwd=tmp_path)
    assert rich.returncode == 0
    assert rich.stdout.splitlines()[-1] == (
        f"✓ PASS: 0 errors, 0 warnings, 0 notes (--fail-on error; {baselined} baselined, 2 ignored)"
    )
    md = tokaudit(*args, "--format", "markdown", cwd=tmp_path).stdout
    assert f"0 errors, 0 warnings, 0 notes (0 at or above `--fail-on error`, {baselined} baselined, 2 ignored)" in md
    junit = tokaudit(*args, "--format", "junit", cwd=tmp_path).stdout
    assert f'<property name="suppressed.baselined" value="{baselined}" />' in junit
    assert '<property name="suppressed.ignored" value="2" />' in junit


# --- JSON contract, token tables, wording -------------------------------------------------------


def test_every_json_finding_has_ids_and_count(kimi_json: str) -> None:
    doc = json.loads(kimi_json)
    for f in doc["findings"]:
        assert "ids" in f and "count" in f, f["code"]
    by_code = {f["code"]: f for f in doc["findings"]}
    assert (by_code["TA301"]["ids"], by_code["TA301"]["count"]) == (None, None)
    assert (by_code["TA302"]["ids"], by_code["TA302"]["count"]) == (None, None)
    assert by_code["TA101"]["count"] == 233


def test_hex_bytes_keep_their_spaces_in_token_tables() -> None:
    out = tokaudit("decode", TINY, "258", "1000").stdout  # 258 is E3 81, the start of a 3-byte character
    assert "    0   258  <E3 81>  partial UTF-8" in out.splitlines()
    assert "␣" not in out


def test_one_id_is_singular() -> None:
    out = tokaudit("diff", FIXTURES / "oncall" / "tiny-changed-rank", TINY).stdout
    assert "1 id the draft maps decodes to other bytes in the target" in out and "1 ids" not in out


# --- one meaning everywhere: special tokens, revisions ------------------------------------------


def test_decode_and_replay_share_the_special_token_flags_and_default() -> None:
    for command in ("decode", "replay"):
        out = tokaudit(command, "--help", env={"COLUMNS": "200"}).stdout
        assert "--skip-special-tokens / --keep-special-tokens" in out and "[default: skip-special-tokens]" in out
    stream = FIXTURES / "streams" / "kimi-toolcall.json"
    ids = json.loads(stream.read_text())
    replay = json.loads(tokaudit("replay", KIMI, stream, "--detokenizers", "full", "--format", "json").stdout)
    decode = json.loads(tokaudit("decode", KIMI, stream, "--format", "json").stdout)
    assert (
        replay["text"] == decode["text"]
        and replay["stream"]["skip_special_tokens"] is decode["skip_special_tokens"] is True
    )
    kept = json.loads(tokaudit("decode", KIMI, stream, "--keep-special-tokens", "--format", "json").stdout)
    kept_replay = json.loads(
        tokaudit("replay", KIMI, stream, "--detokenizers", "full", "--keep-special-tokens", "--format", "json").stdout
    )
    assert kept["text"] == kept_replay["text"] != decode["text"] and len(ids) > 0


def _hub_cache(tmp_path: Path) -> dict[str, str]:
    """An offline Hugging Face cache holding org/tiny at two revisions: main (tiny-tiktoken) and v2 (one rank
    changed)."""
    repo = tmp_path / "hub" / "models--org--tiny"
    for ref, commit, source in (("main", "1" * 40, TINY), ("v2", "2" * 40, FIXTURES / "oncall" / "tiny-changed-rank")):
        snapshot = repo / "snapshots" / commit
        snapshot.mkdir(parents=True)
        for f in source.iterdir():
            (snapshot / f.name).write_bytes(f.read_bytes())
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / ref).write_text(commit)
    return {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hub")}


def test_diff_takes_a_revision_per_target(tmp_path: Path) -> None:
    env = _hub_cache(tmp_path)
    other = tokaudit("diff", "org/tiny", "org/tiny", "--target-revision", "v2", "--format", "json", env=env)
    doc = json.loads(other.stdout)
    assert other.returncode == 1 and doc["diff"]["classification"] == "incompatible"
    assert [(f["code"], f["ids"]) for f in doc["findings"]] == [("TA701", [[500, 500]])]  # the rank v2 changed
    both = json.loads(tokaudit("diff", "org/tiny", "org/tiny", "--revision", "v2", "--format", "json", env=env).stdout)
    assert both["diff"]["classification"] == "identical"
    local = json.loads(tokaudit("diff", TINY, FIXTURES / "oncall" / "tiny-changed-rank", "--format", "json").stdout)
    assert doc["diff"]["mismatched_ids"] == local["diff"]["mismatched_ids"]


def test_a_long_target_wraps_under_the_heading(tmp_path: Path) -> None:
    target = tmp_path / ("a-model-directory-with-a-rather-long-name-" * 2) / "tiny"
    target.mkdir(parents=True)
    for f in TINY.iterdir():
        (target / f.name).write_bytes(f.read_bytes())
    lines = tokaudit("scan", target, env={"COLUMNS": "60"}).stdout.splitlines()
    assert max(len(line) for line in lines) <= 60
    assert lines[0].startswith("tokaudit scan  ") and lines[1].startswith(" " * len("tokaudit scan  "))
    assert "".join(line.strip() for line in lines[:4]).startswith(f"tokaudit scan  {target}")  # folded, not cut
    assert [line for line in lines if line and not line.startswith((" ", "tokaudit scan", "✗"))] == []


# --- on call: the headline at the end, a status line while backends load, help with examples ---------------------


@pytest.mark.parametrize("quiet", [False, True])
def test_failing_scan_ends_with_its_errors_at_80_columns(quiet: bool) -> None:
    """The last lines of a failing scan on an 80-column terminal name the errors (they used to scroll away)."""
    proc = tokaudit(
        "scan", "fixtures/kimi-k2.5", *(["-q"] if quiet else []), env={"COLUMNS": "80"}, cwd=KIMI.parent.parent
    )
    assert proc.returncode == 1
    # (TA802 for TGI and Dynamo is a warning: only the tools' JSON is spelled otherwise; TA810: Kimi's arguments)
    assert proc.stdout.splitlines()[-2:] == [
        "  TA101 vocab-gap  fixtures/kimi-k2.5/config.json:17  233 ids",
        "✗ FAIL: 1 error, 8 warnings, 3 notes (1 at or above --fail-on error)",
    ]


def test_closing_summary_lists_what_fails_at_fail_on() -> None:
    lines = tokaudit(
        "scan", "fixtures/tiny-tiktoken", "--fail-on", "warning", env={"COLUMNS": "80"}, cwd=KIMI.parent.parent
    ).stdout.splitlines()
    assert lines[-9:] == [
        "  TA101 vocab-gap  fixtures/tiny-tiktoken/config.json:2  19 ids",
        "  TA103 id-drift  fixtures/tiny-tiktoken/tokenizer_config.json:27  2 ids",
        "  TA105 placeholder-encodable  fixtures/tiny-tiktoken/tokenization_kimi.py:26",
        "  11 ids",  # wrapped at 80 columns, indented
        "  TA202 eos-mismatch  fixtures/tiny-tiktoken/config.json:4  2 ids",
        "  TA301 slow-fallback-risk  fixtures/tiny-tiktoken/tiktoken.model",
        "  TA302 remote-code-required  fixtures/tiny-tiktoken/tokenizer_config.json:55",
        # typed parts printed by Python (transformers), a reasoning-only turn's null printed as None (smg, TGI)
        "  TA810 python-repr-leak  fixtures/tiny-tiktoken/chat_template.jinja:1  ×2",
        "✗ FAIL: 1 error, 7 warnings, 1 note (8 at or above --fail-on warning)",
    ]


def test_a_status_line_shows_while_backends_load() -> None:
    """compare on a terminal: "loading backends 2/3: hf" on stderr while they load (it was a blank screen)."""
    import pty
    import select

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tokaudit",
            "compare",
            "fixtures/compare/changed-regex",
            "--backends",
            "tiktoken,hf,reference",
            "--format",
            "json",
        ],
        stdout=subprocess.PIPE,
        stderr=slave,
        cwd=KIMI.parent.parent,
        env={**os.environ, "TERM": "xterm-256color"},
    )
    os.close(slave)
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed its side
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    stdout = proc.stdout.read() if proc.stdout else b""
    assert proc.wait() == 1
    # drawn at the terminal's refresh rate: a backend that loads in a few ms may never be shown
    assert re.search(rb"loading backends [123]/3: (tiktoken|hf|reference)", seen), seen[:400]
    assert json.loads(stdout)["command"] == "compare"  # the status line never reaches stdout
    piped = tokaudit("compare", "fixtures/compare/changed-regex", "--backends", "tiktoken,hf", "--format", "json")
    assert "loading" not in piped.stderr  # not a terminal: no status line


@pytest.mark.parametrize("command", [*COMMANDS, "rule", "rules"])
def test_every_command_help_has_examples_within_80_columns(command: str) -> None:
    out = tokaudit(command, "--help", env={"COLUMNS": "80"}).stdout
    lines = out.splitlines()
    examples = lines[lines.index("  Examples:") + 1 :]
    shown = [
        line
        for line in examples[:3]
        if line == f"    tokaudit {command}" or line.startswith(f"    tokaudit {command} ")
    ]
    assert len(shown) >= 2, out
    assert max(len(line) for line in lines) <= 80


def test_root_help_shows_whole_summaries() -> None:
    out = tokaudit("--help", env={"COLUMNS": "80"}).stdout
    listed = " ".join(out[out.index("Commands:") :].split())
    for name, command in typer.main.get_command(build_app()).commands.items():  # type: ignore[attr-defined]
        first = " ".join((command.help or "").strip().split("\n\n")[0].split())
        assert f" {name} {first} " in f"{listed} "  # click used to cut every summary at 45 characters with "..."
    assert (
        "  scan      Check a tokenizer's id space, special tokens and artifacts for\n            problems that break "
        "serving stacks.\n" in out
    )
    assert "  rule      Show a rule's page:" in out
