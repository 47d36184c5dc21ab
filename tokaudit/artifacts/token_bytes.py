"""Turning a vocabulary's token *strings* into the bytes a decoder emits for them."""

from __future__ import annotations

import codecs
import re
import threading
from collections.abc import Iterable, ItemsView, Iterator, KeysView, Mapping, ValuesView
from dataclasses import dataclass
from enum import Enum
from functools import cached_property, lru_cache
from itertools import compress, repeat
from typing import Any


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
    """Indices of the byte-level tokens whose bytes are not valid UTF-8 alone, without a bytes object per token
    (None when there are no tokens, or a token holds a NUL). The strings are joined with NUL, which is outside
    the alphabet, and turned into bytes in one pass: each byte sits where its character does, and NUL (ASCII)
    ends any UTF-8 sequence. One decode of the whole then finds every error; its handler counts the NULs of the text before
    an error (the token's index) and resumes at the next token. Tokens with characters outside the alphabet
    (spelled as UTF-8 text: DeepSeek V3 has some) are left out of the bulk pass and checked alone."""
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
    """The bytes GPT-2's alphabet spells in ``text``, or None when a character is outside it (or ``text`` is
    empty); with ``separator``, NUL (outside the alphabet) is taken too, as byte 0. Bulk byte operations
    instead of a lookup per character (4x faster than the charmap codec): in UTF-16 each character of the alphabet is a low byte and a high byte 0 (the 188 characters that are
    their own byte) or 1 (U+0100-U+0143, the 68 others); the result takes the low byte where the high one
    is 0 and its table byte where it is 1, selected with a mask over the whole text as one integer."""
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
    if (int.from_bytes(low.translate(own_bad), "big") & ~mask) | (int.from_bytes(low.translate(shifted_bad), "big") & mask):
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


# --- The decoder chain: token strings -> text, as the ``tokenizers`` decoders do it ---------------

#: WordPiece ``cleanup``: the replacements ``tokenizers`` (and BERT's ``clean_up_tokenization``) make.
_CLEANUP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"), (" 'm", "'m"),
            (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))

#: Decoder types emulated; any other makes the chain ``unsupported``.
KNOWN_DECODERS = frozenset({"ByteLevel", "Metaspace", "Replace", "ByteFallback", "Fuse", "Strip", "WordPiece", "BPEDecoder"})


def cleanup(text: str) -> str:
    for dirty, clean in _CLEANUP:
        text = text.replace(dirty, clean)
    return text


@dataclass(frozen=True)
class Step:
    """One decoder of the chain. ``kind`` is the tokenizers type name; the other fields are its options."""

    kind: str
    #: Metaspace replacement / Replace pattern / Strip content / WordPiece prefix / BPEDecoder suffix.
    text: str = ""
    #: Replace: the replacement; ``regex``: the pattern is a regex rather than a literal string.
    content: str = ""
    regex: bool = False
    #: Metaspace: drop the replacement char in the first token (prepend_scheme first/always).
    strip_first: bool = False
    #: Strip: how many ``text`` chars to remove at the start / end; WordPiece: cleanup.
    start: int = 0
    stop: int = 0
    cleanup: bool = False

    def describe(self) -> str:
        if self.kind == "Metaspace":
            return f"Metaspace({self.text!r}{', first token stripped' if self.strip_first else ''})"
        if self.kind == "Replace":
            return f"Replace({self.text!r} → {self.content!r})"
        if self.kind == "Strip":
            return f"Strip({self.text!r}, {self.start}, {self.stop})"
        if self.kind == "WordPiece":
            return f"WordPiece({self.text!r}{', cleanup' if self.cleanup else ''})"
        if self.kind == "BPEDecoder":
            return f"BPEDecoder({self.text!r})"
        return self.kind

    # exact semantics of tokenizers' decode_chain, on strings
    def apply(self, tokens: list[str]) -> list[str]:
        k = self.kind
        if k == "ByteLevel":
            data = b"".join(token_bytes(t, Scheme.BYTE_LEVEL) for t in tokens)
            return [data.decode("utf-8", "replace")]
        if k == "Metaspace":
            return [t.replace(self.text, "" if i == 0 and self.strip_first else " ") for i, t in enumerate(tokens)]
        if k == "Replace":
            return [self._replace(t) for t in tokens]
        if k == "ByteFallback":
            return _byte_fallback(tokens)
        if k == "Fuse":
            return ["".join(tokens)]
        if k == "Strip":
            return [_strip(t, self.text, self.start, self.stop) for t in tokens]
        if k == "WordPiece":
            out = []
            for i, t in enumerate(tokens):
                if i:
                    t = t.replace(self.text, "", 1) if t.startswith(self.text) else " " + t
                out.append(cleanup(t) if self.cleanup else t)
            return out
        if k == "BPEDecoder":
            return [t.replace(self.text, "" if i == len(tokens) - 1 else " ") for i, t in enumerate(tokens)]
        return tokens

    def _replace(self, token: str) -> str:
        if not self.regex:
            return token.replace(self.text, self.content) if self.text else token
        import regex

        return regex.sub(self.text, lambda _m: self.content, token)


def _strip(token: str, content: str, start: int, stop: int) -> str:
    """tokenizers' Strip, quirk included: the kept length is counted in UTF-8 bytes but taken in chars."""
    chars = list(token)
    start_cut = 0
    for c in chars[:start]:
        if c != content:
            break
        start_cut += 1
    stop_cut = 0
    for c in reversed(chars[len(chars) - stop:] if stop else []):
        if c != content:
            break
        stop_cut += 1
    keep = max(len(token.encode("utf-8")) - start_cut - stop_cut, 0)
    return "".join(chars[start_cut:start_cut + keep])


def _strip_start(data: bytes, content: bytes, start: int) -> bytes:
    while start and content and data.startswith(content):
        data = data[len(content):]
        start -= 1
    return data


def _byte_token(token: str) -> int | None:
    """The byte of a ``<0xNN>`` ByteFallback token."""
    m = _BYTE_TOKEN.fullmatch(token) if len(token) == 6 else None
    return int(m.group(1), 16) if m else None


def _byte_fallback(tokens: list[str]) -> list[str]:
    """``<0xNN>`` runs become their bytes; a run that is not valid UTF-8 is one U+FFFD per byte (as tokenizers)."""
    out: list[str] = []
    run: list[int] = []

    def close() -> None:
        if run:
            try:
                out.append(bytes(run).decode("utf-8"))
            except UnicodeDecodeError:
                out.extend("\ufffd" for _ in run)
            run.clear()

    for t in tokens:
        b = _byte_token(t)
        if b is not None:
            run.append(b)
        else:
            close()
            out.append(t)
    close()
    return out


@dataclass(frozen=True)
class DecoderChain:
    """How a tokenizer turns token strings into text (tokenizer.json ``decoder``, or the implied one of
    vocab.txt / vocab.json). ``steps`` empty with ``join=True``: no decoder, tokens joined by spaces."""

    steps: tuple[Step, ...]
    #: Where the chain comes from, e.g. "tokenizer.json decoder" or "BERT default (vocab.txt)".
    source: str
    #: No decoder at all: tokenizers joins the tokens with single spaces.
    join: bool = False
    #: Decoder types that are not emulated (empty when every step is).
    unsupported: tuple[str, ...] = ()

    def describe(self) -> str:
        if self.join:
            return "none (tokens joined with spaces)"
        return " → ".join(s.describe() for s in self.steps) or "none"

    def decode(self, tokens: list[str]) -> str:
        """The text tokenizers' ``decode`` gives for these token strings (added tokens included)."""
        if self.join:
            return " ".join(tokens)
        for step in self.steps:
            tokens = step.apply(tokens)
        return "".join(tokens)

    @cached_property
    def not_concatenative(self) -> str | None:
        """Why token bytes do not simply concatenate to the text, or None when they do (then
        :class:`PieceStream` yields the bytes each token adds)."""
        if self.unsupported:
            return f"the decoder {', '.join(self.unsupported)} is not emulated"
        if self.join:
            return "the tokenizer has no decoder: tokens are joined with spaces"
        fused = False
        for s in self.steps:
            if s.kind == "WordPiece":
                return "WordPiece puts a space before every token that does not start with '##': token bytes do not concatenate to the text"
            if s.kind == "BPEDecoder":
                return "BPEDecoder's suffix becomes a space except on the last token: token bytes do not concatenate to the text"
            if s.kind == "Replace" and fused and (s.regex or len(s.text) != 1):
                return "a Replace decoder after Fuse can match across tokens"
            if s.kind == "Strip" and s.stop and fused:
                return "a Strip decoder removes characters at the end of the whole text"
            if s.kind in ("Fuse", "ByteLevel"):
                fused = True
        return None


class PieceStream:
    """The bytes each token adds to the text, in stream order, for a chain whose token bytes
    concatenate (``not_concatenative`` is None): per-token steps on bytes, the first-token rules
    (Metaspace, a Strip after Fuse) applied to the start of the text."""

    def __init__(self, chain: DecoderChain) -> None:
        self.chain = chain
        self.index = 0
        self._cache: dict[str, bytes] = {}  # non-first tokens: a pure function of the token
        fused = False
        #: Strips that apply once to the start of the whole text: [content bytes, remaining].
        self.lead: list[list[Any]] = []
        for s in chain.steps:
            if s.kind == "Strip" and fused and s.start:
                self.lead.append([s.text.encode("utf-8"), s.start])
            if s.kind in ("Fuse", "ByteLevel"):
                fused = True

    def piece(self, token: str | bytes) -> bytes:
        """The next token's bytes (a ``bytes`` token is raw: rank files have no decoder chain)."""
        first = self.index == 0
        self.index += 1
        if isinstance(token, bytes):
            data = token
        elif first:
            data = self._token(token, True)
        else:
            data = self._cache.get(token)  # type: ignore[assignment]
            if data is None:
                data = self._cache[token] = self._token(token, False)
        for lead in self.lead:
            while lead[1] and lead[0] and data.startswith(lead[0]):
                data = data[len(lead[0]):]
                lead[1] -= 1
            if data:
                lead[1] = 0  # only the very start of the whole text is stripped
        return data

    def _token(self, token: str, first: bool) -> bytes:
        data: bytes | None = None  # set once a step turned the token into raw bytes
        fused = False
        for s in self.chain.steps:
            k = s.kind
            if k == "ByteLevel":
                if data is None:
                    data = token_bytes(token, Scheme.BYTE_LEVEL)
                fused = True
            elif k == "Fuse":
                fused = True
            elif k == "ByteFallback":
                b = _byte_token(token) if data is None else None
                if b is not None:
                    data = bytes([b])
            elif data is not None:  # a later step on a byte-fallback byte (rare): apply it to the bytes
                if k == "Metaspace":
                    data = data.replace(s.text.encode("utf-8"), b"" if first and s.strip_first else b" ")
                elif k == "Replace" and not s.regex and s.text:
                    data = data.replace(s.text.encode("utf-8"), s.content.encode("utf-8"))
                elif k == "Strip" and not fused:
                    data = _strip_start(data, s.text.encode("utf-8"), s.start)
            elif k == "Metaspace":
                token = token.replace(s.text, "" if first and s.strip_first else " ")
            elif k == "Replace":
                token = s._replace(token)
            elif k == "Strip" and not fused:
                token = _strip(token, s.text, s.start, s.stop)
        return token.encode("utf-8") if data is None else data


def parse_decoder(component: Any, source: str) -> DecoderChain:
    """The chain of a tokenizer.json ``decoder`` object (None: no decoder)."""
    if component is None:
        return DecoderChain((), source, join=True)
    steps: list[Step] = []
    unsupported: list[str] = []

    def walk(part: Any, depth: int) -> None:
        if not isinstance(part, dict) or depth > 16:
            unsupported.append(type(part).__name__)
            return
        kind = part.get("type")
        if kind == "Sequence":
            for sub in (part.get("decoders") or [])[:256]:
                walk(sub, depth + 1)
            return
        if kind not in KNOWN_DECODERS:
            unsupported.append(str(kind))
            return
        if kind == "Metaspace":
            scheme = part.get("prepend_scheme")
            if scheme is None:  # files older than tokenizers 0.14: add_prefix_space
                scheme = "always" if part.get("add_prefix_space", True) else "never"
            steps.append(Step(kind, text=str(part.get("replacement") or "\u2581"), strip_first=scheme != "never"))
        elif kind == "Replace":
            pattern = part.get("pattern") or {}
            is_regex = "Regex" in pattern
            steps.append(Step(kind, text=str(pattern.get("Regex", pattern.get("String", ""))), content=str(part.get("content", "")), regex=is_regex))
        elif kind == "Strip":
            steps.append(Step(kind, text=str(part.get("content", " ")), start=_int(part.get("start")), stop=_int(part.get("stop"))))
        elif kind == "WordPiece":
            steps.append(Step(kind, text=str(part.get("prefix", "##")), cleanup=bool(part.get("cleanup", True))))
        elif kind == "BPEDecoder":
            steps.append(Step(kind, text=str(part.get("suffix", "</w>"))))
        else:
            steps.append(Step(kind))

    walk(component, 0)
    return DecoderChain(tuple(steps), source, unsupported=tuple(unsupported))


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 20 else 0


#: The decoders transformers builds for the slow vocabulary files.
WORDPIECE_DEFAULT = DecoderChain((Step("WordPiece", text="##", cleanup=True),), "WordPiece (vocab.txt, as BertTokenizer)")
BYTE_LEVEL_DEFAULT = DecoderChain((Step("ByteLevel"),), "ByteLevel (vocab.json + merges.txt, as GPT2Tokenizer)")
