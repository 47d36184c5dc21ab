"""Mistral ``tekken.json``: byte-level ranks plus a block of special tokens in front of them.

Model id of vocabulary rank ``r`` is ``r + default_num_special_tokens``; only the first
``default_vocab_size - default_num_special_tokens`` ranks are used.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from pathlib import Path

from tokaudit.artifacts.base import AddedToken, Provenance, expect_int, read_json_object
from tokaudit.errors import InputError


@dataclass(frozen=True)
class Tekken:
    path: Path
    #: model id -> token bytes for the vocabulary part (already shifted by the special block).
    by_id: dict[int, bytes]
    specials: tuple[AddedToken, ...]
    pattern: str | None
    default_vocab_size: int | None
    num_special: int

    @property
    def name(self) -> str:
        return self.path.name

    def source(self, token_id: int) -> Provenance:
        return Provenance(self.path.name, key=f"vocab[{token_id - self.num_special}]")


def parse_tekken(path: Path) -> Tekken:
    data = read_json_object(path)
    config = data.get("config")
    if not isinstance(config, dict):
        raise InputError("missing 'config' object: not a tekken.json", file=str(path), key="config")
    raw_vocab = data.get("vocab")
    if not isinstance(raw_vocab, list):
        raise InputError("missing 'vocab' list: not a tekken.json", file=str(path), key="vocab")
    num_special = expect_int(config.get("default_num_special_tokens", 0), path, "config.default_num_special_tokens")
    vocab_size = config.get("default_vocab_size")
    if vocab_size is not None:
        vocab_size = expect_int(vocab_size, path, "config.default_vocab_size")
    inner_limit = len(raw_vocab) if vocab_size is None else max(0, vocab_size - num_special)
    by_id: dict[int, bytes] = {}
    for i, item in enumerate(raw_vocab[:inner_limit]):
        if not isinstance(item, dict) or not isinstance(item.get("token_bytes"), str):
            raise InputError("expected an object with 'token_bytes'", file=str(path), key=f"vocab[{i}]")
        rank = expect_int(item.get("rank", i), path, f"vocab[{i}].rank")
        try:
            by_id[rank + num_special] = base64.b64decode(item["token_bytes"], validate=True)
        except (binascii.Error, ValueError):
            raise InputError("token_bytes is not valid base64", file=str(path), key=f"vocab[{i}].token_bytes") from None
    specials = []
    raw_specials = data.get("special_tokens") or []
    if not isinstance(raw_specials, list):
        raise InputError("expected a list", file=str(path), key="special_tokens")
    for i, item in enumerate(raw_specials):
        key = f"special_tokens[{i}]"
        if not isinstance(item, dict) or not isinstance(item.get("token_str"), str):
            raise InputError("expected an object with 'token_str'", file=str(path), key=key)
        rank = expect_int(item.get("rank", i), path, f"{key}.rank")
        specials.append(AddedToken(rank, item["token_str"], bool(item.get("is_control", True)), Provenance(path.name, key=key)))
    pattern = config.get("pattern")
    return Tekken(path, by_id, tuple(specials), pattern if isinstance(pattern, str) else None, vocab_size, num_special)
