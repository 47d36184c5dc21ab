"""Which added tokens transformers registers over a slow vocabulary (vocab.json, tokenizer.model, ranks):
tokenizer_config.json's ``added_tokens_decoder``, or, when it has none, ``added_tokens.json``, each entry special
when its text is one of the named special tokens (transformers 5, ``PreTrainedTokenizerBase._from_pretrained``)."""

from __future__ import annotations

from dataclasses import dataclass

from tokaudit.artifacts.load import Artifacts
from tokaudit.records import AddedToken, Provenance


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
        AddedToken(
            token_id,
            text,
            text in special,
            Provenance(at.name, key=text),
            lstrip=False,
            rstrip=False,
            normalized=text not in special,
        )
        for text, token_id in at.tokens
    )
    return ConfigAddedTokens(tokens, "added_tokens.json", at.name)
