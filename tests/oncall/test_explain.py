"""explain: the Kimi gap id 163600 across profiles and backends, token-string queries, bad input."""

from __future__ import annotations

import json


from tests.conftest import FIXTURES, run_cli, tree_snapshot
from tokaudit.oncall.explain import explain, resolve

KIMI = FIXTURES / "kimi-k2.5"
TINY = FIXTURES / "tiny-tiktoken"


def test_kimi_163600_is_a_gap_that_remote_code_fills_and_tiktoken_rejects(kimi):
    model, backends = kimi
    [entry] = explain(model, backends, resolve(model, ["163600"])).ids
    assert entry.id == 163600
    assert entry.in_declared_range is True
    assert entry.mapped == {"files": False, "remote-code": True}
    [source] = entry.sources
    assert source.profile == "remote-code"
    assert source.text == "<|reserved_token_163600|>"
    assert (source.where.file, source.where.line, source.where.key) == (
        "tokenization_kimi.py",
        26,
        "num_reserved_special_tokens",
    )
    assert source.rule == "reserved-slot fill (num_reserved_special_tokens)"
    assert entry.text == "<|reserved_token_163600|>"
    assert entry.bytes_hex == b"<|reserved_token_163600|>".hex()
    tk = entry.backends["tiktoken"]
    assert (tk.kind, tk.exception, tk.message, tk.panic) == (
        "error",
        "KeyError",
        "'Invalid token for decoding: 163600'",
        False,
    )
    assert entry.backends["strict"].exception == "UnknownId"


def test_kimi_declared_end_and_beyond(kimi):
    model, backends = kimi
    inside, beyond = explain(model, backends, resolve(model, ["163837", "163840"])).ids
    assert inside.in_declared_range is True and inside.mapped == {"files": False, "remote-code": True}
    assert beyond.in_declared_range is False and beyond.mapped == {"files": False, "remote-code": False}
    assert (beyond.sources, beyond.bytes_hex, beyond.text) == ((), None, None)
    assert beyond.backends["tiktoken"].exception == "KeyError"


def test_cli_json_and_rich_on_kimi():
    before = tree_snapshot(KIMI)
    r = run_cli("explain", KIMI, "163600", "--backends", "tiktoken,hf", "--format", "json")
    assert r.exit_code == 0
    [entry] = json.loads(r.stdout)["ids"]
    assert entry["mapped"] == {"files": False, "remote-code": True}
    assert entry["backends"]["tiktoken"]["exception"] == "KeyError"
    hf = entry["backends"]["hf"]
    assert (hf["kind"], hf["text"], hf["dropped"]) == ("dropped", "", True)
    rich = run_cli("explain", KIMI, "163600", "--backends", "tiktoken")
    assert rich.exit_code == 0
    lines = rich.stdout.splitlines()
    assert "  163600  inside the declared range [0, 163840)" in lines
    assert any(line.split() == ["files", "unmapped"] for line in lines)
    assert any(
        line.startswith("    remote-code  <|reserved_token_163600|>  special · tokenization_kimi.py:26")
        for line in lines
    )
    assert any(line.split()[:2] == ["tiktoken", "KeyError:"] for line in lines)
    assert tree_snapshot(KIMI) == before


def test_token_string_selects_its_id():
    r = run_cli("explain", TINY, "<|im_end|>", "131", "--backends", "tiktoken,strict", "--format", "json")
    assert r.exit_code == 0
    im_end, partial = json.loads(r.stdout)["ids"]
    assert (im_end["query"], im_end["id"], im_end["special"]) == ("<|im_end|>", 1002, True)
    assert [(s["profile"], s["file"], s["key"]) for s in im_end["sources"]] == [
        ("files", "tokenizer_config.json", "added_tokens_decoder.1002"),
        ("remote-code", "tokenizer_config.json", "added_tokens_decoder.1002"),
    ]
    assert im_end["backends"]["tiktoken"]["text"] == "<|im_end|>"
    assert (partial["bytes_hex"], partial["partial_utf8"], partial["text"]) == ("83", True, "\ufffd")
    assert [(s["file"], s["line"]) for s in partial["sources"]][0] == ("tiktoken.model", 132)


def test_unknown_token_string_is_one_line_exit_2():
    r = run_cli("explain", TINY, "<|nope|>")
    assert r.exit_code == 2
    assert r.stdout == ""
    assert (
        r.stderr
        == f"tokaudit: error: {TINY}: no token in any profile is '<|nope|>' (give an id or a token's exact text)\n"
    )


def test_unknown_backend_is_one_line_exit_2():
    r = run_cli("explain", TINY, "5", "--backends", "tiktoken,nope")
    assert r.exit_code == 2
    assert r.stderr.startswith("tokaudit: error: key --backends: unknown backend 'nope' (choose from tiktoken, hf")
    assert r.stderr.count("\n") == 1


def test_missing_target_is_one_line_exit_2(tmp_path):
    r = run_cli("explain", tmp_path / "absent", "5")
    assert r.exit_code == 2
    assert r.stderr.count("\n") == 1 and r.stderr.startswith(f"tokaudit: error: {tmp_path / 'absent'}")
