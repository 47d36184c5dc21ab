"""``replay`` at scale keeps what it finds: ``--steps`` (the full timeline, streamed) equals the
timeline computed the straightforward way, the default view keeps the steps around findings, and
chunk invariance checked in windows (long streams) reports exactly what the whole-stream check does.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import FIXTURES, run_cli
from tokaudit.stream.detokenizers import build_detokenizers
from tokaudit.stream.readers import read_stream
from tokaudit.stream.steps import Stream
from tokaudit.stream.replay import ReplayOptions, decode_context, replay

STREAMS = FIXTURES / "streams"
KIMI = FIXTURES / "kimi-k2.5"
TINY = FIXTURES / "tiny-tiktoken"
CASES = [
    (KIMI, "kimi-toolcall.json"),
    (KIMI, "kimi-toolcall-cut.json"),
    (KIMI, "kimi-toolcall.jsonl"),
    (KIMI, "kimi-unmapped.json"),
    (TINY, "tiny-capture.sse"),
    (STREAMS / "byte-fallback", "byte-fallback.json"),
]
ALL = ["full", "offsets", "decodestream", "bytes", "naive"]


def straightforward_timeline(model, tokenizer, stream, findings):
    """The timeline as replay computed it before it was streamed: every detokenizer fed the whole
    stream one step at a time, a chunk and the bytes held kept per step, one row per step."""
    ctx = decode_context(model, tokenizer, True)
    per_step = {}
    for detok in build_detokenizers(ALL, ctx, ()):
        chunks, held = [], []
        position = 0
        for ids in stream.steps:
            chunks.append(detok.step(ids, position))
            held.append(detok.held_bytes())
            position += len(ids)
        per_step[detok.name] = (chunks, held)
    problems = {}
    for f in findings:
        problems.setdefault(f["details"]["position"], set()).add(f["name"])
    rows, position = [], 0
    for s, ids in enumerate(stream.steps):
        entries = [model.files.lookup(i) for i in ids]
        rows.append(
            {
                "step": s,
                "position": position,
                "ids": list(ids),
                "bytes_hex": [e.token.hex() if e else None for e in entries],
                "special": [bool(e and e.layer.special) for e in entries],
                "chunks": {name: c[s] for name, (c, _) in per_step.items()},
                "held": {name: h[s] for name, (_, h) in per_step.items()},
                "problems": sorted(
                    set().union(*(problems.get(p, set()) for p in range(position, position + len(ids))))
                ),
            }
        )
        position += len(ids)
    return rows


@pytest.mark.parametrize(("target", "name"), CASES)
def test_steps_all_is_the_whole_timeline(replay_models, target, name):
    model, (tokenizer, *_) = replay_models(target)
    out = run_cli("replay", target, STREAMS / name, "--steps", "all", "--format", "json", "--quiet")
    assert out.exit_code in (0, 1), out.stderr
    doc = json.loads(out.stdout)
    stream = read_stream(str(STREAMS / name))
    assert doc["timeline"] == straightforward_timeline(model, tokenizer, stream, doc["findings"])
    assert doc["timeline"] == doc["targets"][0]["timeline"]
    assert doc["timeline_steps"]["shown"] == "all"
    assert doc["timeline_steps"]["rows"] == doc["stream"]["steps"] == len(stream.steps)


def test_default_view_of_a_long_stream_is_the_steps_around_findings(replay_models):
    out = run_cli("replay", KIMI, STREAMS / "kimi-toolcall-cut.json", "--format", "json", "--quiet")
    assert out.exit_code == 1
    doc = json.loads(out.stdout)
    steps = [row["step"] for row in doc["timeline"]]
    # 72 steps (> 60): the first 8, the last 8, and 2 on each side of every finding's step
    positions = sorted({f["details"]["position"] for f in doc["findings"]})
    assert positions == [55, 56, 70, 71]
    assert steps == [*range(0, 8), *range(53, 59), *range(64, 72)]
    assert doc["timeline_steps"] == {
        "shown": "around findings",
        "rows": 22,
        "steps": 72,
        "summary": doc["timeline_steps"]["summary"],
    }
    summary = doc["timeline_steps"]["summary"]
    assert summary["bytes"]["max_held"] == 2 and summary["offsets"]["characters"] == len(doc["detokenizers"][1]["text"])
    full = json.loads(
        run_cli(
            "replay", KIMI, STREAMS / "kimi-toolcall-cut.json", "--steps", "all", "--format", "json", "--quiet"
        ).stdout
    )["timeline"]
    assert doc["timeline"] == [full[s] for s in steps]


def test_steps_range_and_rich_blocks():
    doc = json.loads(
        run_cli(
            "replay", KIMI, STREAMS / "kimi-toolcall.json", "--steps", "10:13", "--format", "json", "--quiet"
        ).stdout
    )
    assert [row["step"] for row in doc["timeline"]] == [10, 11, 12]
    assert doc["timeline_steps"]["shown"] == "10:13"
    assert [
        row["step"]
        for row in json.loads(
            run_cli(
                "replay", KIMI, STREAMS / "kimi-toolcall.json", "--steps", "70:", "--format", "json", "--quiet"
            ).stdout
        )["timeline"]
    ] == [70, 71, 72, 73, 74, 75]
    rich = run_cli("replay", KIMI, STREAMS / "kimi-toolcall.json", "--steps", "10:13")
    assert "steps 10:13)" in rich.stdout
    rows = [line.split()[:2] for line in rich.stdout.splitlines() if line.startswith("       ")]
    assert rows[:3] == [["10", "2877"], ["11", "99"], ["12", "527"]]
    assert "       13 " not in rich.stdout


@pytest.mark.parametrize("value", ["x", "5", "9:3", "-1:4", "a:b"])
def test_bad_steps_is_one_line_and_exit_2(value):
    out = run_cli("replay", TINY, STREAMS / "tiny-capture.sse", "--steps", value)
    assert out.exit_code == 2
    assert out.stderr == (
        f"tokaudit: error: key --steps: {value!r} is not 'all' or a range FIRST:END of step numbers (e.g. 100:200)\n"
    )
    assert out.stdout == ""


def _findings(result):
    return sorted(
        (f.code, f.name, f.severity.value, json.dumps(f.details, sort_keys=True, default=str)) for f in result.findings
    )


@pytest.mark.parametrize(("target", "name"), CASES)
def test_windowed_chunk_invariance_finds_what_the_whole_stream_check_finds(replay_models, target, name):
    model, loaded = replay_models(target)
    stream = read_stream(str(STREAMS / name))
    whole = replay(model, stream, ReplayOptions(ALL), loaded)
    windows = replay(model, stream, ReplayOptions(ALL, full_rechunk_tokens=0), loaded)
    assert whole.result.chunk_invariance.coverage["mode"] == "whole stream"
    assert windows.result.chunk_invariance.coverage["mode"] == "windows"
    assert _findings(windows) == _findings(whole)


def test_windowed_check_keeps_the_cut_character_and_the_truncated_tool_call(replay_models):
    model, loaded = replay_models(KIMI)
    r = replay(
        model,
        read_stream(str(STREAMS / "kimi-toolcall-cut.json")),
        ReplayOptions(["full", "offsets", "decodestream", "bytes"], full_rechunk_tokens=0),
        loaded,
    )
    assert sorted(f.name for f in r.findings) == ["incomplete-utf8", "tool-call-json"]
    assert r.result.chunk_invariance.varied == ()


def test_windowed_check_on_a_long_stream_finds_the_byte_fallback_variance(replay_models):
    """A byte-fallback run repeated to 24,000 tokens: DecodeStream's Invalid-prefix restart makes its
    output depend on the chunking; the windows find it and the whole re-run confirms it (k=2)."""
    target = STREAMS / "byte-fallback"
    model, loaded = replay_models(target)
    ids = json.loads((STREAMS / "byte-fallback.json").read_text())
    stream = Stream("json", ids * 3000)
    options = ["full", "offsets", "decodestream", "bytes"]
    sampled = replay(model, stream, ReplayOptions(options), loaded)
    assert sampled.result.chunk_invariance.coverage["mode"] == "windows"
    assert sampled.result.chunk_invariance.varied == ({"detokenizer": "decodestream", "k": 2},)
    whole = replay(model, stream, ReplayOptions(options, full_rechunk_tokens=10**9), loaded)
    assert _findings(sampled) == _findings(whole)
    assert len(sampled.result.timeline) < 60 and sampled.result.timeline_steps.steps == 24_000


def test_rich_steps_all_on_a_long_stream_prints_one_line_per_step():
    """Beyond 2,000 rows the rich timeline is plain lines (a table measures every cell)."""
    ids = [72, 435, 111, 337, 140, 182] * 400  # "Hello 🌶" x 400: 2,400 steps
    out = run_cli("replay", TINY, "-", "--steps", "all", "--detokenizers", "offsets,bytes", input=json.dumps(ids))
    assert out.exit_code == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "  step │ ids │ token bytes │ offsets │ bytes │ held" in lines
    rows = [line for line in lines if line[:2] in ("  ", "✗ ") and " │ " in line and line[2:3].isdigit()]
    assert len(rows) == 2400
    assert rows[2399] == "  2399 │ 182 │ <B6> │  🌶 │ 🌶 │ 0 0"
    assert rows[2397] == "  2397 │ 337 │ <20 F0 9F> │  │   │ 3 2"  # offsets holds 3 bytes, bytes emits the space
    assert rows[2396] == "  2396 │ 111 │ o │ o │ o │ 0 0"
