"""SentencePiece ``tokenizer.model``: the protobuf reader, loading by content, id tables, the
``sentencepiece`` backend, the converted hf backend, TA303, and every command on the fixtures made
by fixtures/make_sentencepiece_fixtures.py (real models trained with the sentencepiece library)."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
import sentencepiece as spm

from tests.conftest import FIXTURES, run_cli, tree_snapshot
from tokaudit.artifacts.tokenizer_json import GPT2_PATTERN
from tokaudit.artifacts.sentencepiece_model import PieceType, parse_sentencepiece
from tokaudit.backends.base import call
from tokaudit.backends.registry import load_backends, parse_backend_list
from tokaudit.model.load import load_model

LLAMA = FIXTURES / "spm-llama-like"
UNIGRAM = FIXTURES / "spm-unigram"
FAKE = FIXTURES / "spm-fake-model"

TEXT = "Hello world! Où est la bibliothèque? 日本語 1234 🙂 tabs\tand  spaces"


def processor(path: Path) -> spm.SentencePieceProcessor:
    return spm.SentencePieceProcessor(model_file=str(path / "tokenizer.model"))


@pytest.fixture
def llama_only(tmp_path: Path) -> Path:
    """The llama-like model without its tokenizer.json: tokenizer.model is the vocabulary."""
    out = tmp_path / "llama-only"
    out.mkdir()
    for name in ("tokenizer.model", "tokenizer_config.json"):
        shutil.copy(LLAMA / name, out / name)
    return out


# -- the protobuf reader --------------------------------------------------------------------------


def _mistral_models() -> list[Path]:
    try:
        import mistral_common
    except ImportError:
        return []
    data = Path(mistral_common.__file__).parent / "data"
    return sorted(p for p in data.glob("*.model*"))


@pytest.mark.parametrize(
    "path", [LLAMA / "tokenizer.model", UNIGRAM / "tokenizer.model", *_mistral_models()], ids=lambda p: p.name
)
def test_reader_agrees_with_the_sentencepiece_library(path: Path) -> None:
    """Every piece, score and type, and the special ids, as the library reads the same bytes."""
    model = parse_sentencepiece(path)
    sp = spm.SentencePieceProcessor(model_proto=path.read_bytes())
    assert len(model.pieces) == sp.get_piece_size()
    for i, p in enumerate(model.pieces):
        assert p.piece == sp.id_to_piece(i)
        assert p.score == pytest.approx(sp.get_score(i))
        assert (p.type is PieceType.CONTROL) == sp.is_control(i)
        assert (p.type is PieceType.UNKNOWN) == sp.is_unknown(i)
        assert (p.type is PieceType.BYTE) == sp.is_byte(i)
        assert (p.type is PieceType.UNUSED) == sp.is_unused(i)
    assert (model.unk_id, model.bos_id, model.eos_id, model.pad_id) == (
        sp.unk_id(),
        sp.bos_id(),
        sp.eos_id(),
        sp.pad_id(),
    )


def test_reader_specs_of_the_fixtures() -> None:
    llama = parse_sentencepiece(LLAMA / "tokenizer.model")
    assert (llama.model_type, llama.byte_fallback, llama.normalizer) == ("bpe", True, "identity")
    assert (llama.add_dummy_prefix, llama.remove_extra_whitespaces, llama.escape_whitespaces) == (True, False, True)
    assert [p.piece for p in llama.pieces[:5]] == ["<unk>", "<s>", "</s>", "[INST]", "[/INST]"]
    assert sorted(llama.special_ids) == [1, 2, 3, 4]  # control pieces; <unk> is the unknown piece
    assert llama.unk_piece == "<unk>" and llama.unk_surface == " \u2047 "
    assert len(llama.ids_of_type(PieceType.BYTE)) == 256
    assert llama.pieces[5].piece == "<0x00>" and llama.piece_bytes(5) == b"\x00"
    uni = parse_sentencepiece(UNIGRAM / "tokenizer.model")
    assert (uni.model_type, uni.byte_fallback, uni.normalizer, uni.pad_id) == ("unigram", False, "nmt_nfkc", 3)
    assert len(uni.precompiled_charsmap) > 100_000


def test_piece_bytes_follow_the_decoder() -> None:
    """'▁' is a space, <0xNN> is that byte, control pieces keep their text (marked special)."""
    model = load_model(str(LLAMA))
    sp = model.artifacts.sentencepiece
    assert sp is not None
    word = next(i for i, p in enumerate(sp.pieces) if p.piece == "\u2581the")
    assert sp.by_id[word] == b" the"
    assert sp.by_id[5 + 0xE6] == b"\xe6"
    assert sp.by_id[1] == b"<s>"


# -- malformed protobuf: exit 2, one line naming the file and the byte offset --------------------


def _key(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _piece(text: str, score: float = 0.0, kind: int = 1) -> bytes:
    raw = text.encode()
    body = _key(1, 2) + _varint(len(raw)) + raw + _key(2, 5) + struct.pack("<f", score) + _key(3, 0) + _varint(kind)
    return _key(1, 2) + _varint(len(body)) + body


VALID = _piece("<unk>", 0.0, 2) + _piece("<s>", 0.0, 3) + _piece("</s>", 0.0, 3) + _piece("\u2581a", -1.0)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        # truncated: the last piece ("\u2581a": 15 bytes, a 13-byte body) loses its last 3 bytes
        (VALID[:-3], f"ModelProto field 1 declares 13 bytes but only 10 remain at byte {len(VALID) - 15}"),
        # a varint of 11 bytes
        (
            VALID + _key(2, 0) + b"\xff" * 11,
            f"bad varint in ModelProto field 2 (more than 10 bytes) at byte {len(VALID) + 1}",
        ),
        # trainer_spec (a message) written as a varint
        (
            VALID + _key(2, 0) + b"\x01",
            f"ModelProto field 2 has wire type varint, expected length-delimited at byte {len(VALID)}",
        ),
        # a length of 2**40 bytes
        (
            VALID + _key(2, 2) + _varint(2**40),
            f"ModelProto field 2 declares {2**40} bytes but only 0 remain at byte {len(VALID)}",
        ),
        # wire type 7 does not exist
        (VALID + _key(2, 7), f"invalid wire type 7 in ModelProto field 2 at byte {len(VALID)}"),
        # a piece type outside the enum (its key is 10 bytes into the new piece)
        (VALID + _piece("x", 0.0, 9), f"pieces[4].type is 9, not a piece type (1-6) at byte {len(VALID) + 10}"),
        # a varint cut by the end of the file
        (VALID + _key(2, 0) + b"\xff", f"truncated varint in ModelProto field 2 at byte {len(VALID) + 1}"),
        # damaged from the first piece on: still read as a protobuf (binary), never as tiktoken text
        (b"\x0a" + b"\xff" * 11, "bad varint in the length of ModelProto field 1 (more than 10 bytes) at byte 1"),
        (b"\x0a\x05\x0a\x03<s", "ModelProto field 1 declares 5 bytes but only 4 remain at byte 0"),
    ],
    ids=[
        "truncated",
        "bad-varint",
        "wrong-wire-type",
        "huge-length",
        "invalid-wire-type",
        "bad-piece-type",
        "cut-varint",
        "damaged-first-piece",
        "cut-first-piece",
    ],
)
def test_malformed_model_is_one_line_and_exit_2(tmp_path: Path, data: bytes, message: str) -> None:
    target = tmp_path / "tokenizer.model"
    target.write_bytes(data)
    r = run_cli("scan", str(tmp_path), "--format", "json")
    assert r.exit_code == 2
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0] == f"tokaudit: error: {target}: malformed SentencePiece model: {message}"


def test_special_id_beyond_the_pieces_is_an_input_error(tmp_path: Path) -> None:
    trainer = _key(41, 0) + _varint(7)  # bos_id 7 with 4 pieces
    (tmp_path / "tokenizer.model").write_bytes(VALID + _key(2, 2) + _varint(len(trainer)) + trainer)
    r = run_cli("scan", str(tmp_path))
    assert r.exit_code == 2
    assert r.stderr.splitlines() == [
        f"tokaudit: error: {tmp_path / 'tokenizer.model'}: malformed SentencePiece model: trainer_spec.bos_id 7 is "
        "not below the 4 pieces"
    ]


def test_hand_made_valid_model_loads_and_the_library_agrees(tmp_path: Path) -> None:
    """The bytes the malformed cases start from are themselves a valid model for both readers."""
    (tmp_path / "tokenizer.model").write_bytes(VALID)
    model = parse_sentencepiece(tmp_path / "tokenizer.model")
    assert [(p.piece, p.type) for p in model.pieces] == [
        ("<unk>", PieceType.UNKNOWN),
        ("<s>", PieceType.CONTROL),
        ("</s>", PieceType.CONTROL),
        ("\u2581a", PieceType.NORMAL),
    ]
    sp = spm.SentencePieceProcessor(model_proto=VALID)
    assert [sp.id_to_piece(i) for i in range(4)] == ["<unk>", "<s>", "</s>", "\u2581a"]


# -- loading by content ---------------------------------------------------------------------------


def test_tiktoken_ranks_named_tokenizer_model_load_as_ranks() -> None:
    model = load_model(str(FAKE))
    a = model.artifacts
    assert a.sentencepiece is None and a.tiktoken is not None
    assert a.tiktoken.name == "tokenizer.model"
    assert len(a.tiktoken.by_id) == 264 and a.tiktoken.by_id[258] == b" the"
    lb = load_backends(model, ["tiktoken"], GPT2_PATTERN)[0]
    assert lb.backend is not None, lb.unavailable
    import tiktoken

    ranks = {t: i for i, t in a.tiktoken.by_id.items()}
    own = tiktoken.Encoding("fake", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={})
    assert lb.backend.encode(" the thing") == own.encode(" the thing") == [258, 32, 256, 260]


def test_directory_with_only_tokenizer_model_scans(llama_only: Path) -> None:
    before = tree_snapshot(llama_only)
    r = run_cli("scan", str(llama_only), "--format", "json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    target = doc["targets"][0]
    assert target["artifacts"] == [
        {"file": "tokenizer.model", "kind": "sentencepiece", "entries": 600},
        {"file": "tokenizer_config.json", "kind": "tokenizer_config", "entries": 5},
    ]
    assert target["vocab"]["mapped"] == 600
    assert sorted({f["code"] for f in doc["findings"]}) == ["TA301", "TA401"]
    assert tree_snapshot(llama_only) == before


def test_tokenizer_model_is_listed_next_to_tokenizer_json() -> None:
    r = run_cli("scan", str(LLAMA), "--format", "json")
    doc = json.loads(r.stdout)
    kinds = [(a["file"], a["kind"], a["entries"]) for a in doc["targets"][0]["artifacts"]]
    assert ("tokenizer.model", "sentencepiece", 600) in kinds
    assert ("tokenizer.json", "tokenizer_json", 605) in kinds
    assert "TA303" not in {f["code"] for f in doc["findings"]}


def test_single_model_file_named_like_mistral_common(tmp_path: Path) -> None:
    target = tmp_path / "tokenizer.model.v3"
    shutil.copy(LLAMA / "tokenizer.model", target)
    model = load_model(str(target))
    assert model.vocab_artifact == "tokenizer.model.v3"
    assert model.files.mapped.count == 600


def test_id_tables_mark_control_pieces_special(llama_only: Path) -> None:
    model = load_model(str(llama_only))
    tokens, special = model.files.flat
    assert sorted(special) == [0, 1, 2, 3, 4]
    assert tokens[3] == b"[INST]"
    assert model.files.lookup(1).layer.rule == "control pieces"  # type: ignore[union-attr]
    # tokenizer_config.json lists <unk> as special: its flags win over the piece's (not a control piece)
    assert model.files.lookup(0).layer.rule == "added_tokens_decoder (special)"  # type: ignore[union-attr]
    assert model.files.lookup(300).layer.rule == "sentencepiece bpe pieces"  # type: ignore[union-attr]


# -- TA303: tokenizer.model vs tokenizer.json -----------------------------------------------------


def test_artifact_disagreement_on_swapped_pieces(tmp_path: Path) -> None:
    for name in ("tokenizer.model", "tokenizer_config.json", "tokenizer.json"):
        shutil.copy(LLAMA / name, tmp_path / name)
    data = json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = data["model"]["vocab"]
    by_id = {i: t for t, i in vocab.items()}
    vocab[by_id[300]], vocab[by_id[301]] = 301, 300
    (tmp_path / "tokenizer.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    r = run_cli("scan", str(tmp_path), "--format", "json", "--select", "TA303")
    assert r.exit_code == 1
    (finding,) = json.loads(r.stdout)["findings"]
    sp = parse_sentencepiece(LLAMA / "tokenizer.model")
    assert finding["ids"] == [[300, 301]] and finding["count"] == 2
    assert finding["details"]["examples"][0] == {
        "id": 300,
        "tokenizer.model": sp.pieces[300].piece,
        "tokenizer.json": sp.pieces[301].piece,
    }
    assert finding["location"] == {"file": "tokenizer.json"}


# -- the sentencepiece backend --------------------------------------------------------------------


def test_backend_encode_and_decode_are_the_library(llama_only: Path) -> None:
    sp = processor(LLAMA)
    model = load_model(str(llama_only))
    (lb,) = load_backends(model, ["sentencepiece"])
    backend = lb.backend
    assert backend is not None, lb.unavailable
    ids = backend.encode(TEXT)
    assert ids == sp.encode(TEXT)
    assert backend.decode(ids) == sp.decode(ids) == TEXT.replace("\t", "\t")


def test_backend_special_strings_split_like_the_slow_tokenizer(llama_only: Path) -> None:
    sp = processor(LLAMA)
    backend = load_backends(load_model(str(llama_only)), ["sentencepiece"])[0].backend
    assert backend is not None
    ids = backend.encode("<s>[INST] Hi there [/INST] ok</s>")
    assert ids == [1, 3, *sp.encode(" Hi there "), 4, *sp.encode(" ok"), 2]
    # the library alone never matches "<s>" in text
    assert 1 not in sp.encode("<s>")
    # each segment got its own dummy prefix (legacy), and sentencepiece strips only the first
    assert backend.decode(ids, skip_special_tokens=True) == sp.decode(ids) == " Hi there   ok"
    # special pieces rendered as text, as the tokenizer.json decoder (Replace, ByteFallback, Fuse, Strip) does
    from tokenizers import Tokenizer

    fast = Tokenizer.from_file(str(LLAMA / "tokenizer.json"))
    assert fast.encode("<s>[INST] Hi there [/INST] ok</s>", add_special_tokens=False).ids == ids
    assert backend.decode(ids) == fast.decode(ids, skip_special_tokens=False) == "<s>[INST]  Hi there [/INST]  ok</s>"


def test_backend_out_of_range_id_is_caught(llama_only: Path) -> None:
    backend = load_backends(load_model(str(llama_only)), ["sentencepiece"])[0].backend
    assert backend is not None
    outcome = call(backend.decode, [5, 600])
    assert (outcome.error_type, outcome.error) == ("IndexError", "OUT_OF_RANGE: piece id is out of range.")


def test_default_backends_include_sentencepiece_only_with_a_model(llama_only: Path) -> None:
    names = [lb.name for lb in load_backends(load_model(str(llama_only)), parse_backend_list(None))]
    assert "sentencepiece" in names
    names = [lb.name for lb in load_backends(load_model(str(FAKE)), parse_backend_list(None))]
    assert "sentencepiece" not in names


def test_converted_hf_backend_matches_the_library(llama_only: Path) -> None:
    """Without tokenizer.json, hf is converted from tokenizer.model (merges in piece-score order)."""
    sp = processor(LLAMA)
    lb = load_backends(load_model(str(llama_only)), ["hf"])[0]
    assert lb.backend is not None, lb.unavailable
    assert lb.detail == "converted from tokenizer.model (bpe, as transformers' SentencePiece converters do)"
    for text in (TEXT, "   Hello\n    Hello  \n\t Hello", "x" * 50, "[INST] a [/INST]"):
        ids = lb.backend.encode(text)
        assert ids == load_backends(load_model(str(llama_only)), ["sentencepiece"])[0].backend.encode(text)  # type: ignore[union-attr]
        assert lb.backend.decode(ids, skip_special_tokens=True) == sp.decode(ids)


# -- every command on the fixtures ----------------------------------------------------------------


def _compare(target: Path, backends: str) -> tuple[int, dict, str]:
    r = run_cli("compare", str(target), "--backends", backends, "--format", "json", "--quiet")
    return r.exit_code, json.loads(r.stdout) if r.stdout else {}, r.stderr


def test_compare_runs_sentencepiece_against_tokenizers() -> None:
    code, doc, stderr = _compare(LLAMA, "hf,sentencepiece")
    assert code in (0, 1), stderr
    pair = next(p for p in doc["pairs"] if p["backends"] == ["hf", "sentencepiece"])
    assert pair["cases"] == doc["corpus"]["cases"] > 400
    assert pair["encode_mismatch"] == 0
    assert pair["decode_mismatch"] == 0
    rows = {b["name"]: b for b in doc["backends"]}
    assert rows["hf"]["detail"] == "tokenizer.json"
    assert rows["sentencepiece"]["available"] is True


def test_compare_on_model_only_and_unigram(llama_only: Path) -> None:
    code, doc, stderr = _compare(llama_only, "hf,sentencepiece")
    pair = next(p for p in doc["pairs"] if p["backends"] == ["hf", "sentencepiece"])
    assert pair["encode_mismatch"] == 0, stderr
    code, doc, stderr = _compare(UNIGRAM, "hf,sentencepiece")
    assert code in (0, 1), stderr
    pair = next(p for p in doc["pairs"] if p["backends"] == ["hf", "sentencepiece"])
    # tokenizers' Precompiled normalizer and sentencepiece split one combining-mark case differently
    assert pair["encode_mismatch"] <= 1


def test_encode_and_decode_commands(llama_only: Path) -> None:
    sp = processor(LLAMA)
    r = run_cli("encode", str(llama_only), TEXT, "--backend", "sentencepiece", "--format", "json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["targets"][0]["ids"] == sp.encode(TEXT)
    ids = sp.encode(TEXT)
    r = run_cli("decode", str(llama_only), ",".join(map(str, ids)), "--backend", "sentencepiece", "--format", "json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["targets"][0]["text"] == sp.decode(ids)


def test_replay_text_is_the_library_decode(llama_only: Path, tmp_path: Path) -> None:
    sp = processor(LLAMA)
    ids = [1, *sp.encode(TEXT), 2]
    stream = tmp_path / "stream.json"
    stream.write_text(json.dumps(ids))
    r = run_cli("replay", str(llama_only), str(stream), "--format", "json")
    assert r.exit_code in (0, 1), r.stderr
    doc = json.loads(r.stdout)
    target = doc["targets"][0] if doc.get("targets") else doc
    assert target["text"] == sp.decode(ids) == TEXT
    assert [f for f in doc["findings"] if f["severity"] == "error"] == []


def test_fuzz_and_explain_use_the_sentencepiece_backend(llama_only: Path) -> None:
    r = run_cli("fuzz", str(llama_only), "--iterations", "50", "--format", "json")
    assert r.exit_code in (0, 1), r.stderr
    r = run_cli("explain", str(llama_only), "1", "300", "--format", "json")
    assert r.exit_code in (0, 1), r.stderr
    doc = json.loads(r.stdout)
    ids = doc["targets"][0]["ids"] if doc.get("targets") else doc["ids"]
    by_id = {e["id"]: e for e in ids}
    assert "sentencepiece" in json.dumps(by_id[300]["backends"])
    assert parse_sentencepiece(LLAMA / "tokenizer.model").pieces[300].piece == "\u2581\u2581"
    assert by_id[300]["text"] == processor(LLAMA).decode([300]) == " "  # the decoder strips the dummy prefix


def test_converter_budget_refuses_a_hostile_piece(tmp_path: Path) -> None:
    """A 2000-character piece (trainers cap pieces at 16 by default) is not split into 2000 merges
    candidates of 2000 characters each: the converted hf backend is unavailable, with the reason."""
    trainer = _key(3, 0) + _varint(2)  # model_type bpe
    data = VALID + _piece("\u2581" + "a" * 1999, -2.0) + _key(2, 2) + _varint(len(trainer)) + trainer
    (tmp_path / "tokenizer.model").write_bytes(data)
    model = load_model(str(tmp_path))
    hf, sp = load_backends(model, ["hf", "sentencepiece"])
    assert hf.unavailable == "a piece of 2000 characters is longer than the 1024 the converter splits"
    assert sp.backend is not None and sp.backend.encode("a") == spm.SentencePieceProcessor(model_proto=data).encode("a")
