"""Turning a vocabulary's token *strings* into the bytes a decoder emits for them."""

from __future__ import annotations

import re
from enum import Enum
from functools import lru_cache


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


_BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def token_bytes(token: str, scheme: Scheme) -> bytes:
    if scheme is Scheme.BYTE_LEVEL:
        table = byte_decoder()
        if all(ch in table for ch in token):
            return bytes(table[ch] for ch in token)
        return token.encode("utf-8")
    if scheme is Scheme.METASPACE:
        m = _BYTE_TOKEN.fullmatch(token)
        if m:
            return bytes([int(m.group(1), 16)])
        return token.replace("\u2581", " ").encode("utf-8")
    if scheme is Scheme.WORDPIECE:
        return (token[2:] if token.startswith("##") else token).encode("utf-8")
    return token.encode("utf-8")
