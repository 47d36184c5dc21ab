"""llama.cpp's vocabulary as ``llama_vocab::impl`` sees a GGUF (src/llama-vocab.cpp, in the llama.cpp that
llama-cpp-python 0.3.36 vendors): token attributes and ``token_to_piece``, emulated from the GGUF's tokens
and types alone, so that tokaudit knows what llama.cpp renders without running it."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tokaudit.artifacts.gguf import GGUFTokenizer

# llama_token_attr bits (llama.h)
ATTR_UNDEFINED, ATTR_UNKNOWN, ATTR_UNUSED, ATTR_NORMAL, ATTR_CONTROL, ATTR_USER_DEFINED, ATTR_BYTE = 0, 1, 2, 4, 8, 16, 32
#: GGUF token type (llama_token_type) -> attribute, as llama_vocab::impl::load maps them (others: UNDEFINED)
TYPE_ATTR = {1: ATTR_NORMAL, 2: ATTR_UNKNOWN, 3: ATTR_CONTROL, 4: ATTR_USER_DEFINED, 5: ATTR_UNUSED, 6: ATTR_BYTE}
#: tokenizer.ggml.model -> llama.cpp's vocabulary type
VOCAB_TYPES = {"llama": "SPM", "bert": "WPM", "gpt2": "BPE", "hybriddna": "BPE", "whitespace": "BPE", "gemma4": "BPE",
               "t5": "UGM", "rwkv": "RWKV", "plamo2": "PLAMO2"}
#: BPE pre-tokenizers whose tokens spell a space as "▁" (llama.cpp sets escape_whitespaces for them)
ESCAPED_BPE_PRE = frozenset({"gemma4", "granite-embed-multi-311m", "sarvam-moe"})
SPACE_MARK = "\u2581".encode()


class NotEmulated(ValueError):
    """A piece llama.cpp makes in a way tokaudit does not emulate (RWKV, PLaMo-2 vocabularies)."""


class PieceAbort(ValueError):
    """A token llama.cpp aborts the process on when it makes its piece (a BYTE token in a WordPiece vocabulary)."""


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet, character -> byte (llama.cpp's ``unicode_utf8_to_byte``)."""
    visible = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, n = {}, 0
    for b in range(256):
        if b in visible:
            chars[chr(b)] = b
        else:
            chars[chr(256 + n)] = b
            n += 1
    return chars


BYTE_OF = _byte_decoder()


def decode_text(text: bytes) -> bytes:
    """``llama_decode_text``: a byte-level BPE token's characters back to bytes; a character outside
    GPT-2's alphabet becomes ``[UNK_BYTE_0x<its UTF-8 in hex><the whole token>]``, as llama.cpp writes it."""
    try:
        chars = text.decode("utf-8")
    except UnicodeDecodeError:
        raise NotEmulated("a byte-level BPE token that is not valid UTF-8") from None
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

    @classmethod
    def from_gguf(cls, tokens: Sequence[bytes], types: Sequence[int] | None, model: str, pre: str | None,
                  control_override: Collection[int] = frozenset()) -> PieceRules:
        vocab_type = VOCAB_TYPES.get(model)
        if vocab_type is None:
            raise NotEmulated(f"tokenizer.ggml.model {model!r} is not one llama.cpp knows")
        if model == "gemma4":  # llama.cpp sets the pre-tokenizer of a gemma4 vocabulary itself
            pre = "gemma4"
        return cls(tokens, types, vocab_type, vocab_type == "BPE" and pre in ESCAPED_BPE_PRE, frozenset(control_override))

    def attr(self, token_id: int) -> int:
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
    if kind in ("RWKV", "PLAMO2"):
        raise NotEmulated(f"{kind} vocabularies make pieces their own way")
    if attr & (ATTR_UNKNOWN | ATTR_CONTROL | ATTR_USER_DEFINED):
        return text
    if attr & ATTR_NORMAL:
        if kind != "BPE" or rules.escape_whitespaces:
            return text.replace(SPACE_MARK, b" ")
        return decode_text(text)
    if attr & ATTR_BYTE:
        if kind == "WPM":
            raise PieceAbort(f"id {token_id} is a BYTE token in a WordPiece vocabulary: llama.cpp aborts (GGML_ABORT in token_to_byte)")
        return bytes([_strtol_hex(text[3:5])])
    return b""  # UNUSED and UNDEFINED tokens make no piece


def piece_rules(g: GGUFTokenizer) -> PieceRules:
    """The piece rules of a GGUF as llama.cpp loads it (with its control-looking overrides)."""
    return PieceRules.from_gguf(g.tokens, g.types, g.model or "", g.pre, control_override(g))


def gguf_pieces(g: GGUFTokenizer) -> dict[int, bytes]:
    """id -> the bytes llama.cpp renders for it with specials on. A vocabulary whose pieces tokaudit does not
    emulate (RWKV, PLaMo-2, an unknown model) keeps each token's raw bytes; a piece llama.cpp aborts making
    keeps them too (the backend reports the abort)."""
    try:
        rules = piece_rules(g)
    except NotEmulated:
        return dict(enumerate(g.tokens))
    out: dict[int, bytes] = {}
    for i, raw in enumerate(g.tokens):
        try:
            out[i] = token_piece(rules, i, True)
        except (NotEmulated, PieceAbort):
            out[i] = raw
    return out


def control_override(g: GGUFTokenizer) -> frozenset[int]:
    """Ids llama.cpp makes CONTROL at load: tokens it detects by text as EOT/EOM/FIM or EOG that the file
    does not type CONTROL (it logs "control-looking token ... this is probably a bug in the model")."""
    return frozenset()
