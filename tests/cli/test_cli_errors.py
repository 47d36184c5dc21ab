"""The error policy of every command: input errors exit 2, anything else exits 3 with a hint, never a traceback."""

from __future__ import annotations

import pytest
import tiktoken
import typer

from tokaudit.cli.common import handle_errors
from tokaudit.errors import InputError


def test_input_error_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit) as stop, handle_errors(debug=False):
        raise InputError("duplicate rank 1 (first on line 2)", file="m/tiktoken.model", line=4)
    assert stop.value.exit_code == 2
    assert capsys.readouterr().err == "tokaudit: error: m/tiktoken.model:4: duplicate rank 1 (first on line 2)\n"


def test_unexpected_exception_is_exit_3_with_a_hint(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit) as stop, handle_errors(debug=False):
        {}["missing"]  # a real bug would look like this
    assert stop.value.exit_code == 3
    assert (
        capsys.readouterr().err
        == "tokaudit: internal error: KeyError: 'missing' (re-run with --debug for the traceback)\n"
    )


def test_rust_panic_is_caught_too(capsys: pytest.CaptureFixture[str]) -> None:
    ranks = {bytes([i]): i for i in range(256)} | {b"ab": 1}  # a duplicate rank value makes tiktoken panic
    with pytest.raises(typer.Exit) as stop, handle_errors(debug=False):
        tiktoken.Encoding(name="x", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={})
    assert stop.value.exit_code == 3
    err = capsys.readouterr().err
    assert err.startswith("tokaudit: internal error: PanicException: Encoder and decoder must be of equal length")
    assert err.endswith("(re-run with --debug for the traceback)\n")


def test_debug_prints_the_traceback_and_keeps_the_exit_code(capsys) -> None:
    """--debug shows the traceback; the exit code stays 3 for a bug and 2 for bad input (it was 1)."""
    with pytest.raises(typer.Exit) as stop, handle_errors(debug=True):
        {}["missing"]
    assert stop.value.exit_code == 3
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):\n")
    assert err.endswith("KeyError: 'missing'\ntokaudit: internal error: KeyError\n")
    with pytest.raises(typer.Exit) as stop, handle_errors(debug=True):
        raise InputError("no such file", file="x.json")
    assert stop.value.exit_code == 2
    assert capsys.readouterr().err.endswith("tokaudit: error: x.json: no such file\n")
