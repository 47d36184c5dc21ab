"""A bounded reader of GGUF files (llama.cpp, Ollama, LM Studio): the header, the key/value section and the
tensor-info records, and nothing after them.

Tensor data is never read, so a 40 GB model costs what a vocabulary-only file costs. Every count and length is
checked against the bytes left in the file and a budget before anything is allocated. Token strings are kept as
bytes (GGUF stores raw bytes; the ``gguf`` package raises on non-UTF-8 tokens, and takes ~7 s on a Llama 3
vocabulary, so it is used only to write test fixtures). :mod:`tokaudit.artifacts.gguf` reads the tokenizer out of
what this returns.

Layout (ggml docs/gguf.md): magic ``GGUF``, u32 version (2 or 3), u64 tensor count, u64 key/value count;
each key/value is a string key, a u32 value type and the value; a string is a u64 length and its bytes;
an array is a u32 element type, a u64 count and the elements. A big-endian file is written with the
same magic bytes but its integers (the version first) are big-endian.
"""

from __future__ import annotations

import os
import struct
import sys
from array import array
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokaudit.artifacts.safe_files import open_regular
from tokaudit.errors import InputError

MAGIC = b"GGUF"

#: value type code -> (name, struct format char, size); STRING (8) and ARRAY (9) are handled apart.
_SCALARS: dict[int, tuple[str, str, int]] = {
    0: ("UINT8", "B", 1),
    1: ("INT8", "b", 1),
    2: ("UINT16", "H", 2),
    3: ("INT16", "h", 2),
    4: ("UINT32", "I", 4),
    5: ("INT32", "i", 4),
    6: ("FLOAT32", "f", 4),
    7: ("BOOL", "?", 1),
    10: ("UINT64", "Q", 8),
    11: ("INT64", "q", 8),
    12: ("FLOAT64", "d", 8),
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
            raise self.fail(
                f"{what} needs {n} bytes but the file ends {left} bytes later (truncated, or a length past the end)"
            )
        if self.offset + n > MAX_METADATA_BYTES:
            raise self.fail(f"metadata runs past {MAX_METADATA_BYTES // (1024 * 1024)} MiB: beyond tokaudit's budget")
        want = max(n - (len(self.buf) - self.pos), _CHUNK, len(self.buf) // 2)
        try:
            chunk = self.fh.read(want)
        except OSError as exc:
            raise InputError(f"cannot read file: {exc.strerror or exc}", file=str(self.path)) from None
        self.read += len(chunk)
        self.buf = self.buf[self.pos :] + chunk
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
        out = self.buf[self.pos : self.pos + n]
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
                append(buf[pos + 8 : end])
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
            append(self.buf[self.pos : self.pos + ln])
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
                name = buf[pos + 8 : dims_at]
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
                raise self.fail(
                    "nested arrays are not supported by GGUF readers (llama.cpp refuses them)", self.offset - 4
                )
            if etype == STRING:
                n = self.count("array count", 8, MAX_ARRAY_STRINGS)
                return GGUFValue("ARRAY[STRING]", self.string_array(n), at)
            if etype not in _SCALARS:
                raise self.fail(f"unknown array element type {etype}", self.offset - 4)
            name, fmt, size = _SCALARS[etype]
            n = self.count("array count", size, MAX_ARRAY_BYTES // size)
            self.need(n * size, f"ARRAY[{name}] of {n}")
            arr = array(_ARRAY[fmt], self.buf[self.pos : self.pos + n * size])  # bools as bytes 0/1, not Python objects
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
