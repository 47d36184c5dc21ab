"""SentencePiece ``tokenizer.model``: a ``sentencepiece.ModelProto`` read with a small, bounded
protobuf wire-format reader (no protobuf runtime, no sentencepiece import).

Only the fields an audit needs are decoded: the pieces (string, score, type), the trainer spec's
model type, byte fallback and special ids, and the normalizer spec. Unknown fields are skipped by
wire type, as protobuf does. Every length and varint is checked against the bytes that remain, so a
truncated or hostile file is an :class:`InputError` naming the file, the field and the byte offset.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from enum import IntEnum
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

from tokaudit.artifacts.decoder_chain import DecoderChain, parse_decoder
from tokaudit.artifacts.safe_files import read_bytes
from tokaudit.artifacts.sentencepiece_wire import I32, LEN, VARINT, expect_wire, fields, int32, text_field, wire_error
from tokaudit.records import Provenance
from tokaudit.errors import InputError

#: Budgets: real models are a few MB (Gemma 3: 4.7 MB, 262144 pieces).
MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_PIECES = 8_000_000


class PieceType(IntEnum):
    NORMAL = 1
    UNKNOWN = 2
    CONTROL = 3
    USER_DEFINED = 4
    UNUSED = 5
    BYTE = 6


MODEL_TYPES = {1: "unigram", 2: "bpe", 3: "word", 4: "char"}

_BYTE_PIECE = re.compile(r"<0x([0-9A-F]{2})>")


class Piece(NamedTuple):
    piece: str
    score: float
    type: PieceType


@dataclass(frozen=True)
class SentencePieceModel:
    path: Path
    pieces: tuple[Piece, ...]
    #: "unigram", "bpe", "word" or "char" (TrainerSpec.model_type; unigram when absent, as in protobuf).
    model_type: str
    byte_fallback: bool
    #: NormalizerSpec.name ("nmt_nfkc", "identity", ...); None when the spec does not name one.
    normalizer: str | None
    add_dummy_prefix: bool
    remove_extra_whitespaces: bool
    escape_whitespaces: bool
    precompiled_charsmap: bytes
    treat_whitespace_as_suffix: bool
    #: What sentencepiece's decode prints for the unknown piece (TrainerSpec.unk_surface, " ⁇ " by default).
    unk_surface: str
    #: TrainerSpec special ids; -1 means disabled (sentencepiece's convention).
    unk_id: int
    bos_id: int
    eos_id: int
    pad_id: int
    #: The serialized proto, for backends that load it (``SentencePieceProcessor(model_proto=...)``).
    data: bytes = field(repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.path.name

    def source(self, token_id: int) -> Provenance:
        return Provenance(self.path.name, key=f"pieces[{token_id}]")

    def piece_bytes(self, token_id: int) -> bytes:
        """The bytes sentencepiece's decoder emits for one piece: '▁' is a space (when whitespace is
        escaped), a byte piece ``<0xNN>`` is that byte, control/unknown pieces keep their text (the
        id tables mark them special, as tokenizer.json's added tokens are)."""
        p = self.pieces[token_id]
        if p.type is PieceType.BYTE:
            m = _BYTE_PIECE.fullmatch(p.piece)
            if m:
                return bytes([int(m.group(1), 16)])
        if p.type in (PieceType.CONTROL, PieceType.UNKNOWN) or not self.escape_whitespaces:
            return p.piece.encode("utf-8")
        return p.piece.replace("\u2581", " ").encode("utf-8")

    @cached_property
    def by_id(self) -> dict[int, bytes]:
        """Every piece's bytes (see :meth:`piece_bytes`), in one loop (the per-piece method is slower
        on a 262k vocabulary)."""
        if not self.escape_whitespaces:
            return {i: self.piece_bytes(i) for i in range(len(self.pieces))}
        normal = PieceType.NORMAL
        out = {i: p.piece.replace("\u2581", " ").encode("utf-8") for i, p in enumerate(self.pieces) if p.type is normal}
        others = [i for i, p in enumerate(self.pieces) if p.type is not normal]
        for i in others:
            out[i] = self.piece_bytes(i)
        return dict(sorted(out.items())) if others else out  # in id order, like every other vocabulary

    @cached_property
    def vocab(self) -> dict[int, str]:
        """id -> piece string, spelled as a tokenizer.json converted from this model spells it."""
        return {i: p.piece for i, p in enumerate(self.pieces)}

    @property
    def decoder_json(self) -> dict[str, Any]:
        """sentencepiece's decode as a tokenizer.json ``decoder`` (what transformers' converters write):
        the unknown piece -> its surface, '▁' -> space, ``<0xNN>`` runs -> bytes, then the dummy-prefix space
        stripped once (sentencepiece keeps the surface's space when the unknown piece comes first)."""
        steps: list[dict[str, Any]] = []
        if self.unk_piece is not None:
            surface = self.unk_surface.replace(" ", "\u2581") if self.escape_whitespaces else self.unk_surface
            steps.append({"type": "Replace", "pattern": {"String": self.unk_piece}, "content": surface})
        if self.escape_whitespaces:
            steps.append({"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "})
        if self.byte_fallback:
            steps.append({"type": "ByteFallback"})
        steps.append({"type": "Fuse"})
        if self.add_dummy_prefix and not self.treat_whitespace_as_suffix:
            steps.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
        return {"type": "Sequence", "decoders": steps}

    @cached_property
    def decoder(self) -> DecoderChain:
        """:attr:`decoder_json` as a decoder chain (the form the decoder-aware token text reads)."""
        return parse_decoder(self.decoder_json, f"{self.name} (sentencepiece decode)")

    @cached_property
    def special_ids(self) -> frozenset[int]:
        """Control pieces: never produced from text, dropped by sentencepiece's decode. (The unknown
        piece is not one: decode prints it as :attr:`unk_surface`.)"""
        return frozenset(i for i, p in enumerate(self.pieces) if p.type is PieceType.CONTROL)

    @property
    def unk_piece(self) -> str | None:
        return self.pieces[self.unk_id].piece if 0 <= self.unk_id < len(self.pieces) else None

    def ids_of_type(self, kind: PieceType) -> list[int]:
        return [i for i, p in enumerate(self.pieces) if p.type is kind]


#: What a tiktoken rank file is made of: base64 tokens, decimal ranks, spaces and line ends.
_RANK_FILE_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/= \t\r\n"


def looks_like_sentencepiece(data: bytes) -> bool:
    """A tiktoken rank file is ASCII text (base64, digits, spaces, newlines); a serialized ModelProto
    is binary from its first piece on (length and type bytes, float scores). Anything binary is read
    as a protobuf, so a damaged model gets the protobuf reader's precise error."""
    return bool(data[:4096].translate(None, _RANK_FILE_BYTES))


# -- messages -------------------------------------------------------------------------------------


def _piece(data: bytes, span: tuple[int, int], path: Path, index: int) -> Piece:
    where = f"pieces[{index}]"
    text, score, kind = None, 0.0, PieceType.NORMAL
    for number, wire, value, offset in fields(data, span[0], span[1], path, where):
        if number == 1:
            expect_wire(path, where, number, wire, LEN, offset)
            text = text_field(data, value, path, f"{where}.piece", offset)
        elif number == 2:
            expect_wire(path, where, number, wire, I32, offset)
            score = struct.unpack("<f", value)[0]
        elif number == 3:
            expect_wire(path, where, number, wire, VARINT, offset)
            try:
                kind = PieceType(value)
            except ValueError:
                raise wire_error(path, f"{where}.type is {value}, not a piece type (1-6)", offset) from None
    if text is None:
        raise wire_error(path, f"{where} has no piece string", span[0])
    return Piece(text, score, kind)


_unpack_float = struct.Struct("<f").unpack_from
_TYPES = {t.value: t for t in PieceType}


def _fast_piece(data: bytes, span: tuple[int, int]) -> Piece | None:
    """The layout every trainer writes (piece < 128 bytes, then score, then an optional type),
    decoded without the generic field loop; ``None`` for anything else (the careful reader then
    decodes it or names what is wrong)."""
    start, end = span
    if end - start < 2 or data[start] != 0x0A or data[start + 1] >= 0x80:
        return None
    pos = start + 2 + data[start + 1]
    if pos > end:
        return None
    try:
        text = data[start + 2 : pos].decode("utf-8")
    except UnicodeDecodeError:
        return None
    score, kind = 0.0, PieceType.NORMAL
    if pos + 5 <= end and data[pos] == 0x15:
        score = _unpack_float(data, pos + 1)[0]
        pos += 5
    if pos + 2 <= end and data[pos] == 0x18:
        found = _TYPES.get(data[pos + 1])
        if found is None:
            return None
        kind = found
        pos += 2
    return Piece(text, score, kind) if pos == end else None


_TRAINER_INTS = {3: "model_type", 40: "unk_id", 41: "bos_id", 42: "eos_id", 43: "pad_id"}
_TRAINER_BOOLS = {35: "byte_fallback", 24: "treat_whitespace_as_suffix"}
_DEFAULT_UNK_SURFACE = " \u2047 "


def _trainer(data: bytes, span: tuple[int, int], path: Path) -> dict[str, Any]:
    out: dict[str, Any] = {
        "unk_surface": _DEFAULT_UNK_SURFACE,
        "model_type": 1,
        "unk_id": 0,
        "bos_id": 1,
        "eos_id": 2,
        "pad_id": -1,
        "byte_fallback": 0,
        "treat_whitespace_as_suffix": 0,
    }
    for number, wire, value, offset in fields(data, span[0], span[1], path, "trainer_spec"):
        name = _TRAINER_INTS.get(number) or _TRAINER_BOOLS.get(number)
        if name is not None:
            expect_wire(path, "trainer_spec", number, wire, VARINT, offset)
            out[name] = int32(value) if number in _TRAINER_INTS else int(bool(value))
            if name == "model_type" and value not in MODEL_TYPES:
                raise wire_error(path, f"trainer_spec.model_type is {value}, not a model type (1-4)", offset)
        elif number == 44:
            expect_wire(path, "trainer_spec", number, wire, LEN, offset)
            out["unk_surface"] = text_field(data, value, path, "trainer_spec.unk_surface", offset)
    return out


def _normalizer(data: bytes, span: tuple[int, int], path: Path) -> dict[str, object]:
    out: dict[str, object] = {
        "name": None,
        "precompiled_charsmap": b"",
        "add_dummy_prefix": True,
        "remove_extra_whitespaces": True,
        "escape_whitespaces": True,
    }
    bools = {3: "add_dummy_prefix", 4: "remove_extra_whitespaces", 5: "escape_whitespaces"}
    for number, wire, value, offset in fields(data, span[0], span[1], path, "normalizer_spec"):
        if number == 1:
            expect_wire(path, "normalizer_spec", number, wire, LEN, offset)
            out["name"] = text_field(data, value, path, "normalizer_spec.name", offset)
        elif number == 2:
            expect_wire(path, "normalizer_spec", number, wire, LEN, offset)
            out["precompiled_charsmap"] = data[value[0] : value[1]]
        elif number in bools:
            expect_wire(path, "normalizer_spec", number, wire, VARINT, offset)
            out[bools[number]] = bool(value)
    return out


def _leading_pieces(data: bytes) -> tuple[list[Piece], int]:
    """The run of pieces in the layout every trainer writes (piece < 128 bytes, then score, then an
    optional type) at the start of the file, decoded in one tight loop (the same steps as
    :func:`_fast_piece`, inlined: this loop is most of a scan's parse time on a 262k vocabulary).
    Returns them and the offset where the careful field reader takes over."""
    pieces: list[Piece] = []
    pos, end = 0, len(data)
    append, unpack, types, normal = pieces.append, _unpack_float, _TYPES, PieceType.NORMAL
    limit = MAX_PIECES
    while pos + 4 < end and data[pos] == 0x0A and len(pieces) < limit:
        b0 = data[pos + 1]
        if b0 < 0x80:
            start, stop = pos + 2, pos + 2 + b0
        elif data[pos + 2] < 0x80:
            start = pos + 3
            stop = start + ((b0 & 0x7F) | (data[pos + 2] << 7))
        else:
            break
        n = data[start + 1]
        if stop > end or data[start] != 0x0A or n >= 0x80:
            break
        q = start + 2 + n
        if q > stop:
            break
        try:
            text = data[start + 2 : q].decode("utf-8")
        except UnicodeDecodeError:
            break
        score, kind = 0.0, normal
        if q + 5 <= stop and data[q] == 0x15:
            score = unpack(data, q + 1)[0]
            q += 5
        if q + 2 <= stop and data[q] == 0x18:
            typed = types.get(data[q + 1])
            if typed is None:
                break
            kind = typed
            q += 2
        if q != stop:
            break
        append(Piece(text, score, kind))
        pos = stop
    return pieces, pos


def parse_sentencepiece(path: Path, data: bytes | None = None) -> SentencePieceModel:
    """Parse ``path`` (or its already-read ``data``) as a SentencePiece ModelProto."""
    if data is None:
        data = read_bytes(path)
    if len(data) > MAX_FILE_BYTES:
        raise InputError(
            f"SentencePiece model of {len(data)} bytes exceeds the {MAX_FILE_BYTES} byte budget", file=str(path)
        )
    pieces, pos = _leading_pieces(data)
    trainer: dict[str, Any] | None = None
    normalizer: dict[str, object] | None = None
    for number, wire, value, offset in fields(data, pos, len(data), path, "ModelProto"):
        if number == 1:
            expect_wire(path, "ModelProto", number, wire, LEN, offset)
            if len(pieces) >= MAX_PIECES:
                raise wire_error(path, f"more than {MAX_PIECES} pieces", offset)
            pieces.append(_fast_piece(data, value) or _piece(data, value, path, len(pieces)))
        elif number == 2:
            expect_wire(path, "ModelProto", number, wire, LEN, offset)
            trainer = _trainer(data, value, path)
        elif number == 3:
            expect_wire(path, "ModelProto", number, wire, LEN, offset)
            normalizer = _normalizer(data, value, path)
    if not pieces:
        raise InputError("malformed SentencePiece model: no pieces", file=str(path))
    t = trainer or _trainer(b"", (0, 0), path)
    n = normalizer or _normalizer(b"", (0, 0), path)
    for name in ("unk_id", "bos_id", "eos_id", "pad_id"):
        if t[name] >= len(pieces):
            raise InputError(
                f"malformed SentencePiece model: trainer_spec.{name} {t[name]} is not below the {len(pieces)} pieces",
                file=str(path),
            )
    return SentencePieceModel(
        path=path,
        pieces=tuple(pieces),
        model_type=MODEL_TYPES[t["model_type"]],
        byte_fallback=bool(t["byte_fallback"]),
        normalizer=n["name"],  # type: ignore[arg-type]  # _normalizer sets a str
        add_dummy_prefix=bool(n["add_dummy_prefix"]),
        remove_extra_whitespaces=bool(n["remove_extra_whitespaces"]),
        escape_whitespaces=bool(n["escape_whitespaces"]),
        precompiled_charsmap=n["precompiled_charsmap"],  # type: ignore[arg-type]  # _normalizer sets bytes or None
        treat_whitespace_as_suffix=bool(t["treat_whitespace_as_suffix"]),
        unk_surface=t["unk_surface"],
        unk_id=t["unk_id"],
        bos_id=t["bos_id"],
        eos_id=t["eos_id"],
        pad_id=t["pad_id"],
        data=data,
    )
