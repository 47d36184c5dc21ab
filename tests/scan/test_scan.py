"""`tokaudit scan` end to end on the fixtures: exact ids, sizes, exit codes and error lines."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli, tree_snapshot
from tokaudit import __version__

KIMI = FIXTURES / "kimi-k2.5"
TINY = FIXTURES / "tiny-tiktoken"


def scan_json(*args: object) -> tuple[int, dict]:
    result = run_cli("scan", *map(str, args), "--format", "json")
    assert result.exit_code in (0, 1), result.stderr
    return result.exit_code, json.loads(result.stdout)


def by_name(doc: dict) -> dict[str, dict]:
    return {f["name"]: f for f in doc["findings"]}


def test_kimi_vocab_gap_is_exactly_the_233_reserved_ids() -> None:
    code, doc = scan_json(KIMI)
    assert code == 1
    gap = by_name(doc)["vocab-gap"]
    assert gap["code"] == "TA101" and gap["severity"] == "error"
    assert gap["ids"] == [[163589, 163589], [163592, 163592], [163600, 163600], [163608, 163837]]
    assert gap["count"] == 233
    # the line and column of the key in config.json (the JSON source map)
    assert gap["location"] == {"file": "config.json", "line": 17, "column": 5, "key": "text_config.vocab_size"}
    assert gap["details"]["filled_by_profile"] == {"remote-code": 233}
    assert gap["details"]["decoder_behaviour"]["tiktoken (Python)"].startswith("KeyError")
    assert "163600 = <|reserved_token_163600|>" not in gap["message"]  # the example is the first gap id
    assert "e.g. 163589 = <|reserved_token_163589|>" in gap["message"]


def test_kimi_vocab_summary_reports_the_five_sizes() -> None:
    _, doc = scan_json(KIMI)
    vocab = doc["vocab"]
    assert vocab["declared_size"] == 163840
    assert vocab["declared_by"] == "config.json text_config.vocab_size"
    assert (vocab["mapped"], vocab["unmapped"]) == (163607, 233)
    assert vocab["sizes"] == {
        "entries": 163584,
        "max_rank_plus_one": 163584,
        "max_added_plus_one": 163840,
        "config_vocab_size": 163840,
        "embedding_rows": None,
    }
    assert vocab["profiles"]["remote-code"]["unmapped"] == 0
    assert doc["command"] == "scan" and doc["tokaudit"] == __version__
    assert set(doc["versions"]) >= {"python", "tokenizers", "tiktoken"}
    kinds = {a["file"]: (a["kind"], a["entries"]) for a in doc["artifacts"]}
    assert kinds["tiktoken.model"] == ("tiktoken", 163584)
    assert kinds["tokenizer_config.json"] == ("tokenizer_config", 23)
    assert kinds["tokenization_kimi.py"][0] == "remote_code"


def test_kimi_rich_output_shows_ranges_and_verdict() -> None:
    result = run_cli("scan", KIMI)
    assert result.exit_code == 1
    out = result.stdout
    assert "TA101 vocab-gap  config.json:17 (text_config.vocab_size)" in out
    assert "ids: 163589, 163592, 163600, 163608–163837  (count 233)" in out
    assert "entries 163584 · max rank+1 163584 · max added id+1 163840 · config vocab_size 163840" in out
    assert out.rstrip().splitlines()[-1].startswith("✗ FAIL:")


def test_tiny_gap_and_partial_remote_code_fill() -> None:
    _, doc = scan_json(TINY)
    gap = by_name(doc)["vocab-gap"]
    assert gap["ids"] == [[1003, 1003], [1006, 1023]] and gap["count"] == 19
    # 16 reserved slots after the 1000 ranks fill 1003 and 1006..1015; 1016..1023 stay unmapped everywhere
    assert gap["details"]["filled_by_profile"] == {"remote-code": 11}
    assert doc["vocab"]["profiles"]["remote-code"]["unmapped_ids"] == [[1016, 1023]]


def test_qwen_specials_live_only_in_remote_code() -> None:
    _, doc = scan_json(FIXTURES / "qwen-remote")
    gap = by_name(doc)["vocab-gap"]
    assert gap["ids"] == [[500, 767]] and gap["count"] == 268
    assert gap["details"]["filled_by_profile"] == {"remote-code": 208}
    assert doc["vocab"]["profiles"]["remote-code"]["unmapped_ids"] == [[708, 767]]


def test_clean_model_has_no_id_space_findings() -> None:
    code, doc = scan_json(FIXTURES / "clean-bpe")
    names = set(by_name(doc))
    assert not names & {"vocab-gap", "size-mismatch"}
    assert doc["vocab"]["unmapped"] == 0
    assert doc["vocab"]["sizes"]["entries"] + 3 == doc["vocab"]["declared_size"]  # vocab + 3 added tokens


def test_single_tokenizer_file_target() -> None:
    _, doc = scan_json(FIXTURES / "clean-bpe" / "tokenizer.json")
    assert [a["file"] for a in doc["artifacts"]] == ["tokenizer.json"]
    assert doc["vocab"]["declared_size"] is None
    assert "vocab-gap" not in by_name(doc)


def test_padded_embedding_rows_are_a_size_mismatch() -> None:
    _, doc = scan_json(FIXTURES / "padded-embedding")
    mismatch = by_name(doc)["size-mismatch"]
    sizes = doc["vocab"]["sizes"]
    assert sizes["embedding_rows"] == sizes["config_vocab_size"] + 24
    assert mismatch["details"]["embedding_rows"] == sizes["embedding_rows"]
    assert mismatch["location"] == {"file": "model.safetensors", "key": "model.embed_tokens.weight.shape[0]"}


def test_sharded_embedding_matches_config() -> None:
    _, doc = scan_json(FIXTURES / "sharded-embedding")
    assert "size-mismatch" not in by_name(doc)
    assert doc["vocab"]["sizes"]["embedding_rows"] == doc["vocab"]["sizes"]["config_vocab_size"]


def test_mistral_tekken_declares_its_size() -> None:
    _, doc = scan_json(FIXTURES / "mistral-tekken" / "tekken.json")
    assert doc["vocab"]["declared_by"] == "tekken.json config.default_vocab_size"
    assert doc["vocab"]["declared_size"] == 700


def test_huge_declared_size_is_kept_as_ranges() -> None:
    _, doc = scan_json(FIXTURES / "malformed" / "huge-vocab")
    gap = by_name(doc)["vocab-gap"]
    assert gap["ids"] == [[1003, 1003], [1006, 10**12 - 1]]
    assert gap["count"] == 10**12 - 1005


def test_several_targets_one_report_worst_exit_code() -> None:
    result = run_cli("scan", FIXTURES / "clean-bpe", TINY, "--format", "json")
    doc = json.loads(result.stdout)
    assert result.exit_code == 1
    assert doc["target"] is None
    assert [t["target"] for t in doc["targets"]] == [str(FIXTURES / "clean-bpe"), str(TINY)]
    assert {f["target"] for f in doc["findings"] if f["name"] == "vocab-gap"} == {str(TINY)}


def test_fail_on_never_and_output_file(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    result = run_cli("scan", TINY, "--format", "json", "--output", out, "--fail-on", "never")
    assert result.exit_code == 0 and result.stdout == ""
    assert json.loads(out.read_text())["summary"]["error"] >= 1


def _error_line(*args: object) -> str:
    result = run_cli("scan", *map(str, args))
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    return lines[0]


MALFORMED = FIXTURES / "malformed"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("does/not/exist/dir", None),
        (MALFORMED / "bad-base64", "bad-base64/tiktoken.model:3: token is not valid base64: '!!!notbase64'"),
        (MALFORMED / "bad-rank", "bad-rank/tiktoken.model:2: rank is not a non-negative integer: 'x1'"),
        (MALFORMED / "duplicate-rank", "duplicate-rank/tiktoken.model:4: duplicate rank 1 (first on line 2)"),
        (MALFORMED / "truncated-json", "truncated-json/tokenizer.json:"),
        (
            MALFORMED / "bad-added-key",
            "bad-added-key/tokenizer_config.json (key added_tokens_decoder.abc): "
            "id 'abc' is not a non-negative integer",
        ),
        (MALFORMED / "bad-config", 'bad-config/config.json (key vocab_size): expected an integer, found "lots"'),
        (MALFORMED / "not-a-tokenizer", "not-a-tokenizer: no tokenizer vocabulary found (looked for tokenizer.json"),
        (MALFORMED / "not-a-tokenizer" / "README.txt", "README.txt: not a tokenizer file"),
    ],
)
def test_bad_input_is_one_line_exit_2(target: Path | str, message: str | None) -> None:
    line = _error_line(target)
    assert line.startswith("tokaudit: error: ")
    if message is None:  # a path that is not there and does not look like a repo id... or does: both are clear
        assert "does/not/exist/dir" in line
    else:
        assert message in line, line


def test_missing_relative_path_that_is_not_a_repo_id() -> None:
    assert _error_line("./nowhere") == "tokaudit: error: ./nowhere: no such file or directory"


def test_empty_directory(tmp_path: Path) -> None:
    assert _error_line(tmp_path).startswith(f"tokaudit: error: {tmp_path}: no tokenizer vocabulary found")


def test_unreadable_file(tmp_path: Path) -> None:
    # /proc/self/mem says "regular file" but cannot be read sequentially (EIO); /proc/kmsg would block: a
    # pseudo-file is refused before it is opened, naming where the symlink points (CliRunner: this process)
    os.symlink("/proc/self/mem", tmp_path / "tiktoken.model")
    assert _error_line(tmp_path) == (
        f"tokaudit: error: {tmp_path}/tiktoken.model: not a regular file: a proc pseudo-file "
        f"(symlink to /proc/{os.getpid()}/mem, outside the target directory)"
    )


def test_usage_error_is_exit_2() -> None:
    result = run_cli("scan", TINY, "--format", "yaml")
    assert result.exit_code == 2


def test_scan_never_writes_into_the_target(tmp_path: Path) -> None:
    target = tmp_path / "model"
    shutil.copytree(FIXTURES / "remote-code-marker", target)
    before = tree_snapshot(target)
    run_cli("scan", target, "--format", "json")
    assert tree_snapshot(target) == before


def test_scan_never_runs_remote_code(tmp_path: Path) -> None:
    target = tmp_path / "model"
    shutil.copytree(FIXTURES / "remote-code-marker", target)
    marker = Path("/tmp/tokaudit_executed_marker")
    marker.unlink(missing_ok=True)
    # a whole process, so any import side effect would really happen
    proc = subprocess.run(
        [sys.executable, "-m", "tokaudit", "scan", str(target), "--format", "json"], capture_output=True, text=True
    )
    assert proc.returncode == 1, proc.stderr
    assert not (target / "EXECUTED_MARKER").exists() and not marker.exists()
    assert not (target / "__pycache__").exists()
    # ... yet its constants were read statically
    doc = json.loads(proc.stdout)
    gap = by_name(doc)["vocab-gap"]
    assert gap["details"]["filled_by_profile"] == {"remote-code": 11}


def test_python_dash_m_and_version() -> None:
    proc = subprocess.run([sys.executable, "-m", "tokaudit", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.splitlines()[0] == f"tokaudit {__version__}"


@pytest.mark.parametrize("fmt", ["rich", "json"])
def test_closed_stdout_pipe_keeps_the_exit_code(fmt: str) -> None:
    """`tokaudit scan ... | head -1`: a reader that goes away must not turn the exit code into 1."""
    for fail_on, expected in (("never", 0), ("error", 1)):
        proc = subprocess.Popen(
            [sys.executable, "-m", "tokaudit", "scan", str(TINY), "--format", fmt, "--fail-on", fail_on, "--quiet"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # the reader is gone before anything is written
        stderr = proc.stderr.read().decode()
        assert proc.wait() == expected, stderr
        assert "Traceback" not in stderr


_COLLECTOR_PROBE = """
import gc, sys
{setup}
from tokaudit.model.load import load_model
from tokaudit.scan.run import scan_model
model = load_model({target!r})
scan_model(model)
print(gc.get_freeze_count(), gc.isenabled())
"""


def test_the_library_leaves_the_callers_collector_alone_and_only_the_cli_freezes() -> None:
    """gc.freeze() is process-wide: a program that loads a model through the library keeps its collector (nothing
    frozen, still enabled); the CLI's process freezes what lives to its end (see tokaudit/collector.py)."""
    env = {**os.environ, "TOKAUDIT_CACHE": "off", "HF_HUB_OFFLINE": "1"}
    target = str(FIXTURES / "kimi-k2.5")
    for setup, frozen in (("", False), ("import tokaudit.cli.app", True)):
        probe = _COLLECTOR_PROBE.format(setup=setup, target=target)
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=300)
        assert out.returncode == 0, out.stderr
        count, enabled = out.stdout.split()
        assert (int(count) > 0, enabled) == (frozen, "True"), (setup, out.stdout)
