"""``replay`` on the small fixtures: each detokenizer's behaviour, prompts, stops, byte-fallback
rewrites, chunk invariance, output formats and bad input. Streams are encoded with the fixture's own
encoding through the backends."""

from __future__ import annotations

import json

import pytest

from tests.conftest import FIXTURES, run_cli, tree_snapshot
from tokaudit.backends.registry import load_backends
from tokaudit.model.load import load_model

TINY = FIXTURES / "tiny-tiktoken"
STREAMS = FIXTURES / "streams"


@pytest.fixture(scope="module")
def tiny_encode():
    backend = load_backends(load_model(str(TINY)), ["tiktoken"])[0].backend
    return backend.encode


def _json(*args, input=None, code=None):
    out = run_cli("replay", *args, "--format", "json", "--quiet", input=input)
    if code is not None:
        assert out.exit_code == code, out.stderr
    return json.loads(out.stdout)


def _texts(doc):
    return {d["name"]: d["text"] for d in doc["detokenizers"]}


def _found(doc):
    return sorted((f["name"], f["severity"], f["details"].get("detokenizer")) for f in doc["findings"])


def test_sse_capture_replays_to_the_encoded_text():
    manifest = json.loads((STREAMS / "manifest.json").read_text(encoding="utf-8"))["tiny-tiktoken"]
    doc = _json(TINY, STREAMS / "tiny-capture.sse", "--detokenizers", "full,offsets,decodestream,bytes", code=0)
    assert doc["stream"]["format"] == "sse"
    assert doc["stream"]["steps"] == manifest["sse_steps"]
    assert doc["text"] == manifest["text"] == "Hello 🌶 world: 北京天气 — café"
    assert set(_texts(doc).values()) == {manifest["text"]}
    assert doc["findings"] == []
    assert doc["chunk_invariance"] == {
        "checked": True,
        "sizes": [1, 2, 3, 4, 5, 6, 7, 8],
        "varied": [],
        "mode": "whole stream",
    }


def test_timeline_rows_show_bytes_chunks_and_held(tiny_encode):
    ids = tiny_encode("Hello 🌶")
    assert ids == [72, 435, 111, 337, 140, 182]
    doc = _json(TINY, "-", "--detokenizers", "offsets,bytes,naive", input=" ".join(map(str, ids)), code=0)
    rows = doc["timeline"]
    assert [r["bytes_hex"] for r in rows[3:]] == [["20f09f"], ["8c"], ["b6"]]
    assert [r["chunks"] for r in rows[3:]] == [
        {"offsets": "", "bytes": " ", "naive": " \ufffd"},
        {"offsets": "", "bytes": "", "naive": "\ufffd"},
        {"offsets": " 🌶", "bytes": "🌶", "naive": "\ufffd"},
    ]
    assert [r["held"] for r in rows[3:]] == [
        {"offsets": 3, "bytes": 2, "naive": 0},
        {"offsets": 4, "bytes": 3, "naive": 0},
        {"offsets": 0, "bytes": 0, "naive": 0},
    ]
    assert rows[3]["problems"] == ["replacement-char"]  # naive's note, marked on its row


def test_prompt_ending_inside_a_character(tiny_encode):
    ids = tiny_encode("Hello 🌶 world")
    prompt, gen = ids[:5], ids[5:]  # the prompt ends after 2 of the 4 bytes of 🌶... and one more
    doc = _json(TINY, "-", "--prompt", " ".join(map(str, prompt)), input=json.dumps(gen), code=1)
    assert doc["text"] == "🌶 world"
    assert _texts(doc) == {
        "full": "🌶 world",
        "offsets": " world",  # TGI's window: 'Hello 🌶' is no longer than 'Hello \ufffd', the 🌶 is lost
        "decodestream": " 🌶 world",  # the prompt's space was held with the partial character
        "decodestream-prefill": "Hello 🌶 world",  # the prompt was never adopted as prefix
        "bytes": "🌶 world",
        "naive": "\ufffd world",
    }
    assert _found(doc) == [
        ("prompt-leak", "error", "decodestream-prefill"),
        ("replacement-char", "note", "naive"),
        ("stream-mismatch", "error", "decodestream"),
        ("stream-mismatch", "error", "offsets"),
        ("stream-mismatch", "note", "naive"),
        ("text-rewritten", "error", "offsets"),
    ]
    assert doc["stream"]["prompt_tokens"] == 5


def test_prompt_from_a_file(tmp_path, tiny_encode):
    ids = tiny_encode("Hello 🌶 world")
    (tmp_path / "prompt.json").write_text(json.dumps(ids[:3]))
    doc = _json(
        TINY,
        "-",
        "--prompt",
        tmp_path / "prompt.json",
        "--detokenizers",
        "full,decodestream",
        input=json.dumps(ids[3:]),
        code=0,
    )
    assert _texts(doc) == {"full": " 🌶 world", "decodestream": " 🌶 world", "decodestream-prefill": " 🌶 world"}


def test_stop_string_inside_multi_token_steps(tiny_encode):
    ids = tiny_encode("北京天气<|im_end|>")
    assert ids == [229, 140, 151, 355, 172, 846, 176, 148, 1002]
    steps = "".join(json.dumps({"token_ids": s}) + "\n" for s in (ids[:4], ids[4:6], ids[6:]))
    doc = _json(TINY, "-", "--stop", "北", "--detokenizers", "offsets,decodestream,bytes", input=steps, code=1)
    stops = doc["stops"]
    assert stops["expected"] == {"position": 2, "matched": "北", "text": "", "max_held": 0}
    assert stops["detokenizers"]["offsets"]["position"] == 2
    assert stops["detokenizers"]["bytes"]["position"] == 2
    # DecodeStream holds the whole first step (it ends inside 京) and the second (inside 气)
    assert stops["detokenizers"]["decodestream"]["position"] == 6
    (f,) = doc["findings"]
    assert (f["name"], f["details"]["detokenizer"], f["details"]["position"]) == ("stop-split", "decodestream", 6)
    assert f["message"] == "decodestream: detects the stop at token 6 instead of 2"


def test_stop_string_holdback_and_stop_id(tiny_encode):
    ids = tiny_encode("The user is a cat")
    doc = _json(TINY, "-", "--stop", "is a", "--stop", "cat", input=json.dumps(ids), code=0)
    assert doc["stops"]["expected"] == {"position": 6, "matched": "is a", "text": "The user ", "max_held": 2}
    assert doc["findings"] == []
    doc = _json(
        TINY, "-", "--stop-id", "1002", "--stop", "天", input=json.dumps(tiny_encode("北京<|im_end|>天")), code=0
    )
    assert doc["stops"]["expected"] == {"position": 5, "matched": 1002, "text": "北京", "max_held": 0}


def test_byte_fallback_run_rewrites_emitted_text():
    manifest = json.loads((STREAMS / "manifest.json").read_text(encoding="utf-8"))["byte-fallback"]
    target = STREAMS / "byte-fallback"
    before = tree_snapshot(target)
    doc = _json(target, STREAMS / "byte-fallback.json", code=1)
    assert doc["text"] == manifest["full"] == "a ���� b"
    texts = _texts(doc)
    # Invalid prefix -> a fresh stream without context, as vLLM does: " b" loses its leading space
    assert texts["decodestream"] == "a 섬b"
    assert texts["offsets"] == "a 섬��� b"
    # UTF-8 replaces only the stray byte; the bytes follow the decoder chain, so its Strip removes the
    # space the first ▁ stands for
    assert texts["bytes"] == "a 섬\ufffd b"
    found = _found(doc)
    assert ("text-rewritten", "error", "decodestream") in found
    assert ("text-rewritten", "error", "offsets") in found
    rewritten = next(
        f for f in doc["findings"] if f["name"] == "text-rewritten" and f["details"]["detokenizer"] == "decodestream"
    )
    assert rewritten["details"]["position"] == 6
    assert rewritten["details"]["message"].startswith("Invalid prefix encountered while decoding stream. Token ID: 256")
    variance = [f for f in doc["findings"] if f["name"] == "chunk-variance"]
    assert [(f["details"]["detokenizer"], f["details"]["k"]) for f in variance] == [("decodestream", 2)]
    assert tree_snapshot(target) == before


def test_rich_output_has_timeline_findings_and_text(tiny_encode):
    ids = tiny_encode("Hello 🌶\n")
    out = run_cli("replay", TINY, "-", input=json.dumps(ids[:-2]))
    assert out.exit_code == 1
    lines = out.stdout.splitlines()
    assert lines[0] == f"tokaudit replay  {TINY}"
    assert "<20 F0 9F>" in out.stdout  # a partial-UTF-8 token shown as hex
    assert any(line.startswith("  ✗") and " 4  140 " in line for line in lines)
    assert " ERROR  TA502 incomplete-utf8" in out.stdout
    assert lines[-1] == "✗ FAIL: 1 error, 0 warnings, 2 notes (1 at or above --fail-on error)"
    full = run_cli("replay", TINY, "-", "--detokenizers", "full", input=json.dumps(ids))
    assert "    Hello 🌶\\n" in full.stdout.splitlines()  # invisible characters shown


@pytest.mark.parametrize(
    ("args", "stdin", "stderr"),
    [
        (["-"], "[1, -2]", "tokaudit: error: <stdin>:1: element 1: id -2 is negative\n"),
        (["-"], "1 2 x", "tokaudit: error: <stdin>:1: column 5: 'x' is not an integer token id\n"),
        (
            ["-", "--stream-format", "sse"],
            "1 2",
            "tokaudit: error: <stdin>:1: not a server-sent-events line (expected 'data: ...')\n",
        ),
        (
            ["-", "--detokenizers", "fast"],
            "1",
            "tokaudit: error: key --detokenizers: unknown detokenizer 'fast' (choose from full, offsets, "
            "decodestream, bytes, naive, llama.cpp-server)\n",
        ),
        (["-", "--prompt", "1 -5"], "1", "tokaudit: error: --prompt:1: column 3: id -5 is negative\n"),
        (["missing.json"], None, "tokaudit: error: missing.json: no such file\n"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, stdin, stderr):
    out = run_cli("replay", TINY, *args, input=stdin)
    assert out.exit_code == 2
    assert out.stderr == stderr
    assert out.stdout == ""


def test_every_stream_finding_has_position_and_id(tiny_encode):
    ids = tiny_encode("Hello 🌶 world")
    doc = _json(TINY, "-", "--prompt", " ".join(map(str, ids[:5])), input=json.dumps(ids[5:] + [999999]))
    assert doc["findings"]
    for f in doc["findings"]:
        pos = f["details"]["position"]
        assert f["details"]["id"] == (ids[5:] + [999999])[pos], f
