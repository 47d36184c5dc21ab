"""tokaudit's own GGUF reader (tokaudit/artifacts/gguf_reader.py, gguf.py): what it reads from real files, and the
one-line errors for every kind of broken file the GGUF issue lists. Broken files are crafted byte by byte here (the
``gguf`` writer refuses to write most of them); well-formed ones come from the ``gguf`` writer and the committed
fixtures."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from conftest import FIXTURES
from tokaudit.artifacts.gguf import read_gguf_tokenizer
from tokaudit.artifacts.gguf_reader import read_gguf
from tokaudit.errors import InputError

CLEAN = FIXTURES / "llamacpp" / "clean-bpe.gguf"


def _s(text: str | bytes, order: str = "<") -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return struct.pack(order + "Q", len(raw)) + raw


def _kv(key: str, vtype: int, payload: bytes, order: str = "<") -> bytes:
    return _s(key, order) + struct.pack(order + "I", vtype) + payload


def _file(kvs: list[bytes], *, version: int = 3, n_tensors: int = 0, order: str = "<", tail: bytes = b"") -> bytes:
    return b"GGUF" + struct.pack(order + "IQQ", version, n_tensors, len(kvs)) + b"".join(kvs) + tail


def _tokens(*tokens: bytes) -> bytes:
    return _kv("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, len(tokens)) + b"".join(_s(t) for t in tokens))


MODEL = _kv("tokenizer.ggml.model", 8, _s("gpt2"))


def _error(tmp_path: Path, data: bytes) -> str:
    path = tmp_path / "m.gguf"
    path.write_bytes(data)
    with pytest.raises(InputError) as exc:
        read_gguf_tokenizer(path)
    return str(exc.value).replace(str(path), "m.gguf")


def test_clean_fixture_read_exactly() -> None:
    from tokenizers import Tokenizer

    record = read_gguf_tokenizer(CLEAN)
    tok = Tokenizer.from_file(str(FIXTURES / "clean-bpe" / "tokenizer.json"))
    vocab = tok.get_vocab(with_added_tokens=True)
    assert (record.version, record.byte_order, record.model, record.pre) == (3, "little", "gpt2", "gpt-2")
    assert len(record.tokens) == len(vocab)
    assert all(record.tokens[i] == text.encode() for text, i in vocab.items())
    assert record.merges is not None and record.merges[0] == b"\xc4\xa0 t"  # "Ġ t", the first merge of clean-bpe
    assert record.special_ids == {"bos": 997, "eos": 999, "pad": 997}  # <|endoftext|>, <|im_end|>
    assert record.types is not None and record.types[996:] == (1, 3, 3, 3)
    assert record.flags == {"add_bos": False}
    assert record.key_offsets["tokenizer.ggml.model"] > 24


def test_big_endian_reads_as_little_endian(tmp_path: Path) -> None:
    gguf = pytest.importorskip("gguf")
    for endian, name in ((gguf.GGUFEndian.LITTLE, "le.gguf"), (gguf.GGUFEndian.BIG, "be.gguf")):
        w = gguf.GGUFWriter(str(tmp_path / name), "llama", endianess=endian)
        w.add_tokenizer_model("llama")
        w.add_token_list([b"<unk>", b"\xff\xfe", "▁a".encode()])
        w.add_token_types([2, 1, 1])
        w.add_token_scores([0.0, -1.5, -2.0])
        w.add_bos_token_id(1)
        w.add_add_bos_token(True)
        w.add_chat_template("{{ bos_token }}")
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
    le, be = read_gguf_tokenizer(tmp_path / "le.gguf"), read_gguf_tokenizer(tmp_path / "be.gguf")
    assert (le.byte_order, be.byte_order) == ("little", "big")
    for record in (le, be):
        assert record.tokens == (b"<unk>", b"\xff\xfe", "▁a".encode())  # not UTF-8: kept as bytes
        assert record.types == (2, 1, 1)
        assert list(record.scores or []) == [0.0, -1.5, -2.0]
        assert (record.special_ids, record.flags) == ({"bos": 1}, {"add_bos": True})
        assert record.chat_templates == {"default": "{{ bos_token }}"}


def test_tensor_infos_give_rows_and_tensor_data_is_never_read(tmp_path: Path) -> None:
    """A 4 GiB sparse file: header and one token_embd info, then a hole where the weights would be."""
    info = _s("token_embd.weight") + struct.pack("<I", 2) + struct.pack("<QQ", 4096, 3) + struct.pack("<IQ", 0, 0)
    kvs = [
        _kv("general.architecture", 8, _s("llama")),
        _kv("llama.vocab_size", 4, struct.pack("<I", 4)),
        MODEL,
        _tokens(b"a", b"b", b"c"),
    ]
    data = _file(kvs, n_tensors=1, tail=info)
    path = tmp_path / "big.gguf"
    with path.open("wb") as fh:
        fh.write(data)
        fh.truncate(4 << 30)
    record = read_gguf_tokenizer(path)
    assert (record.vocab_size, record.embedding_rows, record.output_rows) == (4, 3, None)
    assert read_gguf(path).metadata_end == len(data)
    assert record.bytes_read == 1 << 20  # the metadata and one read-ahead chunk: 1 MiB of a 4 GiB file


def test_split_model_reads_the_first_shard(tmp_path: Path) -> None:
    (tmp_path / "m-00001-of-00003.gguf").write_bytes(_file([MODEL, _tokens(b"a")]))
    (tmp_path / "m-00002-of-00003.gguf").write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 0))
    record = read_gguf_tokenizer(tmp_path / "m-00002-of-00003.gguf")
    assert (record.path.name, record.shard_count, record.tokens) == ("m-00001-of-00003.gguf", 3, (b"a",))


def test_every_truncation_of_a_real_file_is_one_clear_error(tmp_path: Path) -> None:
    whole = FIXTURES / "llamacpp" / "spm-no-byte-tokens.gguf"
    data = whole.read_bytes()
    metadata_end = read_gguf(whole).metadata_end
    assert (metadata_end, len(data)) == (623, 640)  # then alignment padding, which a reader never needs
    path = tmp_path / "cut.gguf"
    for end in range(metadata_end):
        path.write_bytes(data[:end])
        with pytest.raises(InputError) as exc:
            read_gguf(path)
        message = str(exc.value)
        assert message.startswith(str(path)) and "at byte " in message and "\n" not in message, (end, message)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", "m.gguf: at byte 0: empty file, not a GGUF file"),
        (b"GGML" + b"\0" * 20, "m.gguf: at byte 0: not a GGUF file: the magic is b'GGML', not b'GGUF'"),
        (
            b"GGUF" + struct.pack("<IQQ", 4, 0, 0),
            "m.gguf: at byte 4: unknown GGUF version 4 (tokaudit reads versions 2 and 3)",
        ),
        (
            b"GGUF" + struct.pack("<IQQ", 3, 0, 2**62),
            "m.gguf: at byte 16: key/value count 4611686018427387904 needs at least 55340232221128654848 bytes but "
            "only 0 are left in the file",
        ),
        (
            _file([_kv("tokenizer.ggml.model", 8, struct.pack("<Q", 2**62) + b"gpt2")]),
            "m.gguf (key tokenizer.ggml.model): at byte 56: string value length 4611686018427387904 needs at least "
            "4611686018427387904 bytes but only 4 are left in the file",
        ),
        (
            _file([_kv("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, 2**62))]),
            "m.gguf (key tokenizer.ggml.tokens): at byte 61: array count 4611686018427387904 needs at least "
            "36893488147419103232 bytes but only 0 are left in the file",
        ),
        (
            _file([_kv("tokenizer.ggml.model", 13, b"")]),
            "m.gguf (key tokenizer.ggml.model): at byte 52: unknown value type 13",
        ),
        (
            _file([_kv("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 9, 1))]),
            "m.gguf (key tokenizer.ggml.tokens): at byte 57: nested arrays are not supported by GGUF readers "
            "(llama.cpp refuses them)",
        ),
        (
            _file([_kv("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 5, 2) + struct.pack("<ii", 1, 2))]),
            "m.gguf (key tokenizer.ggml.tokens): at byte 24: ARRAY[INT32] where GGUF stores ARRAY[STRING]",
        ),
        (
            _file([MODEL, MODEL, _tokens(b"a")]),
            "m.gguf (key tokenizer.ggml.model): at byte 68: duplicate key (first at byte 24)",
        ),
        (
            _file([MODEL]),
            "m.gguf (key tokenizer.ggml.tokens): no tokenizer in this GGUF file (llama.cpp: cannot find tokenizer "
            "vocab in model file)",
        ),
        (
            _file([MODEL, _tokens(b"a", b"b"), _kv("tokenizer.ggml.token_type", 9, struct.pack("<IQi", 5, 1, 1))]),
            "m.gguf (key tokenizer.ggml.token_type): at byte 131: 1 entries for 2 tokens (llama.cpp reads one per "
            "token)",
        ),
    ],
    ids=[
        "empty",
        "magic",
        "version",
        "kv-count",
        "string-length",
        "array-count",
        "value-type",
        "nested",
        "tokens-as-ints",
        "duplicate",
        "no-tokens",
        "short-types",
    ],
)
def test_bad_files_give_one_line_with_offset_and_key(tmp_path: Path, data: bytes, expected: str) -> None:
    assert _error(tmp_path, data) == expected
