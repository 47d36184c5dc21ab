"""Issue 13: every hostile input ends in bounded time and memory, with exit 2 and one clear stderr
line for bad input, a finding for a property of the model, and the target left unchanged.

Each case (tests/hostile_cases.py) is generated in tmp_path and run as a whole process
(``python -m tokaudit``) under a 3 GiB address-space cap; its wall time and peak RSS are measured.
bench/hostile_cases.py prints the same cases as a table.
"""

from __future__ import annotations

import json
import os
import stat
from importlib.util import find_spec
from pathlib import Path

import pytest

from hostile_cases import CASES, FIXTURES, MEMORY_BOUND_MIB, Case, Run, fifo_file, run, unsafe_output

#: The remote-code evaluator cases belong to the patterns engineer's tests; the table shows them.
OWN = [c for c in CASES if not c.owner]


def snapshot(path: Path | None) -> dict[str, tuple[int, int, int]] | None:
    """(mode, size, mtime_ns) of every entry under ``path`` without following symlinks (loops, FIFOs)."""
    if path is None:
        return None
    out = {}
    for dirpath, dirs, files in os.walk(path):
        for name in dirs + files:
            st = os.lstat(os.path.join(dirpath, name))
            out[os.path.relpath(os.path.join(dirpath, name), path)] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


def _missing(requirement: str) -> str | None:
    """Why a case cannot run here, or None."""
    if requirement == "llama.cpp" and find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (pip install 'tokaudit[llamacpp]')"
    if requirement == "chown" and os.geteuid() != 0:
        return "planting another user's cache entry needs root (chown)"
    return None


def _comparable(doc: dict) -> dict:
    """A JSON report without what differs from run to run (timings)."""
    return json.loads(json.dumps(doc), object_hook=lambda d: {k: v for k, v in d.items() if not k.endswith("seconds")})


@pytest.mark.parametrize("case", OWN, ids=[c.name for c in OWN])
def test_hostile_input(case: Case, tmp_path: Path) -> None:
    if (why := _missing(case.requires)) is not None:
        pytest.skip(why)
    r = case.build(tmp_path)
    before = snapshot(r.target)
    out = run(r, case.seconds * 2 + 30)  # killed well past the bound, so that a hang fails instead of blocking
    stderr = out.stderr.decode("utf-8")  # the stderr line is valid UTF-8 whatever the input held
    lines = stderr.splitlines()
    # nothing that acts on a terminal or a CI log, whatever the input held
    assert unsafe_output(out.stdout, github="github" in r.args) == [], out.stdout[-2000:]
    assert unsafe_output(out.stderr) == [], stderr[-2000:]
    assert out.exit_code is not None, f"{case.name}: killed after {out.seconds:.1f} s"
    assert out.exit_code in case.exits, f"{case.name}: exit {out.exit_code}, stderr {stderr[-2000:]}"
    assert out.seconds <= case.seconds, f"{case.name}: {out.seconds:.1f} s"
    assert out.peak_mib <= MEMORY_BOUND_MIB, f"{case.name}: peak {out.peak_mib:.0f} MiB"
    if case.name == "debug-keeps-exit-2":  # --debug: the traceback, then the same line and exit code as without it
        assert lines[0] == "Traceback (most recent call last):"
        assert lines[-1] == f"tokaudit: error: {tmp_path / 'missing'}: no such file or directory"
    elif case.name == "stderr-closed-error" or ("--format" not in r.args and out.exit_code in (0, 1)):
        assert lines == []  # the rich report has its verdict on stdout
    else:
        assert "Traceback" not in stderr
        assert len(lines) == case.stderr_lines, f"{case.name}: {len(lines)} stderr lines: {stderr[:2000]}"
        assert len(lines[0]) <= 420
        if case.exits == (2,):
            assert lines[0].startswith("tokaudit: error: ")
        else:
            assert lines[0].startswith("tokaudit ")  # the summary line
    if case.stderr_has:
        assert case.stderr_has in stderr, stderr
    if case.stderr_lacks:
        assert case.stderr_lacks not in stderr, stderr
    fmt = r.args[r.args.index("--format") + 1] if "--format" in r.args else "rich"
    if fmt in ("json", "sarif") and out.exit_code in (0, 1) and "--output" not in r.args:
        doc = json.loads(out.stdout.decode("utf-8"))  # valid UTF-8 and valid JSON (SARIF is JSON too)
        if case.codes:
            assert set(case.codes) <= {f["code"] for f in doc["findings"]}, doc["findings"]
        if case.same_as_uncached:  # the poisoned or corrupt entries were recomputed: the true result
            truth = run(Run(r.args, env={**r.env, "TOKAUDIT_CACHE": "off"}), 120)
            assert _comparable(doc) == _comparable(json.loads(truth.stdout))
    assert snapshot(r.target) == before


def test_empty_added_token_is_ta206_and_kept_out_of_tiktoken(tmp_path: Path) -> None:
    """The finding names the file, key and id; encoding with tiktoken still ends and gives real ids."""
    from hostile_cases import empty_token_config

    target = empty_token_config(tmp_path)
    out = run(Run(["scan", str(target), "--format", "json", "--select", "TA206"]), 20)
    assert out.exit_code == 1
    [finding] = json.loads(out.stdout)["findings"]
    # the key's line and column in the file (one line of JSON)
    assert finding["location"] == {
        "file": "tokenizer_config.json",
        "line": 1,
        "column": 669,
        "key": "added_tokens_decoder.1010",
    }
    assert (target / "tokenizer_config.json").read_text()[668:].startswith('"1010": {"content": ""')
    assert finding["ids"] == [[1010, 1010]] and finding["severity"] == "error"
    encoded = {}
    for name, model in (("with-empty", target), ("fixture", FIXTURES / "tiny-tiktoken")):
        out = run(Run(["encode", str(model), "[BOS]hello", "--backend", "tiktoken", "--format", "json"]), 30)
        assert out.exit_code == 0, out.stderr
        encoded[name] = json.loads(out.stdout)["ids"]
    assert encoded["with-empty"] == encoded["fixture"] == [1000, 257, 108, 108, 111]


def test_fifo_named_like_a_tokenizer_file_is_refused_without_opening(tmp_path: Path) -> None:
    target = fifo_file(tmp_path)
    assert stat.S_ISFIFO(os.lstat(target / "tiktoken.model").st_mode)
    out = run(Run(["scan", str(target)]), 20)
    assert out.exit_code == 2
    assert out.stderr.decode() == f"tokaudit: error: {target / 'tiktoken.model'}: not a regular file: a FIFO\n"
