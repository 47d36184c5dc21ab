"""``added_tokens.json`` (transformers' legacy token -> id map of added tokens), and which added tokens a
loader of the files registers besides the vocabulary.

transformers 5 (``PreTrainedTokenizerBase._from_pretrained``) reads added_tokens.json only when
tokenizer_config.json has no ``added_tokens_decoder``: each entry becomes an added token, special when
its text is one of the named special tokens (tokenizer_config.json, then special_tokens_map.json, and
their additional special tokens), normalized when it is not special. Whisper's Hugging Face form
defines ``<|endoftext|>`` = 50257 there and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tokaudit.artifacts.strict_json import expect_int, read_json_object
from tokaudit.records import AddedToken, Provenance
from tokaudit.errors import InputError

if TYPE_CHECKING:
    from tokaudit.artifacts.load import Artifacts

#: The most entries read from one added_tokens.json (real files hold a few hundred at most).
MAX_ADDED_TOKENS = 1 << 20


@dataclass(frozen=True)
class AddedTokensJson:
    """added_tokens.json: token text -> id, in file order (the special flag is decided with the config)."""

    path: Path
    tokens: tuple[tuple[str, int], ...]

    @property
    def name(self) -> str:
        return self.path.name


def parse_added_tokens_json(path: Path) -> AddedTokensJson:
    data = read_json_object(path)
    if len(data) > MAX_ADDED_TOKENS:
        raise InputError(f"{len(data)} entries; the limit is {MAX_ADDED_TOKENS}", file=str(path))
    return AddedTokensJson(path, tuple((text, expect_int(value, path, text)) for text, value in data.items()))


@dataclass(frozen=True)
class ConfigAddedTokens:
    """The added tokens transformers registers over a slow vocabulary (vocab.json, tokenizer.model, ranks)."""

    tokens: tuple[AddedToken, ...]
    #: "added_tokens_decoder" or "added_tokens.json": the rule a layer of them is named by.
    rule: str
    #: The file that holds them.
    artifact: str


def special_names(a: Artifacts) -> set[str]:
    """The texts of the named and additional special tokens of tokenizer_config.json and special_tokens_map.json."""
    names: set[str] = set()
    for record in (a.tokenizer_config, a.special_tokens_map):
        if record is not None:
            names.update(t.content for t in record.special.values())
            names.update(t.content for t in record.additional_special_tokens)
    return names


def config_added_tokens(a: Artifacts) -> ConfigAddedTokens:
    """tokenizer_config.json's added_tokens_decoder; when it has none, added_tokens.json (special by name)."""
    cfg = a.tokenizer_config
    cfg_name = cfg.name if cfg else "tokenizer_config.json"
    if (cfg is not None and cfg.declares_added_tokens) or a.added_tokens_json is None:
        return ConfigAddedTokens(cfg.added_tokens_decoder if cfg else (), "added_tokens_decoder", cfg_name)
    at = a.added_tokens_json
    special = special_names(a)
    tokens = tuple(
        AddedToken(token_id, text, text in special, Provenance(at.name, key=text), lstrip=False, rstrip=False,
                   normalized=text not in special)
        for text, token_id in at.tokens
    )
    return ConfigAddedTokens(tokens, "added_tokens.json", at.name)
