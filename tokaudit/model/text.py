"""Ids -> text the way the tokenizer's own decoder does, over the files profile.

The one implementation behind the strict backend, replay's ``bytes`` detokenizer, the token tables
(decode/encode/explain) and id-collision: each id is spelled as the decoder sees it (the vocabulary
string, or the added token's content; raw bytes for rank files, which have no decoder) and the
tokenizer's decoder chain (ByteLevel, Metaspace, Replace + Strip, ByteFallback, Fuse, WordPiece)
turns the spellings into text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from tokaudit.artifacts.decoder_chain import DecoderChain
from tokaudit.model.decoding import PieceStream, decode
from tokaudit.model.id_table import Layer
from tokaudit.model.tokenizer_model import TokenizerModel


#: BertTokenizer's defaults, used when a vocab.txt comes without a tokenizer_config.json that sets them.
BERT_DEFAULTS: dict[str, Any] = {"do_lower_case": True, "strip_accents": None, "tokenize_chinese_chars": True}
BERT_SPECIALS = ("[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]")


@dataclass(frozen=True)
class WordPieceSettings:
    """What BertTokenizer normalizes with, and which settings were not in tokenizer_config.json."""

    do_lower_case: bool
    strip_accents: bool | None
    tokenize_chinese_chars: bool
    #: Settings taken from BertTokenizer's defaults because tokenizer_config.json does not set them.
    defaulted: tuple[str, ...]

    def describe(self) -> str:
        accents = self.do_lower_case if self.strip_accents is None else self.strip_accents
        parts = [
            "lower-casing" if self.do_lower_case else "no lower-casing",
            "accent stripping" if accents else "accents kept",
            "CJK characters split" if self.tokenize_chinese_chars else "CJK characters not split",
        ]
        return "BertNormalizer: " + ", ".join(parts)


def wordpiece_settings(model: TokenizerModel) -> WordPieceSettings | None:
    """The normalizer settings of a vocab.txt (WordPiece) model: tokenizer_config.json's, else BERT's defaults."""
    a = model.artifacts
    if a.vocab_txt is None or model.base.artifact != a.vocab_txt.name:
        return None
    given = a.tokenizer_config.settings if a.tokenizer_config is not None else {}
    values = {k: given.get(k, v) for k, v in BERT_DEFAULTS.items()}
    defaulted = tuple(k for k in BERT_DEFAULTS if k not in given)
    return WordPieceSettings(
        bool(values["do_lower_case"]),
        values["strip_accents"] if isinstance(values["strip_accents"], bool) else None,
        bool(values["tokenize_chinese_chars"]),
        defaulted,
    )


def slow_special_tokens(model: TokenizerModel) -> list[str]:
    """Special-token strings a loader of the slow vocabulary files (vocab.txt, vocab.json) registers:
    tokenizer_config.json's named and additional special tokens and its special added tokens; for a
    vocab.txt without tokenizer_config.json, BertTokenizer's five defaults. Empty for other models."""
    a = model.artifacts
    slow = [r for r in (a.vocab_txt, a.vocab_json) if r is not None and r.name == model.base.artifact]
    if not slow:
        return []
    cfg = a.tokenizer_config
    if cfg is None:
        return list(BERT_SPECIALS) if slow[0] is a.vocab_txt else []
    named = [t.content for t in cfg.added_tokens_decoder if t.special]
    named += [t.content for t in cfg.special.values()] + [t.content for t in cfg.additional_special_tokens]
    return list(dict.fromkeys(named))


def decoder_chain(model: TokenizerModel) -> DecoderChain | None:
    """The decoder of the artifact holding the base vocabulary; None for rank files (bytes concatenate)."""
    a = model.artifacts
    for record in (a.tokenizer_json, a.vocab_json, a.vocab_txt, getattr(a, "sentencepiece", None)):
        if record is not None and record.name == model.base.artifact:
            return getattr(record, "decoder", None)
    return None


class UnmappedId(KeyError):
    """An id the files profile maps to no token."""


def _unmapped(token_id: int) -> UnmappedId:
    return UnmappedId(f"no entry found for key {token_id} (a files-only loader maps no token to it)")


class TokenText:
    """Spell ids as the decoder sees them and decode them with the model's decoder chain."""

    def __init__(self, model: TokenizerModel) -> None:
        self.model = model
        self.table = model.files
        self.chain = decoder_chain(model)
        self._spelled: dict[int, str | bytes | None] = {}

    @cached_property
    def _flat(self) -> tuple[dict[int, bytes], frozenset[int]]:
        return self.table.flat

    @cached_property
    def _base_vocab(self) -> Mapping[int, str] | None:
        a = self.model.artifacts
        for record in (a.tokenizer_json, a.vocab_json, a.vocab_txt, getattr(a, "sentencepiece", None)):
            if record is not None and record.name == self.model.base.artifact:
                vocab = getattr(record, "vocab", None)
                return vocab if isinstance(vocab, Mapping) else None
        return None

    @property
    def describe(self) -> str:
        return "token bytes concatenated (rank file: no decoder)" if self.chain is None else self.chain.describe()

    @cached_property
    def special_ids(self) -> frozenset[int]:
        """Ids skip_special_tokens drops: the special layers', plus the slow files' named special tokens
        (BERT's ``[UNK]`` is a plain vocab.txt line, yet BertTokenizer and tokenizers drop it)."""
        named = slow_special_tokens(self.model)
        if not named:
            return self._flat[1]
        vocab = self._base_vocab or {}
        wanted = set(named)
        return self._flat[1] | frozenset(i for i, t in vocab.items() if t in wanted)

    def is_special(self, token_id: int) -> bool:
        return token_id in self.special_ids

    def spelling(self, token_id: int) -> str | bytes | None:
        """The token as the decoder receives it (None: the files profile maps nothing to the id)."""
        try:
            return self._spelled[token_id]
        except KeyError:
            pass
        found = self.table.lookup(token_id)
        spelled: str | bytes | None
        if found is None:
            spelled = None
        elif self.chain is None:
            spelled = found.token
        elif found.layer is self.model.base and self._base_vocab is not None and token_id in self._base_vocab:
            spelled = self._base_vocab[token_id]
        else:  # an added token: its content
            spelled = found.token.decode("utf-8", "replace")
        self._spelled[token_id] = spelled
        return spelled

    def mapped_spelling(self, token_id: int) -> str | bytes:
        """:meth:`spelling`, raising :class:`UnmappedId` where the files map nothing (a strict gateway)."""
        spelled = self.spelling(token_id)
        if spelled is None:
            raise _unmapped(token_id)
        return spelled

    def _kept(self, ids: Sequence[int], skip_special_tokens: bool) -> list[str | bytes]:
        special = self.special_ids
        out: list[str | bytes] = []
        for i in ids:
            spelled = self.spelling(i)  # inline: the per-token path of non-concatenating chains
            if spelled is None:
                raise _unmapped(i)
            if not (skip_special_tokens and i in special):
                out.append(spelled)
        return out

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        """The text of ``ids``; an id the files do not map raises :class:`UnmappedId` (a strict gateway)."""
        if self.chain is not None and self.chain.not_concatenative is None:
            data = self._concat(ids, skip_special_tokens)
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError:
                if self._byte_level_only:
                    return data.decode("utf-8", "replace")  # exactly ByteLevel's lossy conversion
                # an invalid ByteFallback run is one U+FFFD per byte: the exact chain says so
        kept = self._kept(ids, skip_special_tokens)
        if self.chain is None:
            return b"".join(kept).decode("utf-8", "replace")  # type: ignore[arg-type]  # no chain: rank files spell bytes
        return decode(self.chain, kept)  # type: ignore[arg-type]  # a chain spells str

    @cached_property
    def _byte_level_only(self) -> bool:
        return self.chain is not None and [s.kind for s in self.chain.steps] == ["ByteLevel"]

    @cached_property
    def _pieces(self) -> tuple[PieceStream, dict[int, bytes]]:
        """A PieceStream (for its per-token steps and start strips) and a cache id -> non-first bytes."""
        assert self.chain is not None
        return PieceStream(self.chain), {}

    def cached_piece(self, token_id: int) -> bytes:
        """What a mapped id adds when it is not the first token, cached (concatenating chains only)."""
        stream, cache = self._pieces
        piece = cache.get(token_id)
        if piece is None:
            spelled = self.mapped_spelling(token_id)
            piece = cache[token_id] = spelled if isinstance(spelled, bytes) else stream._token(spelled, False)
        return piece

    def _concat(self, ids: Sequence[int], skip_special_tokens: bool) -> bytes:
        """The bytes of a concatenating chain's text: cached per-id pieces, the first token's own rules,
        the start strips applied to the whole text. Unmapped ids raise :class:`UnmappedId`."""
        stream, cache = self._pieces
        special = self.special_ids
        parts: list[bytes] = []
        first = True
        for i in ids:
            if skip_special_tokens and i in special:
                self.mapped_spelling(i)  # a skipped id must still be mapped
                continue
            if first:
                spelled = self.mapped_spelling(i)
                parts.append(spelled if isinstance(spelled, bytes) else stream._token(spelled, True))
                first = False
                continue
            piece = cache.get(i)  # inline hit: the hot path of long decodes
            parts.append(piece if piece is not None else self.cached_piece(i))
        data = b"".join(parts)
        for content, count in stream.lead:
            while count and content and data.startswith(content):
                data = data[len(content) :]
                count -= 1
        return data

    @property
    def not_concatenative(self) -> str | None:
        """Why per-token bytes do not concatenate to the text (None when they do: rank files, ByteLevel,
        Metaspace, Replace + ByteFallback + Fuse + Strip)."""
        return None if self.chain is None else self.chain.not_concatenative

    def piece_stream(self) -> PieceStream | None:
        """A fresh per-token byte stream, or None when the chain does not concatenate."""
        if self.chain is None:
            return PieceStream(DecoderChain((), "rank file"))
        return PieceStream(self.chain) if self.chain.not_concatenative is None else None

    def piece(self, token_id: int) -> bytes | None:
        """What the token adds to a text when it is not the first token (None when unmapped)."""
        spelled = self.spelling(token_id)
        if spelled is None:
            return None
        return spelled if isinstance(spelled, bytes) else self.content_piece(spelled)

    def content_piece(self, content: str) -> bytes:
        """What an added token with this content adds to a text (not first): tokenizers passes added
        tokens through the decoder too, so Gemma's added ``▁▁`` is two spaces, like its vocabulary entry.
        Remembered per content (TA102 asks about each added token up to three times)."""
        found = self._content_pieces.get(content)
        if found is None:
            found = self._content_pieces[content] = self._content_piece(content)
        return found

    @cached_property
    def _content_pieces(self) -> dict[str, bytes]:
        return {}

    def _content_piece(self, content: str) -> bytes:
        if self.chain is None:
            return content.encode("utf-8")
        if self.chain.not_concatenative is None:
            stream = PieceStream(self.chain)
            stream.index = 1
            return stream.piece(content)
        return decode(self.chain, ["", content]).encode("utf-8")

    def claim_bytes(self, layer: Layer, token: bytes) -> bytes:
        """A layer's token in the decoder's terms, so that claims from different layers compare:
        the base layer holds decoded bytes already, added layers hold the token's content."""
        if layer is self.model.base or self.chain is None:
            return token
        return self.content_piece(token.decode("utf-8", "replace"))

    def pieces(self, ids: Sequence[int], skip_special_tokens: bool = False) -> list[bytes | None]:
        """What each id adds to the text of the whole sequence (b"" for a skipped special token,
        None for an unmapped id). Joined, they give :meth:`decode`'s text when the chain concatenates."""
        special = self.special_ids
        stream = self.piece_stream()
        out: list[bytes | None] = []
        first = True
        for i in ids:
            spelled = self.spelling(i)
            if spelled is None:
                out.append(None)
            elif skip_special_tokens and i in special:
                out.append(b"")
            elif stream is not None:
                out.append(stream.piece(spelled))
            else:
                # no stream: the chain exists (rank files get one) and spells str
                pair = [spelled] if first else ["", spelled]
                out.append(decode(self.chain, pair).encode("utf-8"))  # type: ignore[arg-type]  # a str chain here
            if spelled is not None and not (skip_special_tokens and i in special):
                first = False
        return out
