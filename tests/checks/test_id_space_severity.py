"""TA101 vocab-gap: holes among the tokens versus trailing embedding padding; the severity comes from what
the loaders that see the ids do with one (tiktoken: KeyError / tiktoken-rs: panic -> error; tokenizers:
silent drop -> warning), not from where the ids sit (issue 21 §3)."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli


def _gap(target: Path) -> tuple[int, dict]:
    result = run_cli("scan", target, "--format", "json", "--select", "TA101")
    doc = json.loads(result.stdout)
    (gap,) = doc["findings"]
    return result.exit_code, gap


def _clean_bpe_with_a_hole(tmp_path: Path) -> tuple[Path, int]:
    """A copy of clean-bpe with vocabulary id 500 removed (a hole a tokenizer.json loader drops)."""
    target = tmp_path / "holes"
    shutil.copytree(FIXTURES / "clean-bpe", target)
    tj = json.loads((target / "tokenizer.json").read_text())
    vocab = tj["model"]["vocab"]
    dropped = sorted(vocab.values())[500]
    del vocab[next(t for t, i in vocab.items() if i == dropped)]
    tj["model"]["merges"] = []  # merges may name the removed token; the tests are about ids only
    (target / "tokenizer.json").write_text(json.dumps(tj))
    return target, dropped


def test_trailing_padding_under_tokenizers_is_a_warning_and_passes_ci(tmp_path: Path) -> None:
    target = tmp_path / "padded"
    shutil.copytree(FIXTURES / "clean-bpe", target)
    (target / "config.json").write_text(json.dumps({"vocab_size": 1024, "eos_token_id": 999}))
    code, gap = _gap(target)
    assert code == 0
    assert (gap["severity"], gap["ids"], gap["count"]) == ("warning", [[1000, 1023]], 24)
    assert gap["details"]["holes"]["count"] == 0 and gap["details"]["last_token_id"] == 999
    assert gap["details"]["trailing_padding"]["seen_by"] == {
        "files-only": "drop",
        "smg": "drop",
        "vLLM": "drop",
        "Dynamo": "drop",
        "transformers": "drop",
    }
    assert "24 ids of trailing padding after the last token 999 (1000–1023)" in gap["message"]
    assert "drops them silently" in gap["message"]


def test_trailing_padding_of_a_rank_file_is_an_error(tmp_path: Path) -> None:
    target = tmp_path / "ranks"
    target.mkdir()
    shutil.copy(FIXTURES / "tiny-tiktoken" / "tiktoken.model", target / "tiktoken.model")
    (target / "config.json").write_text(json.dumps({"vocab_size": 1024}))
    code, gap = _gap(target)
    assert code == 1
    assert (gap["severity"], gap["ids"]) == ("error", [[1000, 1023]])
    assert gap["details"]["trailing_padding"]["seen_by"]["files-only"] == "crash"
    assert "raises or panics in files-only" in gap["message"]


def test_holes_in_a_rank_file_stay_an_error_and_padding_is_split_off() -> None:
    code, gap = _gap(FIXTURES / "tiny-tiktoken")
    assert code == 1 and gap["severity"] == "error"
    assert gap["ids"] == [[1003, 1003], [1006, 1023]]  # the contract: every unmapped id, in one finding
    assert gap["details"]["holes"]["ids"] == [[1003, 1003], [1006, 1015]]
    assert gap["details"]["trailing_padding"]["ids"] == [[1016, 1023]]
    assert gap["details"]["holes"]["seen_by"] == {"files-only": "crash"}


def test_kimi_reserved_ids_are_all_holes() -> None:
    code, gap = _gap(FIXTURES / "kimi-k2.5")
    assert code == 1 and gap["severity"] == "error" and gap["count"] == 233
    assert gap["details"]["holes"]["count"] == 233 and gap["details"]["trailing_padding"]["count"] == 0


def test_holes_in_a_tokenizer_json_are_a_warning(tmp_path: Path) -> None:
    target, dropped = _clean_bpe_with_a_hole(tmp_path)
    code, gap = _gap(target)
    assert code == 0
    assert (gap["severity"], gap["ids"]) == ("warning", [[dropped, dropped]])
    assert gap["details"]["holes"]["seen_by"]["files-only"] == "drop"


def test_fuzz_rates_strict_on_tokenizer_json_holes_as_scan_does(tmp_path: Path) -> None:
    """strict (a tiktoken-rs emulation) fails on a hole of a tokenizer.json model, but every loader that
    leaves it unmapped decodes through tokenizers, which drops it: a warning, as TA101 says, not an error."""
    target, dropped = _clean_bpe_with_a_hole(tmp_path)
    result = run_cli("fuzz", target, "--backends", "strict", "--iterations", "400", "--seed", "1", "--format", "json")
    assert result.exit_code == 0, result.stdout
    (inside,) = [f for f in json.loads(result.stdout)["findings"] if f["details"]["in_declared_range"]]
    assert inside["severity"] == "warning"
    assert inside["ids"] == [[dropped, dropped]]
    assert "drops them silently" in inside["message"]


def test_fuzz_keeps_strict_on_rank_file_holes_an_error() -> None:
    result = run_cli(
        "fuzz", FIXTURES / "kimi-k2.5", "--backends", "strict", "--iterations", "200", "--seed", "1", "--format", "json"
    )
    assert result.exit_code == 1
    (inside,) = [f for f in json.loads(result.stdout)["findings"] if f["details"]["in_declared_range"]]
    assert inside["severity"] == "error"


def test_qwen_tiktoken_without_remote_code_padding_is_an_error_as_its_loaders_crash(tmp_path: Path) -> None:
    """Qwen's qwen.tiktoken (151643 ranks) with vocab_size 151936 and no remote code leaves 293 trailing ids
    unmapped; fixtures/qwen-remote is the same shape (500 ranks, vocab_size 768: 268). A loader serving the
    files decodes with tiktoken: Python tiktoken raises KeyError on every one (run below), tiktoken-rs / smg
    panic ("no entry found for key"), exactly as on Kimi's holes. So it is an error, like the holes."""
    import tiktoken

    target = tmp_path / "qwen-no-remote-code"
    target.mkdir()
    shutil.copy(FIXTURES / "qwen-remote" / "qwen.tiktoken", target / "qwen.tiktoken")
    shutil.copy(FIXTURES / "qwen-remote" / "config.json", target / "config.json")
    code, gap = _gap(target)
    assert code == 1
    assert (gap["severity"], gap["ids"], gap["count"]) == ("error", [[500, 767]], 268)
    assert gap["details"]["holes"]["count"] == 0 and gap["details"]["last_token_id"] == 499
    # smg and files-only crash; transformers' AutoTokenizer (so vLLM's) does not load qwen.tiktoken at all: it looks
    # for tiktoken.model / tokenizer.model only (transformers 5.24: "Couldn't instantiate the backend tokenizer")
    assert gap["details"]["trailing_padding"]["seen_by"] == {"files-only": "crash", "smg": "crash"}
    assert (
        "268 ids of trailing padding after the last token 499 (500–767): decoding one raises or panics in "
        "files-only, smg (tiktoken: KeyError; tiktoken-rs: panic)"
    ) in gap["message"]
    ranks = {}
    for line in (target / "qwen.tiktoken").read_text().splitlines():
        token, rank = line.split()
        ranks[base64.b64decode(token)] = int(rank)
    enc = tiktoken.Encoding("qwen-shaped", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={})
    assert enc.decode([499]) == enc.decode_single_token_bytes(499).decode("utf-8", "replace")
    for unmapped in (500, 767):
        with pytest.raises(KeyError):
            enc.decode([unmapped])


def test_qwen_with_its_remote_code_stays_an_error() -> None:
    """With tokenization_qwen.py the remote code maps 500–707 (<|endoftext|> and the extras): those are holes for
    the files-only loaders, 708–767 padding that every loader decodes with tiktoken."""
    code, gap = _gap(FIXTURES / "qwen-remote")
    assert code == 1 and gap["severity"] == "error"
    assert gap["details"]["holes"]["ids"] == [[500, 707]]
    assert gap["details"]["trailing_padding"]["seen_by"] == {
        "files-only": "crash",
        "smg": "crash",
        "vLLM": "crash",
        "transformers": "crash",
    }
