"""UTF-8 facts about byte strings: a trailing partial character and which characters it could begin."""

from __future__ import annotations

import codecs
import operator
from array import array
from collections.abc import Iterable
from itertools import accumulate, compress


def incomplete_tail(data: bytes) -> bytes:
    """The trailing bytes of ``data`` that begin a valid but unfinished multi-byte character."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    decoder.decode(data[-8:] if len(data) > 8 else data)
    return decoder.getstate()[0]


def sequence_length(lead: int) -> int:
    if lead < 0x80:
        return 1
    if 0xC2 <= lead <= 0xDF:
        return 2
    if 0xE0 <= lead <= 0xEF:
        return 3
    if 0xF0 <= lead <= 0xF4:
        return 4
    return 0


# Second-byte bounds for the leads whose range is narrower than 80..BF (Unicode Table 3-7).
_SECOND = {0xE0: (0xA0, 0xBF), 0xED: (0x80, 0x9F), 0xF0: (0x90, 0xBF), 0xF4: (0x80, 0x8F)}


def char_range(partial: bytes) -> tuple[int, int] | None:
    """The first and last code point a partial character could complete to (None if not a valid start)."""
    if not partial:
        return None
    need = sequence_length(partial[0])
    if need <= len(partial):
        return None
    lo, hi = bytearray(partial), bytearray(partial)
    for k in range(len(partial), need):
        low, high = _SECOND.get(partial[0], (0x80, 0xBF)) if k == 1 else (0x80, 0xBF)
        lo.append(low)
        hi.append(high)
    try:
        return ord(bytes(lo).decode("utf-8")), ord(bytes(hi).decode("utf-8"))
    except UnicodeDecodeError:
        return None


def describe_partial(partial: bytes) -> str:
    """'2 of 3 bytes (E6 97) of a character in U+65C0..U+65FF'."""
    hexed = " ".join(f"{b:02X}" for b in partial)
    need = sequence_length(partial[0]) if partial else 0
    span = char_range(partial)
    where = f" of a character in U+{span[0]:04X}..U+{span[1]:04X}" if span else ""
    return f"{len(partial)} of {need} bytes ({hexed}){where}"


#: Byte value -> 1 for a UTF-8 continuation byte (80..BF), else 0 (``bytes.translate`` table).
_CONTINUATION = bytes(1 if 0x80 <= b <= 0xBF else 0 for b in range(256))


def character_starts(data: bytes) -> int:
    """How many characters ``data`` begins: its bytes that are not continuation bytes."""
    return len(data) - data.translate(_CONTINUATION).count(1)


def decode_at_cuts(
    data: bytes, held: int, lengths: Iterable[int], starts: Iterable[int], emitted: int = 0, held_after: bool = True
) -> tuple[str, array, array, bytes] | None:
    """What an incremental UTF-8 decoder emits when, holding the first ``held`` bytes of ``data``, it is
    fed the rest in pieces of ``lengths`` bytes (``starts``: the characters each piece begins, see
    :func:`character_starts`): the text, the characters emitted so far after each piece (counted from
    ``emitted``), the bytes held after each piece (empty unless ``held_after``), and the bytes held at
    the end.

    The same answer as feeding a ``codecs`` incremental decoder piece by piece, in C-level passes
    instead of a call per piece. None when ``data`` is not valid UTF-8 up to an unfinished last
    character: there the ``replace`` rules apply and the caller feeds piece by piece."""
    tail = incomplete_tail(data)
    try:
        text = data[: len(data) - len(tail)].decode("utf-8")
    except UnicodeDecodeError:
        return None
    # flags[c] == 1: a cut before byte c falls inside a character (past the end: inside the unfinished tail)
    flags = data.translate(_CONTINUATION) + (b"\x01" if tail else b"\x00")
    cuts = array("q", accumulate(lengths, initial=held))  # an array: a list of 1M ints costs 36 MB
    del cuts[0]
    inside = bytes(map(flags.__getitem__, cuts))
    begun = accumulate(starts, initial=emitted + (1 if held else 0))
    next(begun)
    ends = array("q", map(operator.sub, begun, inside))
    holding = array("I", [0]) * len(cuts) if held_after else array("I")
    back = flags.rfind
    for k in compress(range(len(cuts)), inside) if held_after else ():
        c = cuts[k]
        holding[k] = c - back(0, 0, c)  # back to the byte that began the character
    return text, ends, holding, tail
