"""llama.cpp's vocabulary as ``llama_vocab::impl`` sees a GGUF (src/llama-vocab.cpp, in the llama.cpp that
llama-cpp-python 0.3.36 vendors): token attributes and ``token_to_piece``, emulated from the GGUF's tokens
and types alone, so that tokaudit knows what llama.cpp renders without running it."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate

from tokaudit.artifacts.token_bytes import byte_decoder

# llama_token_attr bits (llama.h)
ATTR_UNDEFINED, ATTR_UNKNOWN, ATTR_UNUSED, ATTR_NORMAL, ATTR_CONTROL, ATTR_USER_DEFINED, ATTR_BYTE = (
    0,
    1,
    2,
    4,
    8,
    16,
    32,
)
#: GGUF token type (llama_token_type) -> attribute, as llama_vocab::impl::load maps them (others: UNDEFINED)
TYPE_ATTR = {1: ATTR_NORMAL, 2: ATTR_UNKNOWN, 3: ATTR_CONTROL, 4: ATTR_USER_DEFINED, 5: ATTR_UNUSED, 6: ATTR_BYTE}
#: tokenizer.ggml.model -> llama.cpp's vocabulary type
VOCAB_TYPES = {
    "llama": "SPM",
    "bert": "WPM",
    "gpt2": "BPE",
    "hybriddna": "BPE",
    "whitespace": "BPE",
    "gemma4": "BPE",
    "t5": "UGM",
    "rwkv": "RWKV",
    "plamo2": "PLAMO2",
}
#: BPE pre-tokenizers whose tokens spell a space as "▁" (llama.cpp sets escape_whitespaces for them)
ESCAPED_BPE_PRE = frozenset({"gemma4", "granite-embed-multi-311m", "sarvam-moe"})
SPACE_MARK = "\u2581".encode()


#: Vocabulary types whose pieces llama.cpp makes its own way (not emulated here).
OWN_PIECES = ("RWKV", "PLAMO2")


class NotEmulated(ValueError):
    """A piece llama.cpp makes in a way tokaudit does not emulate (RWKV, PLaMo-2 vocabularies)."""


class PieceAbort(ValueError):
    """A token llama.cpp aborts the process on when it makes its piece (a BYTE token in a WordPiece vocabulary)."""


#: GPT-2's byte-level alphabet, character -> byte (llama.cpp's ``unicode_utf8_to_byte``).
BYTE_OF = byte_decoder()


#: GPT-2's alphabet character -> the latin-1 character of its byte (``str.translate`` then ``encode("latin-1")``).
_TO_LATIN1 = {ord(ch): b for ch, b in BYTE_OF.items()}
#: Any character outside GPT-2's alphabet (those take llama.cpp's ``[UNK_BYTE_...]`` path).
_OUTSIDE = re.compile("[^" + re.escape("".join(sorted(BYTE_OF))) + "]")


def decode_text(text: bytes) -> bytes:
    """``llama_decode_text``: a byte-level BPE token's characters back to bytes; a character outside
    GPT-2's alphabet becomes ``[UNK_BYTE_0x<its UTF-8 in hex><the whole token>]``, as llama.cpp writes it."""
    try:
        chars = text.decode("utf-8")
    except UnicodeDecodeError:
        raise NotEmulated("a byte-level BPE token that is not valid UTF-8") from None
    if not _OUTSIDE.search(chars):  # the usual token: one C-level translation
        return chars.translate(_TO_LATIN1).encode("latin-1")
    out = bytearray()
    for ch in chars:
        b = BYTE_OF.get(ch)
        if b is not None:
            out.append(b)
        else:
            out += b"[UNK_BYTE_0x" + ch.encode("utf-8").hex().encode() + text + b"]"
    return bytes(out)


def _strtol_hex(text: bytes) -> int:
    """``strtol(text, NULL, 16)`` on two characters: the hex digits it reads before the first other one."""
    value = 0
    for c in text.decode("latin-1").lstrip(" \t\n\r\f\v"):
        if c not in "0123456789abcdefABCDEF":
            break
        value = value * 16 + int(c, 16)
    return value & 0xFF


@dataclass(frozen=True)
class PieceRules:
    """What ``token_to_piece`` needs from the GGUF: each token's text and type, the vocabulary type,
    whether BPE tokens spell spaces as "▁", and the ids llama.cpp makes CONTROL at load ("control-looking"
    tokens typed otherwise, found by name: llama.cpp logs "this is probably a bug in the model")."""

    tokens: Sequence[bytes]
    types: Sequence[int] | None
    vocab_type: str
    escape_whitespaces: bool = False
    control_override: Collection[int] = field(default_factory=frozenset)
    #: id -> the attribute llama.cpp sets at load in place of the type's (see :mod:`tokaudit.model.llamacpp_load`).
    attr_override: Mapping[int, int] = field(default_factory=dict)

    @classmethod
    def from_gguf(
        cls,
        tokens: Sequence[bytes],
        types: Sequence[int] | None,
        model: str,
        pre: str | None,
        control_override: Collection[int] = frozenset(),
        attr_override: Mapping[int, int] | None = None,
    ) -> PieceRules:
        vocab_type = VOCAB_TYPES.get(model)
        if vocab_type is None:
            raise NotEmulated(f"tokenizer.ggml.model {model!r} is not one llama.cpp knows")
        if model == "gemma4":  # llama.cpp sets the pre-tokenizer of a gemma4 vocabulary itself
            pre = "gemma4"
        return cls(
            tokens,
            types,
            vocab_type,
            vocab_type == "BPE" and pre in ESCAPED_BPE_PRE,
            frozenset(control_override),
            dict(attr_override or {}),
        )

    def attr(self, token_id: int) -> int:
        if token_id in self.attr_override:
            return self.attr_override[token_id]
        kind = self.types[token_id] if self.types is not None else 1
        attr = TYPE_ATTR.get(kind, ATTR_UNDEFINED)
        return attr | ATTR_CONTROL if token_id in self.control_override else attr


def token_piece(rules: PieceRules, token_id: int, special: bool) -> bytes:
    """``llama_token_to_piece(vocab, id, buf, n, lstrip=0, special)`` for an id inside the vocabulary."""
    attr = rules.attr(token_id)
    if not special and attr & (ATTR_UNKNOWN | ATTR_CONTROL):
        return b""
    text = rules.tokens[token_id] or b"[EMPTY_%d]" % token_id  # llama.cpp renames an empty token at load
    kind = rules.vocab_type
    if kind in OWN_PIECES:
        raise NotEmulated(f"{kind} vocabularies make pieces their own way")
    if attr & (ATTR_UNKNOWN | ATTR_CONTROL | ATTR_USER_DEFINED):
        return text
    if attr & ATTR_NORMAL:
        if kind != "BPE" or rules.escape_whitespaces:
            return text.replace(SPACE_MARK, b" ")
        return decode_text(text)
    if attr & ATTR_BYTE:
        if kind == "WPM":
            raise PieceAbort(
                f"id {token_id} is a BYTE token in a WordPiece vocabulary: llama.cpp aborts (GGML_ABORT in "
                "token_to_byte)"
            )
        return bytes([_strtol_hex(text[3:5])])
    return b""  # UNUSED and UNDEFINED tokens make no piece


def byte_level_pieces(tokens: list[bytes]) -> list[bytes]:
    """:func:`decode_text` of many byte-level BPE tokens: one translation of their joined text when every
    character is in GPT-2's alphabet (one byte each), else token by token."""
    try:
        texts = [t.decode("utf-8") for t in tokens]
    except UnicodeDecodeError:
        texts = []
    joined = "".join(texts)
    if not texts or _OUTSIDE.search(joined):
        out = []
        for t in tokens:
            try:
                out.append(decode_text(t))
            except NotEmulated:
                out.append(t)
        return out
    data = joined.translate(_TO_LATIN1).encode("latin-1")
    ends = list(accumulate(map(len, texts)))
    return [data[a:b] for a, b in zip([0, *ends], ends)]


def clean_spaces(text: str) -> str:
    """llama.cpp's ``clean_spaces`` pass of ``llama_detokenize`` (``llama_vocab::impl::detokenize``), ported:
    HF's ``clean_up_tokenization_spaces`` rules as llama.cpp applies them to BPE vocabularies (all but a few
    pre-tokenizer types): " ?", " !", " .", " ," lose the space; " ' " becomes "'"; " 's", " 'm", " 're",
    " 've" lose the space (" 't", " 'd", " 'll" keep it). Used to explain decode differences."""
    out: list[str] = []
    for i, x in enumerate(text):  # first pass
        if i and text[i - 1] == " " and x in "?!.,":
            out.pop()
        out.append(x)
    buf = list("".join(out))
    out, i = [], 0
    while i < len(buf):  # second pass: " ' " -> "'" (llama.cpp blanks the skipped space, so it cannot start another)
        x = buf[i]
        if i and x == "'" and i + 1 < len(buf) and buf[i - 1] == " " and buf[i + 1] == " ":
            out.pop()
            out.append(x)
            buf[i + 1] = "\0"
            i += 2
            continue
        out.append(x)
        i += 1
    second = "".join(out)
    out = []
    for i, x in enumerate(second):  # third pass: contractions
        if i and second[i - 1] == " " and x == "'" and i + 1 < len(second):
            nxt = second[i + 1]
            if nxt in "sm" or (i + 2 < len(second) and second[i + 1 : i + 3] in ("re", "ve")):
                out.pop()
        out.append(x)
    return "".join(out)


def detokenize(rules: PieceRules, ids: Sequence[int], *, special: bool, add_space_prefix: bool, clean: bool) -> bytes:
    """``llama_detokenize(remove_special=False, unparse_special=special)``: each id's piece, the first one
    without one leading space when ``add_space_prefix`` is set, then HF's space cleanup (:func:`clean_spaces`)
    when llama.cpp applies it to this vocabulary. Ids must be inside the vocabulary."""
    out = bytearray()
    for k, token_id in enumerate(ids):
        piece = token_piece(rules, token_id, special)
        out += piece[1:] if k == 0 and add_space_prefix and piece.startswith(b" ") else piece
    if not clean:
        return bytes(out)
    return clean_spaces(out.decode("latin-1")).encode("latin-1")  # the rules touch ASCII only: bytes kept as they are
