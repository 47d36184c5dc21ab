"""replay's bulk paths compute what the step-by-step algorithms compute: UTF-8 decoding at cuts
against ``codecs``' incremental decoder, ``bytes`` and ``decodestream`` over a flat stream against
their per-step loops, ``offsets`` against the TGI/vLLM algorithm written out plainly, and the bytes
run's text lengths against the reference computed from the table's bytes."""

from __future__ import annotations

import codecs
import json

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from tests.conftest import FIXTURES
from tokaudit.model.load import load_model
from tokaudit.stream.detokenizers import INITIAL_OFFSET, REPLACEMENT, build_detokenizers, run
from tokaudit.stream.readers import read_stream
from tokaudit.stream.steps import Stream
from tokaudit.stream.replay import _generated, _reference_chars, decode_context, load_tokenizer
from tokaudit.stream.utf8 import character_starts, decode_at_cuts

STREAMS = FIXTURES / "streams"
KIMI = FIXTURES / "kimi-k2.5"
CASES = [
    (KIMI, "kimi-toolcall.json"),
    (KIMI, "kimi-toolcall-cut.json"),
    (KIMI, "kimi-unmapped.json"),
    (FIXTURES / "tiny-tiktoken", "tiny-capture.sse"),
    (STREAMS / "byte-fallback", "byte-fallback.json"),
]


def _incremental(held: bytes, pieces: list[bytes]) -> tuple[str, list[int], list[int], bytes]:
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    decoder.decode(held)
    text, ends, holding = "", [], []
    for piece in pieces:
        text += decoder.decode(piece)
        ends.append(len(text))
        holding.append(len(decoder.getstate()[0]))
    return text, ends, holding, decoder.getstate()[0]


@settings(max_examples=400, deadline=None)
@given(
    st.text(alphabet="ab é北🌶\u00a0—\ufffd", max_size=40),
    st.lists(st.integers(0, 200), max_size=12),
    st.integers(0, 3),
    st.booleans(),
)
def test_decode_at_cuts_is_the_incremental_decoder(text, cuts, held_cut, truncate):
    data = text.encode()[:-1] if truncate and text else text.encode()
    bounds = sorted({min(c, len(data)) for c in cuts}) + [len(data)]
    pieces = [data[a:b] for a, b in zip([0, *bounds], bounds)]
    # the decoder may already hold the start of the first character (its state after a previous block)
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    decoder.decode(pieces[0][:held_cut])
    held = decoder.getstate()[0] if decoder.getstate()[0] == pieces[0][:held_cut] else b""
    pieces[0] = pieces[0][len(held) :]
    expected = _incremental(held, pieces)
    got = decode_at_cuts(held + b"".join(pieces), len(held), map(len, pieces), map(character_starts, pieces), 7)
    assert got is not None  # valid UTF-8 apart from an unfinished last character
    assert (got[0], [e - 7 for e in got[1]], list(got[2]), got[3]) == expected


def test_decode_at_cuts_declines_invalid_utf8():
    assert decode_at_cuts(b"a\xffb", 0, [1, 1, 1], [1, 1, 1]) is None
    assert decode_at_cuts(b"\xe5a", 1, [1], [1]) is None  # a held lead byte the next byte does not continue


def _flat(path) -> Stream:
    stream = read_stream(str(path))
    return Stream(stream.format, stream.ids)  # one id per step: the bulk paths apply


def _plain_offsets(ctx, ids: list[int]) -> list[str]:
    """The TGI / vLLM incremental detokenizer as they write it: decode the window before and after the
    new token, emit the difference unless it ends in U+FFFD, slide the window on emission."""
    window: list[int] = []
    prefix = read = 0
    out = []
    for token_id in ids:
        window.append(token_id)
        prefix_text = ctx.tokenizer.decode(window[prefix:read], ctx.skip_special_tokens)
        new_text = ctx.tokenizer.decode(window[prefix:], ctx.skip_special_tokens)
        if len(new_text) > len(prefix_text) and not new_text.endswith(REPLACEMENT):
            out.append(new_text[len(prefix_text) :])
            prefix, read = read, len(window)
        else:
            out.append("")
    return out


@pytest.mark.parametrize("target,name", CASES, ids=[n for _, n in CASES])
@pytest.mark.parametrize("skip", [True, False], ids=["skip", "keep"])
def test_bulk_paths_equal_the_step_by_step_algorithms(replay_models, target, name, skip):
    model, (tokenizer, *_) = replay_models(target)
    stream = _flat(STREAMS / name)
    ids = list(stream.ids) * 3  # repeated: the memoised steps are hit, not only filled
    stream = Stream("json", ids)
    assert INITIAL_OFFSET == 5
    for detok in ("offsets", "decodestream", "bytes", "naive"):
        made = build_detokenizers([detok], decode_context(model, tokenizer, skip), ())
        if not made:
            continue
        bulk = run(made[0], stream.steps)
        looped = run(build_detokenizers([detok], decode_context(model, tokenizer, skip), ())[0], [(i,) for i in ids])
        assert (list(bulk.chunks), list(bulk.held), bulk.held_bytes, bulk.flush) == (
            list(looped.chunks),
            list(looped.held),
            looped.held_bytes,
            looped.flush,
        ), detok
        assert [e.to_json() for e in bulk.errors] == [e.to_json() for e in looped.errors], detok
        if detok == "offsets":
            assert list(bulk.chunks) == _plain_offsets(decode_context(model, tokenizer, skip), ids)


@pytest.mark.parametrize("target,name", CASES, ids=[n for _, n in CASES])
def test_bytes_run_reproducing_the_table_has_the_reference_lengths(replay_models, target, name):
    model, (tokenizer, *_) = replay_models(target)
    stream = _flat(STREAMS / name)
    ctx = decode_context(model, tokenizer, True)
    detok = build_detokenizers(["bytes"], ctx, ())[0]
    bytes_run = run(detok, stream.steps)
    full = _generated(ctx, (), stream.ids, "")
    reference = _reference_chars(ctx, (), stream.ids, full)
    # byte-fallback's decoder turns <0xE5>-style pieces into bytes: not the table's spelling
    assert detok.reproduces_table() is (name != "byte-fallback.json")
    if detok.reproduces_table():
        assert bytes_run.ends == reference


def test_kimi_cut_stream_holds_the_partial_character_in_bulk(replay_models):
    """The cut tool call ends inside 境 (E5 A2 83): two bytes held after the last step, as the loop holds them."""
    model, (tokenizer, *_) = replay_models(KIMI)
    stream = _flat(STREAMS / "kimi-toolcall-cut.json")
    manifest = json.loads((STREAMS / "manifest.json").read_text())["kimi-k2.5"]
    bytes_run = run(build_detokenizers(["bytes"], decode_context(model, tokenizer, True), ())[0], stream.steps)
    assert bytes_run.held_bytes == len(bytes.fromhex(manifest["cut_tail_hex"])) == 2
    assert bytes_run.flush == "\ufffd"


@pytest.mark.parametrize(
    "name", ["kimi-toolcall.json", "kimi-toolcall-cut.json", "kimi-unmapped.json", "kimi-toolcall.jsonl"]
)
def test_replay_with_the_stream_ids_subset_equals_the_full_rank_build(replay_models, name):
    """A tokenizer rebuilt from only the stream's ranks (+ bytes and specials) replays as the full build."""
    from tokaudit.stream.replay import ReplayOptions, replay

    model, _ = replay_models(KIMI)
    stream = read_stream(str(STREAMS / name))
    options = ReplayOptions(["full", "offsets", "decodestream", "bytes", "naive"], prompt=tuple(stream.ids[:3]))
    full_build = load_tokenizer(model)
    subset = replay(model, stream, options)
    whole = replay(model, stream, options, full_build)
    assert "of 163584 ranks" in (subset.result.tokenizer.subset or "") and whole.result.tokenizer.subset is None
    docs = [r.result.to_json() for r in (subset, whole)]
    for doc in docs:
        doc.pop("tokenizer")
        doc["timeline"] = list(doc["timeline"])
    assert docs[0] == docs[1]
    assert [f.to_json() for f in subset.findings] == [f.to_json() for f in whole.findings]


def test_a_stream_that_never_completes_a_character_stalls_offsets_and_decodestream_in_linear_time(tmp_path):
    """20,000 copies of a lone continuation byte (Kimi id 128, b'\\x80'): every window decode ends in
    U+FFFD, so offsets and DecodeStream would hold forever and re-decode a growing window (quadratic:
    this took 509 s). Both are reported stalled at the 256th id and not stepped further."""
    import subprocess
    import sys

    from tokaudit.stream.detokenizers import STALL_IDS

    model = load_model(str(KIMI))
    assert model.artifacts.tiktoken.by_id[128] == b"\x80"
    stream = tmp_path / "stall.json"
    stream.write_text(json.dumps([128] * 20_000))
    # the timeout only guards the quadratic case (about 1 s here; budgets are not benchmarks)
    proc = subprocess.run(
        [sys.executable, "-m", "tokaudit", "replay", str(KIMI), str(stream), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    stalls = {(f["details"]["detokenizer"], f["details"]["position"]) for f in doc["findings"] if f["code"] == "TA510"}
    assert stalls == {("offsets", STALL_IDS - 1), ("decodestream", STALL_IDS - 1)}
    assert {f["severity"] for f in doc["findings"] if f["code"] == "TA510"} == {"warning"}
    runs = {d["name"]: d for d in doc["detokenizers"]}
    for name in ("offsets", "decodestream"):  # everything held is released at the end, as the full decode has it
        assert runs[name]["text"] == "" and runs[name]["text"] + runs[name]["flush"] == doc["text"] == "\ufffd" * 20_000
        assert runs[name]["held_bytes"] == 20_000


def _stepped_decodestream(model, tokenizer, skip: bool, ids: list[int], prompt=(), prefill=False):
    """DecodeStream's run with the library stream stepped id by id (the per-step loop)."""
    from tokaudit.stream.detokenizers import DecodeStreamDetok

    ctx = decode_context(model, tokenizer, skip)
    return run(DecodeStreamDetok(ctx, prompt, prefill), [(i,) for i in ids])


def _replayed_decodestream(model, tokenizer, skip: bool, ids: list[int], prompt=(), prefill=False):
    """DecodeStream's run as replay makes it (taken from offsets' run where the two must agree), and
    whether it was taken from offsets'."""
    from tokaudit.stream.detokenizers import DecodeStreamDetok, Offsets

    ctx = decode_context(model, tokenizer, skip)
    offsets, stream = Offsets(ctx, prompt), DecodeStreamDetok(ctx, prompt, prefill)
    steps = Stream("json", ids).steps
    shared = stream.run_from(offsets, run(offsets, steps), steps)
    return (shared or run(stream, steps)), shared is not None


#: Kimi ids that make streams interesting: lead and continuation bytes, specials, plain text, an unmapped id
KIMI_IDS = [*range(128, 140), 160, 191, 195, 229, 240, 163584, 163585, 163586, 1, 2, 3, 4, 1000, 2000, 99999, 163600]


def _same_run(a, b) -> None:
    assert (list(a.chunks), list(a.held), a.held_bytes, a.flush, a.empty_steps) == (
        list(b.chunks),
        list(b.held),
        b.held_bytes,
        b.flush,
        b.empty_steps,
    )
    assert [e.to_json() for e in a.errors] == [e.to_json() for e in b.errors]


@pytest.mark.parametrize("target,name", CASES, ids=[n for _, n in CASES])
@pytest.mark.parametrize("skip", [True, False], ids=["skip", "keep"])
def test_decodestream_taken_from_offsets_equals_the_library_stepped(replay_models, target, name, skip):
    model, (tokenizer, *_) = replay_models(target)
    ids = list(_flat(STREAMS / name).ids) * 3
    replayed, shared = _replayed_decodestream(model, tokenizer, skip, ids)
    _same_run(replayed, _stepped_decodestream(model, tokenizer, skip, ids))
    # byte-fallback's window text stops extending what was emitted (DecodeStream raises Invalid prefix there)
    assert shared is (name != "byte-fallback.json")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(KIMI_IDS), max_size=60), st.booleans())
def test_decodestream_taken_from_offsets_equals_the_library_on_arbitrary_kimi_streams(replay_models, ids, skip):
    """Lead and continuation bytes (a character may complete, or not), special tokens, unmapped ids and text,
    in any order: whenever
    replay takes DecodeStream's run from offsets', it is the one the library's stream makes."""
    model, (tokenizer, *_) = replay_models(KIMI)
    replayed, shared = _replayed_decodestream(model, tokenizer, skip, ids)
    event(f"taken from offsets: {shared}")
    _same_run(replayed, _stepped_decodestream(model, tokenizer, skip, ids))


@pytest.mark.parametrize("target,name", CASES, ids=[n for _, n in CASES])
@pytest.mark.parametrize("skip", [True, False], ids=["skip", "keep"])
def test_bulk_paths_over_multi_id_steps_equal_the_step_by_step_loops(replay_models, target, name, skip):
    """Speculative-decoding steps (1 to 4 ids, cutting characters anywhere): the bulk paths over a stream's
    steps give each step what the per-step loops give it."""
    model, (tokenizer, *_) = replay_models(target)
    ids = list(_flat(STREAMS / name).ids) * 3
    sizes = [1 + (k * 7) % 4 for k in range(len(ids))]
    grouped, k = [], 0
    for size in sizes:
        if k >= len(ids):
            break
        grouped.append(tuple(ids[k : k + size]))
        k += size
    stream = Stream.of_steps("jsonl", grouped)
    assert not stream.steps.single
    for detok in ("offsets", "decodestream", "bytes", "naive"):
        made = build_detokenizers([detok], decode_context(model, tokenizer, skip), ())
        if not made:
            continue
        bulk = run(made[0], stream.steps)
        looped = run(build_detokenizers([detok], decode_context(model, tokenizer, skip), ())[0], grouped)
        assert (list(bulk.chunks), list(bulk.held), bulk.held_bytes, bulk.flush, bulk.empty_steps) == (
            list(looped.chunks),
            list(looped.held),
            looped.held_bytes,
            looped.flush,
            looped.empty_steps,
        ), detok
        assert [e.to_json() for e in bulk.errors] == [e.to_json() for e in looped.errors], detok


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(KIMI_IDS), max_size=8),
    st.lists(st.sampled_from(KIMI_IDS), max_size=60),
    st.booleans(),
    st.booleans(),
)
def test_decodestream_after_a_prompt_taken_from_offsets_equals_the_library(replay_models, prompt, ids, prefill, skip):
    """With a prompt DecodeStream starts from another window than offsets: replay steps the library until the
    two windows meet and takes offsets' run from there; the result is the library's, both variants."""
    model, (tokenizer, *_) = replay_models(KIMI)
    replayed, shared = _replayed_decodestream(model, tokenizer, skip, ids, tuple(prompt), prefill)
    event(f"prompt {bool(prompt)}, taken from offsets: {shared}")
    _same_run(replayed, _stepped_decodestream(model, tokenizer, skip, ids, tuple(prompt), prefill))


def test_decodestream_not_sharing_a_run_is_stepped_from_where_it_stood(replay_models):
    """When the library's own stream disagrees with the shared run (here: offsets' run is tampered with
    after the windows meet), run_from declines and puts back the stream it stepped to find the meeting
    point: the run is then the library's, from the first generated id."""
    from dataclasses import replace

    from tokaudit.stream.detokenizers import DecodeStreamDetok, Offsets

    model, (tokenizer, *_) = replay_models(KIMI)
    ids = list(_flat(STREAMS / "kimi-toolcall.json").ids)
    prompt, rest = tuple(ids[:10]), ids[10:]
    for prefill in (False, True):
        ctx = decode_context(model, tokenizer, True)
        offsets, stream = Offsets(ctx, prompt), DecodeStreamDetok(ctx, prompt, prefill)
        steps = Stream("json", rest).steps
        done = run(offsets, steps)
        assert stream._meeting(steps.ids) is not None  # it steps past the head before the check fails
        tampered = replace(done, text=done.text[:-1] + "#")
        assert stream.run_from(offsets, tampered, steps) is None
        fresh = DecodeStreamDetok(ctx, prompt, prefill)
        assert (stream.pending, stream.held_now, [list(part) for part in stream.last], stream.errors) == (
            fresh.pending,
            fresh.held_now,
            [list(part) for part in fresh.last],
            fresh.errors,
        )
        _same_run(run(stream, steps), _stepped_decodestream(model, tokenizer, True, rest, prompt, prefill))
