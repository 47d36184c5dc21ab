"""Turning a vocabulary's token *strings* into the bytes a decoder emits for them."""

from __future__ import annotations

import codecs
import re
import threading
from collections.abc import Iterable, ItemsView, Iterator, KeysView, Mapping, ValuesView
from enum import Enum
from functools import lru_cache
from itertools import compress, repeat


class Scheme(str, Enum):
    """How a vocabulary spells bytes as strings."""

    BYTE_LEVEL = "byte-level"  # GPT-2: every byte mapped to a printable code point
    METASPACE = "metaspace"  # SentencePiece: '▁' is a space, '<0xNN>' is a raw byte
    WORDPIECE = "wordpiece"  # '##' marks a continuation
    PLAIN = "plain"  # the string is the text


@lru_cache(maxsize=1)
def byte_decoder() -> dict[str, int]:
    """GPT-2's printable code point for each byte, inverted (code point -> byte)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    codes = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            codes.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, codes)}


def byte_encoder() -> dict[int, str]:
    return {b: c for c, b in byte_decoder().items()}


@lru_cache(maxsize=1)
def _byte_level_translation() -> dict[int, int]:
    """A ``str.translate`` table: each character of GPT-2's alphabet to the character of its byte, so that the
    result encodes as Latin-1 to the token's bytes; every other character up to U+00FF to U+0100, which Latin-1
    cannot encode (neither can anything past U+00FF left as it is): a token outside the alphabet fails."""
    table = {ord(c): b for c, b in byte_decoder().items()}
    table.update({c: 0x100 for c in range(0x100) if c not in table})
    return table


_BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def token_bytes(token: str, scheme: Scheme) -> bytes:
    if scheme is Scheme.BYTE_LEVEL:
        try:
            return token.translate(_byte_level_translation()).encode("latin-1")
        except UnicodeEncodeError:  # a character outside the alphabet: the token is UTF-8 text
            return token.encode("utf-8")
    if scheme is Scheme.METASPACE:
        m = _BYTE_TOKEN.fullmatch(token)
        if m:
            return bytes([int(m.group(1), 16)])
        return token.replace("\u2581", " ").encode("utf-8")
    if scheme is Scheme.WORDPIECE:
        return (token[2:] if token.startswith("##") else token).encode("utf-8")
    return token.encode("utf-8")


def token_bytes_table(tokens: Mapping[int, str], scheme: Scheme) -> dict[int, bytes]:
    """``{id: token_bytes(token, scheme)}`` for a whole vocabulary, with one pass over the joined
    strings instead of a call per token (262k tokens for Gemma 3); the same bytes, in the same order."""
    ids, strings = list(tokens), list(tokens.values())
    if scheme is Scheme.BYTE_LEVEL:
        return _byte_level_table(ids, strings)
    if scheme in (Scheme.METASPACE, Scheme.PLAIN):
        joined = "\0".join(strings)
        if joined.count("\0") != len(strings) - 1 or not strings:  # a token holding NUL: split would cut it
            return {i: token_bytes(t, scheme) for i, t in tokens.items()}
        if scheme is Scheme.METASPACE:
            joined = joined.replace("\u2581", " ")
        out = dict(zip(ids, joined.encode("utf-8").split(b"\0")))
        if scheme is Scheme.METASPACE and "<0x" in joined:  # <0xNN> byte tokens are their byte
            for k in compress(range(len(strings)), map(str.startswith, strings, repeat("<0x"))):
                out[ids[k]] = token_bytes(strings[k], scheme)
        return out
    return {i: token_bytes(t, scheme) for i, t in tokens.items()}


#: GPT-2's spelling of byte 0xFF (itself), which separates the tokens of a byte-level table: UTF-8 text never
#: holds that byte, so only a few tokens do (the byte's own token among them).
_BYTE_LEVEL_SEPARATOR = "\xff"


def _byte_level_table(ids: list[int], strings: list[str]) -> dict[int, bytes]:
    """A byte-level vocabulary's bytes: its strings joined with the separator, turned into bytes in bulk and
    split there (no object per token but its bytes). The tokens that hold the separator, or a character
    outside GPT-2's alphabet (spelled as UTF-8 text: DeepSeek V3 has some), are left out of the bulk pass
    and converted one by one."""
    sep = _BYTE_LEVEL_SEPARATOR
    aside = set(compress(range(len(strings)), map(str.__contains__, strings, repeat(sep))))
    joined = sep.join(_blanked(strings, aside))
    data = _byte_level_bytes(joined)
    if data is None and joined:  # characters outside the alphabet (or a lone surrogate): their tokens too
        aside.update(_token_indices(joined, (m.start() for m in _outside_byte_level().finditer(joined)), sep))
        joined = sep.join(_blanked(strings, aside))
        data = _byte_level_bytes(joined)
    if data is None:  # no tokens, or every token set aside
        return {i: token_bytes(t, Scheme.BYTE_LEVEL) for i, t in zip(ids, strings)}
    out = dict(zip(ids, data.split(sep.encode("latin-1"))))
    for k in aside:
        out[ids[k]] = token_bytes(strings[k], Scheme.BYTE_LEVEL)
    return out


def _blanked(strings: list[str], indices: Iterable[int]) -> list[str]:
    """``strings`` with those at ``indices`` emptied (a copy when there are any)."""
    out = strings
    for k in indices:
        if out is strings:
            out = strings[:]
        out[k] = ""
    return out


class TokenBytes(Mapping[int, bytes]):
    """``token_bytes_table(tokens, scheme)`` built only when first needed whole: iterating its values, or
    more than :data:`LOOKUPS_ALONE` lookups. A scan mostly looks up a few ids and checks UTF-8 in bulk
    (:func:`undecodable_ids`), so it never spends the 128k objects of a Llama 3 vocabulary."""

    #: Lookups answered one token at a time before the whole table is built.
    LOOKUPS_ALONE = 1024

    def __init__(self, tokens: Mapping[int, str], scheme: Scheme) -> None:
        self.strings = tokens
        self.scheme = scheme
        self._table: dict[int, bytes] | None = None
        self._lookups = 0

    def __getitem__(self, token_id: int) -> bytes:
        if self._table is None and self._lookups < self.LOOKUPS_ALONE:
            self._lookups += 1
            return token_bytes(self.strings[token_id], self.scheme)
        return self.table[token_id]

    def __iter__(self) -> Iterator[int]:
        return iter(self.strings)

    def __len__(self) -> int:
        return len(self.strings)

    def __contains__(self, token_id: object) -> bool:
        return token_id in self.strings

    def keys(self) -> KeysView[int]:
        return self.strings.keys()

    def items(self) -> ItemsView[int, bytes]:
        return self.table.items()

    def values(self) -> ValuesView[bytes]:
        return self.table.values()

    @property
    def built(self) -> bool:
        return self._table is not None

    @property
    def table(self) -> dict[int, bytes]:
        if self._table is None:
            self._table = token_bytes_table(self.strings, self.scheme)
        return self._table


def undecodable_ids(vocab: Mapping[int, bytes]) -> list[int]:
    """Ids whose bytes are not valid UTF-8 on their own, in id order. A byte-level :class:`TokenBytes` not yet
    built is checked in bulk from its strings (:func:`_byte_level_undecodable`); any other vocabulary token by
    token (ASCII tokens skipped cheaply)."""
    if isinstance(vocab, TokenBytes) and not vocab.built and vocab.scheme is Scheme.BYTE_LEVEL:
        found = _byte_level_undecodable(list(vocab.strings.values()))
        if found is not None:
            ids = list(vocab.strings)
            return sorted(ids[k] for k in found)
    bad = []
    for i, token in vocab.items():  # is_partial_utf8 inlined: a call per token costs more than the check
        if not token.isascii():
            try:
                token.decode("utf-8")
            except UnicodeDecodeError:
                bad.append(i)
    return sorted(bad)


def _byte_level_undecodable(strings: list[str]) -> list[int] | None:
    """Indices of the byte-level tokens whose bytes are not valid UTF-8 alone, without a bytes object per token (None
    when there are no tokens, or a token holds a NUL). The strings are joined with NUL, which is outside the
    alphabet, and turned into bytes in one pass: each byte sits where its character does, and NUL (ASCII) ends any
    UTF-8 sequence. One decode of the whole then finds every error; its handler counts the NULs of the text before an
    error (the token's index) and resumes at the next token. Tokens with characters outside the alphabet (spelled as
    UTF-8 text: DeepSeek V3 has some) are left out of the bulk pass and checked alone."""
    text = "\0".join(strings)
    if text.count("\0") != len(strings) - 1:
        return None
    data = _byte_level_bytes(text, separator=True)
    aside: list[int] = []
    if data is None and text:
        aside = _token_indices(text, (m.start() for m in _outside_byte_level(nul=True).finditer(text)), "\0")
        text = "\0".join(_blanked(strings, aside))
        data = _byte_level_bytes(text, separator=True)
    if data is None:
        return None
    state = _undecodable_state
    state.text, state.found, state.index, state.counted = text, [], 0, 0
    try:
        data.decode("utf-8", _UNDECODABLE_HANDLER)
        found = state.found
    finally:
        del state.text, state.found, state.index, state.counted
    return found + [k for k in aside if is_partial_utf8(token_bytes(strings[k], Scheme.BYTE_LEVEL))]


def _token_indices(text: str, positions: Iterable[int], sep: str) -> list[int]:
    """The indices of the ``sep``-separated tokens of ``text`` at ``positions`` (ascending), each once."""
    out: list[int] = []
    index = counted = 0
    for at in positions:
        index += text.count(sep, counted, at)
        counted = at
        if not out or out[-1] != index:
            out.append(index)
    return out


#: The state of :func:`_byte_level_undecodable`'s decode, per thread (scan --jobs scans targets in threads).
_undecodable_state = threading.local()
_UNDECODABLE_HANDLER = "tokaudit.undecodable-token"


def _note_undecodable(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    state = _undecodable_state
    state.index += state.text.count("\0", state.counted, exc.start)
    state.counted = exc.start
    state.found.append(state.index)
    end = state.text.find("\0", exc.start)
    return "", len(state.text) if end < 0 else end


codecs.register_error(_UNDECODABLE_HANDLER, _note_undecodable)


def is_partial_utf8(token: bytes) -> bool:
    """Whether a token's bytes are not valid UTF-8 on their own."""
    try:
        token.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _byte_level_bytes(text: str, separator: bool = False) -> bytes | None:
    """The bytes GPT-2's alphabet spells in ``text``, or None when a character is outside it (or ``text`` is empty);
    with ``separator``, NUL (outside the alphabet) is taken too, as byte 0. Bulk byte operations instead of a lookup
    per character (4x faster than the charmap codec): in UTF-16 each character of the alphabet is a low byte and a
    high byte 0 (the 188 characters that are their own byte) or 1 (U+0100-U+0143, the 68 others); the result takes
    the low byte where the high one is 0 and its table byte where it is 1, selected with a mask over the whole text
    as one integer."""
    if not text:
        return None
    try:
        utf16 = text.encode("utf-16-le")
    except UnicodeEncodeError:  # a lone surrogate
        return None
    low, high = utf16[0::2], utf16[1::2]
    if high.translate(None, b"\x00\x01"):
        return None
    own_bad, shifted_bad, shifted, mask_of = _byte_level_tables()
    if separator:
        own_bad = b"\0" + own_bad[1:]
    mask = int.from_bytes(high.translate(mask_of), "big")
    if (int.from_bytes(low.translate(own_bad), "big") & ~mask) | (
        int.from_bytes(low.translate(shifted_bad), "big") & mask
    ):
        return None
    lows = int.from_bytes(low, "big")
    return (lows ^ (mask & (lows ^ int.from_bytes(low.translate(shifted), "big")))).to_bytes(len(low), "big")


@lru_cache(maxsize=1)
def _byte_level_tables() -> tuple[bytes, bytes, bytes, bytes]:
    """For :func:`_byte_level_bytes`, by low byte: 0xFF where a high-0 character is outside the alphabet; 0xFF
    where a high-1 one is; the byte of the high-1 character; and the mask byte of a high byte (0 or 1)."""
    decoder = byte_decoder()
    own_bad = bytes(0 if chr(b) in decoder else 0xFF for b in range(256))
    shifted_bad = bytes(0 if chr(256 + b) in decoder else 0xFF for b in range(256))
    shifted = bytes(decoder.get(chr(256 + b), 0) for b in range(256))
    return own_bad, shifted_bad, shifted, bytes([0, 0xFF]) + bytes(254)


@lru_cache(maxsize=2)
def _outside_byte_level(nul: bool = False) -> re.Pattern[str]:
    """A character outside GPT-2's alphabet (with ``nul``: NUL is not one)."""
    return re.compile("[^" + "".join(map(re.escape, byte_decoder())) + ("\\0" if nul else "") + "]")
