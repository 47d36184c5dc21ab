"""HF ``tokenizer.json``: the model vocabulary (BPE, WordPiece, WordLevel, Unigram) and added tokens."""

from __future__ import annotations

import operator
from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from tokaudit.artifacts.safe_files import read_bytes
from tokaudit.artifacts.strict_json import MAX_ID, expect_int, json_object, parse_added_token
from tokaudit.records import AddedToken, Provenance
from tokaudit.artifacts.decoder_chain import DecoderChain, parse_decoder
from tokaudit.artifacts.token_bytes import Scheme, TokenBytes, token_bytes
from tokaudit.errors import InputError

#: GPT-2's pre-tokenizer regex, used by ``ByteLevel(use_regex=True)``.
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


class DenseVocab(Mapping[int, str]):
    """id -> token for a vocabulary whose ids are exactly 0 .. n-1 (every real tokenizer.json: a BPE vocabulary
    written in id order, a Unigram list): the tokens in a list, read like the dict it stands for. Building that
    dict by inverting the file's token -> id object cost ~25 ms of a Llama 3 scan."""

    __slots__ = ("_tokens",)

    def __init__(self, tokens: list[str]) -> None:
        self._tokens = tokens

    def __getitem__(self, token_id: int) -> str:
        if isinstance(token_id, int) and 0 <= token_id < len(self._tokens):
            return self._tokens[token_id]
        raise KeyError(token_id)

    def get(self, token_id: int, default: Any = None) -> Any:
        if isinstance(token_id, int) and 0 <= token_id < len(self._tokens):
            return self._tokens[token_id]
        return default

    def __contains__(self, token_id: object) -> bool:
        return isinstance(token_id, int) and 0 <= token_id < len(self._tokens)

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self._tokens)))

    def __len__(self) -> int:
        return len(self._tokens)

    def keys(self) -> KeysView[int]:
        return _DenseKeys(self)

    def values(self) -> ValuesView[str]:
        return _DenseValues(self)

    def items(self) -> ItemsView[int, str]:
        return _DenseItems(self)

    def __repr__(self) -> str:
        return f"DenseVocab({len(self._tokens)} tokens)"


class _DenseKeys(KeysView[int]):
    """The ids of a :class:`DenseVocab`, iterated as the range they are (the mixin's generator costs ~15 ms on
    128k ids)."""

    _mapping: DenseVocab

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self._mapping)))


class _DenseValues(ValuesView[str]):
    """The tokens of a :class:`DenseVocab` in id order, iterated as the list they are."""

    _mapping: DenseVocab

    def __iter__(self) -> Iterator[str]:
        return iter(self._mapping._tokens)

    def __reversed__(self) -> Iterator[str]:
        return reversed(self._mapping._tokens)


class _DenseItems(ItemsView[int, str]):
    """``(id, token)`` of a :class:`DenseVocab` in id order, without a lookup per id."""

    _mapping: DenseVocab

    def __iter__(self) -> Iterator[tuple[int, str]]:
        return enumerate(self._mapping._tokens)


@dataclass(frozen=True)
class TokenizerJson:
    path: Path
    model_type: str
    #: id -> token string as spelled in the vocabulary (a :class:`DenseVocab` when the ids are 0 .. n-1).
    vocab: Mapping[int, str]
    added_tokens: tuple[AddedToken, ...]
    scheme: Scheme
    #: Split regexes of the pre-tokenizer, in order (ByteLevel's implicit GPT-2 regex included).
    patterns: tuple[str, ...]
    byte_fallback: bool
    #: The ``decoder`` chain: how token strings (added tokens included) become text.
    decoder: DecoderChain
    #: ``(id, token, other_token)`` where two vocabulary strings claim one id.
    duplicate_ids: tuple[tuple[int, str, str], ...]
    #: Components as raw JSON (kept for backends that rebuild the tokenizer).
    raw: dict[str, Any]
    #: The file as read (for :attr:`digest`).
    _data: bytes = field(repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.path.name

    def source(self, token_id: int) -> Provenance:
        return Provenance(self.path.name, key=f"model.vocab[{token_id}]")

    def token_bytes(self, token_id: int) -> bytes | None:
        token = self.vocab.get(token_id)
        return None if token is None else token_bytes(token, self.scheme)

    @cached_property
    def digest(self) -> str:
        """A content hash of the file as read: results computed from it are kept under it in the result cache."""
        from tokaudit.result_cache import digest

        return digest(self._data)

    @cached_property
    def by_id(self) -> TokenBytes:
        """id -> token bytes for the whole vocabulary (the id tables and TA303 share it), built when first
        needed whole."""
        return TokenBytes(self.vocab, self.scheme)

    @cached_property
    def first_id_by_content(self) -> dict[str, int]:
        """Token string -> the lowest id spelling it (what ``tokenizers`` resolves an added token's content to)."""
        raw_vocab = self.raw["model"].get("vocab") if isinstance(self.raw.get("model"), dict) else None
        if isinstance(raw_vocab, dict) and self.model_type != "Unigram" and len(raw_vocab) == len(self.vocab):
            return raw_vocab  # token -> id, and vocab is its exact inverse: each token has one id
        ids = list(self.vocab)
        if ids == sorted(ids):  # the usual order (sorting a sorted list is one pass): the lowest id is written last
            return dict(zip(reversed(self.vocab.values()), reversed(ids)))  # type: ignore[call-overload]  # dict views are reversible (3.8+); typeshed's ValuesView is not
        out: dict[str, int] = {}
        for i, token in sorted(self.vocab.items()):
            out.setdefault(token, i)
        return out


def _types(component: Any) -> list[dict[str, Any]]:
    """Flatten a (possibly Sequence) pre_tokenizer/decoder/normalizer into its parts."""
    if not isinstance(component, dict):
        return []
    parts = component.get("pretokenizers") or component.get("decoders") or component.get("normalizers")
    if component.get("type") == "Sequence" and isinstance(parts, list):
        return [p for sub in parts for p in _types(sub)]
    return [component]


def _patterns(pre_tokenizer: Any) -> tuple[str, ...]:
    out: list[str] = []
    for part in _types(pre_tokenizer):
        if part.get("type") == "Split" and isinstance(part.get("pattern"), dict):
            pat = part["pattern"].get("Regex")
            if pat is None and isinstance(part["pattern"].get("String"), str):
                import re

                pat = re.escape(part["pattern"]["String"])
            if isinstance(pat, str):
                out.append(pat)
        elif part.get("type") == "ByteLevel" and part.get("use_regex", True):
            out.append(GPT2_PATTERN)
    return tuple(out)


def _scheme(data: dict[str, Any], model_type: str) -> Scheme:
    kinds = {p.get("type") for p in _types(data.get("pre_tokenizer")) + _types(data.get("decoder"))}
    if "ByteLevel" in kinds:
        return Scheme.BYTE_LEVEL
    if model_type == "WordPiece" or "WordPiece" in kinds:
        return Scheme.WORDPIECE
    if kinds & {"Metaspace", "ByteFallback", "Replace"}:
        return Scheme.METASPACE
    return Scheme.PLAIN


def _inverted(raw_vocab: dict[str, Any]) -> Mapping[int, str]:
    """id -> token in one pass when every id is an in-range integer and no two tokens share one (real files):
    a :class:`DenseVocab` when the ids are 0 .. n-1 in file order (a list of the keys, no dict to build); else
    ``{}`` and the per-entry loop checks them, naming the bad key."""
    ids = raw_vocab.values()
    if not ids or set(map(type, ids)) != {int}:
        return {}
    if all(map(operator.eq, ids, range(len(ids)))):
        return DenseVocab(list(raw_vocab))
    if min(ids) < 0 or max(ids) > MAX_ID:
        return {}
    vocab = dict(zip(ids, raw_vocab))
    return vocab if len(vocab) == len(raw_vocab) else {}


def _checked(raw_vocab: dict[str, Any], path: Path, duplicates: list[tuple[int, str, str]]) -> dict[int, str]:
    """id -> token entry by entry (the first token of an id wins; the others go to ``duplicates``); a key whose
    id is not a non-negative integer is an error naming it."""
    vocab: dict[int, str] = {}
    for token, token_id in raw_vocab.items():
        token_id = expect_int(token_id, path, f"model.vocab.{token}")
        if token_id in vocab:
            duplicates.append((token_id, vocab[token_id], token))
        else:
            vocab[token_id] = token
    return vocab


def parse_tokenizer_json(path: Path) -> TokenizerJson:
    content = read_bytes(path)
    data = json_object(content, path)
    model = data.get("model")
    if not isinstance(model, dict):
        raise InputError("missing 'model' object: not a tokenizers tokenizer.json", file=str(path), key="model")
    model_type = model.get("type")
    raw_vocab = model.get("vocab")
    if model_type is None:  # very old files omit the type; infer it from the vocab's shape
        model_type = "Unigram" if isinstance(raw_vocab, list) else ("BPE" if "merges" in model else "WordLevel")
    vocab: Mapping[int, str] = {}
    duplicates: list[tuple[int, str, str]] = []
    if model_type == "Unigram":
        if not isinstance(raw_vocab, list):
            raise InputError("Unigram vocab must be a list of [piece, score]", file=str(path), key="model.vocab")
        for i, item in enumerate(raw_vocab):
            if not (isinstance(item, list) and item and isinstance(item[0], str)):
                raise InputError("expected [piece, score]", file=str(path), key=f"model.vocab[{i}]")
        vocab = DenseVocab([item[0] for item in raw_vocab])
    elif model_type in ("BPE", "WordPiece", "WordLevel"):
        if not isinstance(raw_vocab, dict):
            raise InputError("vocab must be an object of token -> id", file=str(path), key="model.vocab")
        vocab = _inverted(raw_vocab)
        if not vocab:  # the checks, duplicates and errors in file order
            vocab = _checked(raw_vocab, path, duplicates)
    else:
        raise InputError(f"unknown model type {model_type!r}", file=str(path), key="model.type")

    raw_added = data.get("added_tokens") or []
    if not isinstance(raw_added, list):
        raise InputError("expected a list", file=str(path), key="added_tokens")
    added = []
    for i, item in enumerate(raw_added):
        key = f"added_tokens[{i}]"
        if not isinstance(item, dict):
            raise InputError("expected an object", file=str(path), key=key)
        token_id = expect_int(item.get("id"), path, f"{key}.id")
        added.append(parse_added_token(item, path, key, token_id))

    return TokenizerJson(
        path=path,
        model_type=str(model_type),
        vocab=vocab,
        added_tokens=tuple(added),
        scheme=_scheme(data, str(model_type)),
        patterns=_patterns(data.get("pre_tokenizer")),
        byte_fallback=bool(model.get("byte_fallback")),
        decoder=parse_decoder(data.get("decoder"), f"{path.name} decoder"),
        duplicate_ids=tuple(duplicates),
        raw=data,
        _data=content,
    )
