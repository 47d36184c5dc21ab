"""Mistral ``tekken.json``: byte-level ranks plus a block of special tokens in front of them.

Model id of vocabulary rank ``r`` is ``r + default_num_special_tokens``; only the first
``default_vocab_size - default_num_special_tokens`` ranks are used. The special block is filled as
mistral-common's ``Tekkenizer`` fills it (1.13.1, ``tokens/tokenizers/tekken.py``): the file's
``special_tokens`` list, or for files of version v7 and older without one (tekken v3, Mistral NeMo's
``tekken_240718``) the deprecated built-in list; then ``<SPECIAL_{i}>`` fillers up to
``default_num_special_tokens``.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from pathlib import Path

from tokaudit.artifacts.strict_json import expect_int, read_json_object
from tokaudit.records import AddedToken, Provenance
from tokaudit.errors import InputError

#: mistral-common ``Tekkenizer.DEPRECATED_SPECIAL_TOKENS``: the block of a file without ``special_tokens``.
DEPRECATED_SPECIAL_TOKENS = (
    "<unk>",
    "<s>",
    "</s>",
    "[INST]",
    "[/INST]",
    "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "[TOOL_CALLS]",
    "[IMG]",
    "<pad>",
    "[IMG_BREAK]",
    "[IMG_END]",
    "[PREFIX]",
    "[MIDDLE]",
    "[SUFFIX]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
)
#: mistral-common ``Tekkenizer.SPECIAL_TOKEN_TEMPLATE``: fillers up to default_num_special_tokens.
SPECIAL_TOKEN_TEMPLATE = "<SPECIAL_{}>"
#: Versions for which mistral-common falls back to the deprecated list (newer ones refuse the file).
_DEPRECATED_LIST_VERSIONS = frozenset({None, "v1", "v2", "v3", "v7"})
#: Above this, the filler block is not materialised (a hostile default_num_special_tokens).
_MAX_SPECIAL = 1_000_000


@dataclass(frozen=True)
class Tekken:
    path: Path
    #: model id -> token bytes for the vocabulary part (already shifted by the special block).
    by_id: dict[int, bytes]
    specials: tuple[AddedToken, ...]
    pattern: str | None
    default_vocab_size: int | None
    num_special: int
    #: config.version ("v3", "v7", ...), None when absent.
    version: str | None = None
    #: How the special block was filled, e.g. "special_tokens list (20) + <SPECIAL_n> fillers".
    special_rule: str = ""

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
    version = config.get("version") if isinstance(config.get("version"), str) else None
    raw_specials = data.get("special_tokens")
    if raw_specials is not None and not isinstance(raw_specials, list):
        raise InputError("expected a list", file=str(path), key="special_tokens")
    for i, item in enumerate(raw_specials or []):
        key = f"special_tokens[{i}]"
        if not isinstance(item, dict) or not isinstance(item.get("token_str"), str):
            raise InputError("expected an object with 'token_str'", file=str(path), key=key)
        rank = expect_int(item.get("rank", i), path, f"{key}.rank")
        specials.append(
            AddedToken(rank, item["token_str"], bool(item.get("is_control", True)), Provenance(path.name, key=key))
        )
    rule = f"special_tokens list ({len(specials)})"
    if raw_specials is None:
        if version in _DEPRECATED_LIST_VERSIONS:
            key = "(no special_tokens: mistral-common's deprecated list)"
            specials = [
                AddedToken(i, t, True, Provenance(path.name, key=key)) for i, t in enumerate(DEPRECATED_SPECIAL_TOKENS)
            ]
            rule = f"no special_tokens list, version {version}: mistral-common's deprecated list ({len(specials)})"
        else:
            rule = f"no special_tokens list: mistral-common refuses version {version} files without one"
    if len(specials) < num_special and (raw_specials is not None or version in _DEPRECATED_LIST_VERSIONS):
        filler_key = "config.default_num_special_tokens"
        start = len(specials)
        specials += [
            AddedToken(i, SPECIAL_TOKEN_TEMPLATE.format(i), True, Provenance(path.name, key=filler_key))
            for i in range(start, min(num_special, _MAX_SPECIAL))
        ]
        rule += f" + fillers {SPECIAL_TOKEN_TEMPLATE.format(start)}..{SPECIAL_TOKEN_TEMPLATE.format(num_special - 1)}"
    pattern = config.get("pattern")
    return Tekken(
        path,
        by_id,
        tuple(specials),
        pattern if isinstance(pattern, str) else None,
        vocab_size,
        num_special,
        version,
        rule,
    )
