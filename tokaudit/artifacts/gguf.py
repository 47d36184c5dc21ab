"""The tokenizer inside a GGUF file (llama.cpp, Ollama, LM Studio), read by a bounded reader of our own.

The reader reads the header, the key/value section and the tensor-info records and stops there: tensor
data is never read, so a 40 GB model costs what a vocabulary-only file costs. Every count and length is
checked against the bytes left in the file and a budget before anything is allocated. Token strings are
kept as bytes (GGUF stores raw bytes; the ``gguf`` package raises on non-UTF-8 tokens, and takes ~7 s on
a Llama 3 vocabulary, so it is used only to write test fixtures).

Layout (ggml docs/gguf.md): magic ``GGUF``, u32 version (2 or 3), u64 tensor count, u64 key/value count;
each key/value is a string key, a u32 value type and the value; a string is a u64 length and its bytes;
an array is a u32 element type, a u64 count and the elements. A big-endian file is written with the
same magic bytes but its integers (the version first) are big-endian.
"""

from __future__ import annotations

import os
import re
import struct
import sys
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokaudit.artifacts.safe_files import open_regular
from tokaudit.records import Provenance
from tokaudit.errors import InputError

MAGIC = b"GGUF"

#: value type code -> (name, struct format char, size); STRING (8) and ARRAY (9) are handled apart.
_SCALARS: dict[int, tuple[str, str, int]] = {
    0: ("UINT8", "B", 1), 1: ("INT8", "b", 1), 2: ("UINT16", "H", 2), 3: ("INT16", "h", 2),
    4: ("UINT32", "I", 4), 5: ("INT32", "i", 4), 6: ("FLOAT32", "f", 4), 7: ("BOOL", "?", 1),
    10: ("UINT64", "Q", 8), 11: ("INT64", "q", 8), 12: ("FLOAT64", "d", 8),
}
STRING, ARRAY = 8, 9
#: struct format char -> array typecode of the same size (checked at import: ``I`` and ``Q`` are 4 and 8 bytes).
_ARRAY = {"B": "B", "b": "b", "H": "H", "h": "h", "I": "I", "i": "i", "f": "f", "?": "B", "Q": "Q", "q": "q", "d": "d"}
assert all(array(code).itemsize == struct.calcsize(fmt) for fmt, code in _ARRAY.items())

#: Budgets: a key/value section or tensor-info table beyond these is not a tokenizer we can audit. Each is
#: checked against the count a file declares before anything is allocated for it (issue 34: a 400 MB array of
#: bools cost 3.8 GB as Python objects, 10^7 tensor headers 94 s): real GGUFs hold ~50 keys, up to ~3,000 tensor
#: infos (a few 10^4 in old files that kept each expert apart), a 262k-token vocabulary (~1 MB per numeric array).
MAX_METADATA_BYTES = 512 * 1024 * 1024
MAX_KEYS = 100_000
MAX_TENSORS = 1_000_000
MAX_KEY_BYTES = 65_536
MAX_DIMS = 16
#: Elements of one array: strings (tokens, merges), and bytes of a numeric array.
MAX_ARRAY_STRINGS = 4_000_000
MAX_ARRAY_BYTES = 64 * 1024 * 1024
_CHUNK = 1 << 20

#: tokenizer.ggml.token_type values (llama.h llama_token_type).
TOKEN_TYPES = {0: "UNDEFINED", 1: "NORMAL", 2: "UNKNOWN", 3: "CONTROL", 4: "USER_DEFINED", 5: "UNUSED", 6: "BYTE"}
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

#: special-id keys (``tokenizer.ggml.<key>``) -> the record's name; the deprecated FIM names map to fim_*.
SPECIAL_ID_KEYS = {
    "bos_token_id": "bos", "eos_token_id": "eos", "eot_token_id": "eot", "eom_token_id": "eom",
    "unknown_token_id": "unk", "seperator_token_id": "sep", "padding_token_id": "pad",
    "mask_token_id": "mask", "cls_token_id": "cls",
    "fim_pre_token_id": "fim_pre", "fim_suf_token_id": "fim_suf", "fim_mid_token_id": "fim_mid",
    "fim_pad_token_id": "fim_pad", "fim_rep_token_id": "fim_rep", "fim_sep_token_id": "fim_sep",
    "prefix_token_id": "fim_pre", "suffix_token_id": "fim_suf", "middle_token_id": "fim_mid",
}
FLAG_KEYS = {
    "add_bos_token": "add_bos", "add_eos_token": "add_eos", "add_sep_token": "add_sep",
    "add_space_prefix": "add_space_prefix", "remove_extra_whitespaces": "remove_extra_whitespaces",
}

#: A split model's shards (``model-00001-of-00003.gguf``): the first holds the metadata.
_SHARD = re.compile(r"^(?P<stem>.*)-(?P<index>\d{5})-of-(?P<count>\d{5})\.gguf$")
#: At most this many names are looked at for a GGUF in a target directory.
MAX_GGUF_SCAN = 10_000


@dataclass(frozen=True)
class GGUFValue:
    """One key/value: its type name (``ARRAY[STRING]`` for arrays), its value and where it starts."""

    type: str
    value: Any
    offset: int


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dims: tuple[int, ...]  # ggml order: dims[0] is the row length, dims[1] the row count of a matrix
    offset: int  # of the tensor-info record in the file


#: The tensor infos kept (the others are walked, not kept): the embedding and output matrices, whose row counts
#: are the model's real vocabulary size.
KEPT_TENSORS = frozenset({b"token_embd.weight", b"output.weight"})


@dataclass(frozen=True)
class GGUFFile:
    """What the reader found: header fields, every key/value in file order, the tensor infos of KEPT_TENSORS."""

    path: Path
    version: int
    byte_order: str
    values: Mapping[str, GGUFValue]
    tensors: tuple[TensorInfo, ...]
    #: Where the metadata (header, key/values, tensor infos) ends; tensor data starts after it, aligned.
    metadata_end: int
    #: Bytes read from the file: the metadata and at most one read-ahead chunk (1 MiB) past it.
    bytes_read: int


@dataclass(frozen=True)
class GGUFTokenizer:
    """The tokenizer a GGUF file carries, as the keys say it (llama.cpp's load-time defaults and
    overrides are applied elsewhere: :mod:`tokaudit.model.llamacpp_vocab`)."""

    path: Path
    version: int
    byte_order: str
    arch: str | None
    model: str | None
    pre: str | None
    tokens: tuple[bytes, ...]
    types: tuple[int, ...] | None
    scores: Sequence[float] | None
    merges: tuple[bytes, ...] | None
    #: Only the ids the file sets, raw (possibly out of range): bos, eos, eot, eom, unk, sep, pad, mask, cls, fim_*.
    special_ids: Mapping[str, int]
    #: Only the flags the file sets: add_bos, add_eos, add_sep, add_space_prefix, remove_extra_whitespaces.
    flags: Mapping[str, bool]
    #: "default" -> tokenizer.chat_template; NAME -> tokenizer.chat_template.NAME.
    chat_templates: Mapping[str, str]
    #: tokenizer.ggml.eos_token_ids, which Ollama writes and its engine stops on (llama.cpp ignores it).
    eos_token_ids: tuple[int, ...] | None
    vocab_size: int | None
    embedding_rows: int | None
    output_rows: int | None
    key_offsets: Mapping[str, int] = field(default_factory=dict)
    #: Split models: how many shards the name says, and the first shard read (this file).
    shard_count: int = 1
    bytes_read: int = 0
    #: tokenizer.ggml.precompiled_charsmap (a T5/UGM vocabulary's SentencePiece normalizer), raw.
    precompiled_charsmap: bytes | None = None

    @property
    def name(self) -> str:
        return self.path.name

    def source(self, key: str) -> Provenance:
        """Where a key of this file is, for findings."""
        return Provenance(self.path.name, key=key)

    def type_name(self, token_id: int) -> str:
        if self.types is None:
            return "NORMAL"
        return TOKEN_TYPES.get(self.types[token_id], f"UNDEFINED({self.types[token_id]})")


class _Reader:
    """A bounded forward reader over the metadata: reads the file in chunks as parsing needs them and
    checks every length against the bytes left before it allocates."""

    def __init__(self, fh: Any, path: Path, size: int) -> None:
        self.fh = fh
        self.path = path
        self.size = size
        self.buf = b""
        self.base = 0  # file offset of buf[0]
        self.pos = 0  # index in buf
        self.order = "<"
        self.key: str | None = None  # the key being read, for messages
        self.read = 0

    @property
    def offset(self) -> int:
        return self.base + self.pos

    def fail(self, message: str, at: int | None = None) -> InputError:
        where = self.offset if at is None else at
        return InputError(f"at byte {where}: {message}", file=str(self.path), key=self.key)

    def need(self, n: int, what: str) -> None:
        """Make ``n`` bytes from the current position available, or say what is cut off."""
        if self.pos + n <= len(self.buf):
            return
        if self.offset + n > self.size:
            left = self.size - self.offset
            raise self.fail(f"{what} needs {n} bytes but the file ends {left} bytes later (truncated, or a length past the end)")
        if self.offset + n > MAX_METADATA_BYTES:
            raise self.fail(f"metadata runs past {MAX_METADATA_BYTES // (1024 * 1024)} MiB: beyond tokaudit's budget")
        want = max(n - (len(self.buf) - self.pos), _CHUNK, len(self.buf) // 2)
        try:
            chunk = self.fh.read(want)
        except OSError as exc:
            raise InputError(f"cannot read file: {exc.strerror or exc}", file=str(self.path)) from None
        self.read += len(chunk)
        self.buf = self.buf[self.pos:] + chunk
        self.base += self.pos
        self.pos = 0
        if len(self.buf) < n:
            raise self.fail(f"{what}: the file ends early (it changed while being read?)")

    def scalar(self, fmt: str, size: int, what: str) -> Any:
        self.need(size, what)
        (value,) = struct.unpack_from(self.order + fmt, self.buf, self.pos)
        self.pos += size
        return value

    def u32(self, what: str) -> int:
        return int(self.scalar("I", 4, what))

    def u64(self, what: str) -> int:
        return int(self.scalar("Q", 8, what))

    def count(self, what: str, item_size: int, limit: int | None = None) -> int:
        """A u64 count of items at least ``item_size`` bytes each, checked against the bytes left."""
        at = self.offset
        n = self.u64(what)
        left = self.size - self.offset
        if n * item_size > left:
            raise self.fail(f"{what} {n} needs at least {n * item_size} bytes but only {left} are left in the file", at)
        if limit is not None and n > limit:
            raise self.fail(f"{what} {n} is beyond tokaudit's budget of {limit}", at)
        return n

    def raw_string(self, what: str) -> bytes:
        n = self.count(f"{what} length", 1)
        self.need(n, what)
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def text(self, what: str) -> str:
        at = self.offset
        raw = self.raw_string(what)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.fail(f"{what} is not UTF-8 (byte {exc.start} of it)", at) from None

    def string_array(self, n: int) -> tuple[bytes, ...]:
        """``n`` strings (each a u64 length and its bytes) in one walk: the tokens and merges of a large
        vocabulary are ~400k strings, so the inner loop runs on locals over what the buffer holds and leaves
        it only to refill (checking the length against the file first)."""
        out: list[bytes] = []
        append = out.append
        unpack = struct.Struct(self.order + "Q").unpack_from
        i = 0
        while i < n:
            buf, pos, limit = self.buf, self.pos, len(self.buf)
            while i < n and pos + 8 <= limit:
                end = pos + 8 + unpack(buf, pos)[0]
                if end > limit:
                    break
                append(buf[pos + 8:end])
                pos = end
                i += 1
            self.pos = pos
            if i == n:
                break
            self.need(8, f"length of element {i}")
            (ln,) = unpack(self.buf, self.pos)
            self.pos += 8
            if ln > self.size - self.offset:
                raise self.fail(f"element {i} length {ln} runs past the end of the file", self.offset - 8)
            self.need(ln, f"element {i}")
            append(self.buf[self.pos:self.pos + ln])
            self.pos += ln
            i += 1
        return tuple(out)

    def tensor_infos(self, n: int, kept: frozenset[bytes]) -> list[TensorInfo]:
        """Walk ``n`` tensor-info records (name, dimension count, dimensions, type, data offset), keeping those
        named in ``kept``. Records the buffer holds whole are read in a loop on locals; one that is cut off by
        the buffer's end is read with the checked readers (which refill it, and name what is cut off)."""
        out: list[TensorInfo] = []
        unpack_q = struct.Struct(self.order + "Q").unpack_from
        unpack_i = struct.Struct(self.order + "I").unpack_from
        i = 0
        while i < n:
            buf, pos, limit = self.buf, self.pos, len(self.buf)
            while i < n and pos + 8 <= limit:
                dims_at = pos + 8 + unpack_q(buf, pos)[0]
                if dims_at + 4 > limit:
                    break
                n_dims = unpack_i(buf, dims_at)[0]
                end = dims_at + 4 + 8 * n_dims + 12
                if n_dims > MAX_DIMS or end > limit:
                    break
                name = buf[pos + 8:dims_at]
                if name in kept:
                    dims = struct.unpack_from(f"{self.order}{n_dims}Q", buf, dims_at + 4)
                    out.append(TensorInfo(name.decode("utf-8", "replace"), dims, self.base + pos))
                pos = end
                i += 1
            self.pos = pos
            if i == n:
                break
            at = self.offset
            self.key = f"tensor #{i}"
            name_text = self.text("tensor name")
            self.key = f"tensor {name_text}"
            n_dims = self.u32("tensor dimension count")
            if n_dims > MAX_DIMS:
                raise self.fail(f"{n_dims} dimensions (at most {MAX_DIMS})", self.offset - 4)
            dims = tuple(self.u64("tensor dimension") for _ in range(n_dims))
            self.u32("tensor type")
            self.u64("tensor data offset")
            if name_text.encode() in kept:
                out.append(TensorInfo(name_text, dims, at))
            i += 1
        return out

    def value(self, vtype: int, at: int) -> GGUFValue:
        if vtype in _SCALARS:
            name, fmt, size = _SCALARS[vtype]
            return GGUFValue(name, self.scalar(fmt, size, f"{name} value"), at)
        if vtype == STRING:
            return GGUFValue("STRING", self.raw_string("string value"), at)
        if vtype == ARRAY:
            etype = self.u32("array element type")
            if etype == ARRAY:
                raise self.fail("nested arrays are not supported by GGUF readers (llama.cpp refuses them)", self.offset - 4)
            if etype == STRING:
                n = self.count("array count", 8, MAX_ARRAY_STRINGS)
                return GGUFValue("ARRAY[STRING]", self.string_array(n), at)
            if etype not in _SCALARS:
                raise self.fail(f"unknown array element type {etype}", self.offset - 4)
            name, fmt, size = _SCALARS[etype]
            n = self.count("array count", size, MAX_ARRAY_BYTES // size)
            self.need(n * size, f"ARRAY[{name}] of {n}")
            arr = array(_ARRAY[fmt], self.buf[self.pos:self.pos + n * size])  # bools as bytes 0/1, not Python objects
            if (self.order == ">") != (sys.byteorder == "big") and size > 1:
                arr.byteswap()
            self.pos += n * size
            return GGUFValue(f"ARRAY[{name}]", arr, at)
        raise self.fail(f"unknown value type {vtype}", self.offset - 4)


def read_gguf(path: Path) -> GGUFFile:
    """The header, key/values and tensor infos of a GGUF file; tensor data is never read."""
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        r = _Reader(fh, path, size)
        if size == 0:
            raise InputError("at byte 0: empty file, not a GGUF file", file=str(path))
        r.need(min(size, 4), "magic")
        if r.buf[:4] != MAGIC:
            raise r.fail(f"not a GGUF file: the magic is {r.buf[:4]!r}, not b'GGUF'")
        r.pos = 4
        r.need(4, "version")
        little = struct.unpack_from("<I", r.buf, 4)[0]
        big = struct.unpack_from(">I", r.buf, 4)[0]
        if little in (2, 3):
            version, r.order = little, "<"
        elif big in (2, 3):
            version, r.order = big, ">"
        else:
            raise r.fail(f"unknown GGUF version {little} (tokaudit reads versions 2 and 3)")
        r.pos = 8
        n_tensors = r.count("tensor count", 24, MAX_TENSORS)  # name length, dims, type, offset: >= 24 bytes
        n_kv = r.count("key/value count", 12, MAX_KEYS)  # key length, type: >= 12 bytes
        values: dict[str, GGUFValue] = {}
        for i in range(n_kv):
            at = r.offset
            r.key = f"#{i}"
            key_len = r.count("key length", 1, MAX_KEY_BYTES)
            r.pos -= 8
            key = r.text("key")
            if key_len == 0:
                raise r.fail("empty key", at)
            r.key = key
            if key in values:
                raise r.fail(f"duplicate key (first at byte {values[key].offset})", at)
            vtype = r.u32("value type")
            values[key] = r.value(vtype, at)
        r.key = None
        tensors = r.tensor_infos(n_tensors, KEPT_TENSORS)
        r.key = None
        return GGUFFile(path, version, "little" if r.order == "<" else "big", values, tuple(tensors), r.offset, r.read)


def first_shard(path: Path) -> tuple[Path, int]:
    """The shard holding the metadata of a split model (``NAME-00001-of-0000N.gguf``) and the count
    (the shard itself and 1 for a file not named like a shard)."""
    m = _SHARD.match(path.name)
    if m is None:
        return path, 1
    return path.with_name(f"{m['stem']}-00001-of-{m['count']}.gguf"), int(m["count"])


def gguf_in(root: Path) -> tuple[Path | None, str | None]:
    """The one GGUF model in a directory (a split model's first shard), or None and, when there are
    several models, why none was picked."""
    try:
        names = sorted(p.name for _, p in zip(range(MAX_GGUF_SCAN), root.iterdir()) if p.name.endswith(".gguf") and p.is_file())
    except OSError:
        return None, None
    if not names:
        return None, None
    models = {(m["stem"] if (m := _SHARD.match(n)) else n) for n in names}
    if len(models) > 1:
        listed = ", ".join(sorted(models)[:3]) + (", …" if len(models) > 3 else "")
        return None, f"{len(models)} GGUF models in {root} ({listed})"
    first = first_shard(root / names[0])[0]
    if not first.is_file():
        return None, f"{first.name} is missing: the first shard of a split GGUF holds its metadata"
    return first, None


def _expect(values: Mapping[str, GGUFValue], key: str, types: tuple[str, ...], path: Path) -> Any:
    v = values.get(key)
    if v is None:
        return None
    if v.type not in types:
        raise InputError(f"at byte {v.offset}: {v.type} where GGUF stores {' or '.join(types)}", file=str(path), key=key)
    return v.value


_INTS = ("UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "UINT64", "INT64")


def _text_value(values: Mapping[str, GGUFValue], key: str, path: Path) -> str | None:
    raw = _expect(values, key, ("STRING",), path)
    if raw is None:
        return None
    try:
        return str(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(f"at byte {values[key].offset}: not UTF-8 (byte {exc.start} of the value)", file=str(path), key=key) from None


def _rows(tensors: Sequence[TensorInfo], name: str) -> int | None:
    for t in tensors:
        if t.name == name:
            return t.dims[1] if len(t.dims) >= 2 else t.dims[0] if t.dims else None
    return None


def tokenizer_from(gguf: GGUFFile, shard_count: int = 1) -> GGUFTokenizer:
    """The tokenizer record of a read GGUF file; a key of the wrong type is one clear error."""
    v, path = gguf.values, gguf.path
    tokens = _expect(v, "tokenizer.ggml.tokens", ("ARRAY[STRING]",), path)
    if tokens is None:
        raise InputError("no tokenizer in this GGUF file (llama.cpp: cannot find tokenizer vocab in model file)",
                         file=str(path), key="tokenizer.ggml.tokens")
    n = len(tokens)
    types = _expect(v, "tokenizer.ggml.token_type", tuple(f"ARRAY[{t}]" for t in _INTS), path)
    scores = _expect(v, "tokenizer.ggml.scores", ("ARRAY[FLOAT32]", "ARRAY[INT32]", "ARRAY[FLOAT64]"), path)
    for key, arr in (("tokenizer.ggml.token_type", types), ("tokenizer.ggml.scores", scores)):
        if arr is not None and len(arr) < n:
            raise InputError(f"at byte {v[key].offset}: {len(arr)} entries for {n} tokens (llama.cpp reads one per token)",
                             file=str(path), key=key)
    merges = _expect(v, "tokenizer.ggml.merges", ("ARRAY[STRING]",), path)
    special: dict[str, int] = {}
    for suffix, name in SPECIAL_ID_KEYS.items():
        value = _expect(v, f"tokenizer.ggml.{suffix}", _INTS, path)
        if value is not None and name not in special:
            special[name] = int(value)
    flags = {name: bool(value) for suffix, name in FLAG_KEYS.items()
             if (value := _expect(v, f"tokenizer.ggml.{suffix}", ("BOOL",), path)) is not None}
    templates: dict[str, str] = {}
    default = _text_value(v, "tokenizer.chat_template", path)
    if default is not None:
        templates["default"] = default
    for key in v:
        if key.startswith("tokenizer.chat_template."):
            templates[key.removeprefix("tokenizer.chat_template.")] = _text_value(v, key, path) or ""
    charsmap = _expect(v, "tokenizer.ggml.precompiled_charsmap", ("ARRAY[UINT8]", "ARRAY[INT8]"), path)
    eos_ids = _expect(v, "tokenizer.ggml.eos_token_ids", tuple(f"ARRAY[{t}]" for t in _INTS), path)
    arch = _text_value(v, "general.architecture", path)
    vocab_size = _expect(v, f"{arch}.vocab_size", _INTS, path) if arch else None
    return GGUFTokenizer(
        path=path, version=gguf.version, byte_order=gguf.byte_order, arch=arch,
        model=_text_value(v, "tokenizer.ggml.model", path), pre=_text_value(v, "tokenizer.ggml.pre", path),
        tokens=tokens, types=None if types is None else tuple(types[:n]),
        scores=None if scores is None else scores[:n], merges=merges,
        special_ids=special, flags=flags, chat_templates=templates,
        eos_token_ids=None if eos_ids is None else tuple(int(x) for x in eos_ids),
        vocab_size=None if vocab_size is None else int(vocab_size),
        embedding_rows=_rows(gguf.tensors, "token_embd.weight"), output_rows=_rows(gguf.tensors, "output.weight"),
        key_offsets={key: value.offset for key, value in v.items()}, shard_count=shard_count,
        bytes_read=gguf.bytes_read, precompiled_charsmap=None if charsmap is None else bytes(charsmap),
    )


def read_gguf_tokenizer(path: Path) -> GGUFTokenizer:
    """The tokenizer of a GGUF file; for a split model, of its first shard (which holds the metadata)."""
    first, count = first_shard(path)
    if first != path and not first.is_file():
        raise InputError(f"{first.name} is missing: the first shard of a split GGUF holds its metadata", file=str(path))
    return tokenizer_from(read_gguf(first), count)
