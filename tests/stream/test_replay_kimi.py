"""Acceptance tests of ``replay`` on the Kimi-K2.5-shaped fixture (streams from
fixtures/make_stream_fixtures.py: a tool call encoded with the fixture's own tiktoken encoding).

The Kimi tokenizer (a byte-level BPE rebuilt from 163,584 ranks) is built once for the module."""

from __future__ import annotations

import json

import pytest

from tests.conftest import FIXTURES, run_cli, tree_snapshot
from tokaudit.model.load import load_model
from tokaudit.stream.readers import read_stream
from tokaudit.stream.replay import ReplayOptions, load_tokenizer, replay

KIMI = FIXTURES / "kimi-k2.5"
STREAMS = FIXTURES / "streams"
MANIFEST = json.loads((STREAMS / "manifest.json").read_text(encoding="utf-8"))["kimi-k2.5"]
TEXT = MANIFEST["text"]
#: What a client sees with special tokens skipped (the server default): the markers are gone.
VISIBLE = (
    'functions.bash:0{"command": "bash ~/.claude/skills/web-access/scripts/check-deps.sh", '
    '"description": "检查 CDP 依赖环境"}'
)
SERIOUS = ("full", "offsets", "decodestream", "bytes")  # every detokenizer but naive


@pytest.fixture(scope="module")
def kimi():
    model = load_model(str(KIMI))
    return model, load_tokenizer(model)


def _replay(kimi, name, detokenizers=SERIOUS, **kw):
    model, loaded = kimi
    return replay(model, read_stream(str(STREAMS / name)), ReplayOptions(list(detokenizers), **kw), loaded)


def _names(findings):
    return sorted(f.name for f in findings)


def test_complete_tool_call_stream_gives_no_findings_and_its_exact_text(kimi):
    r = _replay(kimi, "kimi-toolcall.json")
    assert r.findings == []
    assert r.full == VISIBLE
    assert {d.name: d.text for d in r.result.detokenizers} == dict.fromkeys(SERIOUS, VISIBLE)
    assert [c.to_json() for c in r.result.tool_calls] == [
        {"format": "kimi", "closed": True, "valid": True, "error": None}
    ]
    kept = _replay(kimi, "kimi-toolcall.json", skip_special_tokens=False)
    assert kept.findings == []
    assert kept.full == TEXT


def test_complete_stream_through_the_cli(tmp_path):
    before = tree_snapshot(KIMI)
    out = run_cli("replay", KIMI, STREAMS / "kimi-toolcall.json", "--keep-special-tokens", "--format", "json")
    assert out.exit_code == 0
    doc = json.loads(out.stdout)
    assert doc["text"] == TEXT
    assert doc["stream"] == {
        "format": "json",
        "tokens": MANIFEST["tokens"],
        "steps": MANIFEST["tokens"],
        "prompt_tokens": 0,
        "skip_special_tokens": False,
    }
    # rebuilt from the ranks the stream decodes: its multi-byte tokens and the 256 single bytes
    by_id = load_model(str(KIMI)).artifacts.tiktoken.by_id
    multi = {i for i in json.loads((STREAMS / "kimi-toolcall.json").read_text()) if len(by_id.get(i, b"")) > 1}
    assert doc["tokenizer"]["origin"] == "rebuilt from tiktoken.model ranks"
    assert doc["tokenizer"]["subset"] == (
        f"built from {256 + len(multi)} of 163584 ranks (those decoding the asked ids reads, and the 256 single bytes) "
        "and all 23 special tokens: its answers for decoding the asked ids are the full build's; load_seconds is this "
        "build's"
    )
    # naive's split characters are notes: reported, never failing the run
    assert {(f["name"], f["severity"], f["details"]["detokenizer"]) for f in doc["findings"]} == {
        ("stream-mismatch", "note", "naive"),
        ("replacement-char", "note", "naive"),
    }
    assert out.stderr == "tokaudit replay: 0 errors, 0 warnings, 2 notes\n"
    assert tree_snapshot(KIMI) == before


def test_stream_cut_inside_a_character(kimi):
    r = _replay(kimi, "kimi-toolcall-cut.json")
    assert _names(r.findings) == ["incomplete-utf8", "tool-call-json"]
    cut = MANIFEST["cut_at"]
    inc = next(f for f in r.findings if f.name == "incomplete-utf8")
    # 境 is E5 A2 83: the stream ends after E5 (token cut-2) and A2 (token cut-1)
    assert MANIFEST["cut_tail_hex"] == "e5 a2"
    assert inc.details["position"] == cut - 2
    assert inc.details["held_bytes"] == 2
    assert inc.details["held_by_detokenizer"] == {"offsets": 2, "decodestream": 2, "bytes": 2}
    assert "2 of 3 bytes (E5 A2) of a character in U+5880..U+58BF" in inc.message
    assert inc.details["emitted_tail"].endswith('"description": "检查 CDP 依赖环')
    tool = next(f for f in r.findings if f.name == "tool-call-json")
    assert tool.details["position"] == cut - 1
    assert tool.details["closed"] is False
    assert tool.details["error"] == "Unterminated string starting at: line 1 column 86 (char 85)"
    for d in r.result.detokenizers[1:]:
        assert d.text == VISIBLE[: VISIBLE.index("境")]


def test_unmapped_id_at_its_position(kimi):
    r = _replay(kimi, "kimi-unmapped.json")
    assert _names(r.findings) == ["unmapped-id"]
    (f,) = r.findings
    assert (f.code, f.severity.value) == ("TA501", "error")
    assert f.details["position"] == MANIFEST["unmapped_position"] == 30
    assert f.details["id"] == 163600
    assert f.details["profiles"] == {"files": None, "remote-code": "<|reserved_token_163600|>"}
    assert f.details["backends"]["hf"] == "'' (dropped)"
    assert f.details["backends"]["tiktoken"] == "KeyError: 'Invalid token for decoding: 163600'"
    assert f.details["context"] == {"before": "claude/skills/", "after": "web-access/scr"}
    by_name = {d.name: d for d in r.result.detokenizers}
    assert [e.to_json() for e in by_name["offsets"].errors] == [
        {"position": 30, "id": 163600, "kind": "dropped", "message": "silently dropped by tokenizers decode"}
    ]
    assert by_name["bytes"].errors[0].kind == "error"
    assert r.full == VISIBLE  # tokenizers drops the id: the text has a hole nobody sees


def test_jsonl_steps_of_mixed_sizes_give_the_flat_text(kimi):
    stream = read_stream(str(STREAMS / "kimi-toolcall.jsonl"))
    assert stream.ids == read_stream(str(STREAMS / "kimi-toolcall.json")).ids
    assert sorted({len(s) for s in stream.steps}) == [1, 2, 3, 4]
    r = _replay(kimi, "kimi-toolcall.jsonl")
    assert r.findings == []
    assert r.full == VISIBLE
    assert [d.text for d in r.result.detokenizers] == [VISIBLE] * 4
    assert r.result.stream.steps == MANIFEST["jsonl_steps"]
