"""The protobuf wire format of a SentencePiece ``tokenizer.model``, read with bounds: varints, length-delimited
spans and fixed-width fields, each checked against the bytes that remain, every failure an :class:`InputError`
naming the file, the field and the byte offset (:mod:`tokaudit.artifacts.sentencepiece_model` decodes the messages).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tokaudit.errors import InputError

MAX_VARINT_BYTES = 10

VARINT, I64, LEN, SGROUP, EGROUP, I32 = 0, 1, 2, 3, 4, 5
WIRE_NAMES = {VARINT: "varint", I64: "fixed64", LEN: "length-delimited", I32: "fixed32"}


def varint(data: bytes, pos: int, end: int, path: Path | None, where: str) -> tuple[int, int]:
    result = shift = 0
    start = pos
    while True:
        if pos >= end:
            raise wire_error(path, f"truncated varint in {where}", start)
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if pos - start >= MAX_VARINT_BYTES:
            raise wire_error(path, f"bad varint in {where} (more than {MAX_VARINT_BYTES} bytes)", start)


def wire_error(path: Path | None, message: str, offset: int) -> InputError:
    return InputError(f"malformed SentencePiece model: {message} at byte {offset}", file=str(path) if path else None)


def fields(data: bytes, pos: int, end: int, path: Path, where: str) -> Iterator[tuple[int, int, Any, int]]:
    """(field number, wire type, value, offset) of each field in ``data[pos:end]``; the value is an
    int (varint), a (start, end) span (length-delimited) or raw bytes (fixed32/64)."""
    while pos < end:
        offset = pos
        key, pos = varint(data, pos, end, path, f"a field key of {where}")
        number, wire = key >> 3, key & 7
        if number == 0:
            raise wire_error(path, f"field number 0 in {where}", offset)
        if wire == VARINT:
            value, pos = varint(data, pos, end, path, f"{where} field {number}")
            yield number, wire, value, offset
        elif wire == LEN:
            length, start = varint(data, pos, end, path, f"the length of {where} field {number}")
            if length > end - start:
                raise wire_error(
                    path, f"{where} field {number} declares {length} bytes but only {end - start} remain", offset
                )
            pos = start + length
            yield number, wire, (start, pos), offset
        elif wire in (I32, I64):
            size = 4 if wire == I32 else 8
            if size > end - pos:
                raise wire_error(path, f"truncated {WIRE_NAMES[wire]} in {where} field {number}", offset)
            yield number, wire, data[pos : pos + size], offset
            pos += size
        else:
            raise wire_error(path, f"invalid wire type {wire} in {where} field {number}", offset)


def expect_wire(path: Path, where: str, number: int, wire: int, expected: int, offset: int) -> None:
    if wire != expected:
        raise wire_error(
            path,
            f"{where} field {number} has wire type {WIRE_NAMES.get(wire, wire)}, expected {WIRE_NAMES[expected]}",
            offset,
        )


def text_field(data: bytes, span: tuple[int, int], path: Path, where: str, offset: int) -> str:
    try:
        return data[span[0] : span[1]].decode("utf-8")
    except UnicodeDecodeError:
        raise wire_error(path, f"{where} is not valid UTF-8", offset) from None


def int32(value: int) -> int:
    """A protobuf int32 (negative values are 10-byte two's complement varints)."""
    value &= 0xFFFFFFFFFFFFFFFF
    if value >= 1 << 63:
        value -= 1 << 64
    return max(-(2**31), min(value, 2**31 - 1))
