"""``added_tokens.json`` (transformers' legacy token -> id map of added tokens). Which added tokens a loader
registers from it is :mod:`tokaudit.model.config_added`.

transformers 5 (``PreTrainedTokenizerBase._from_pretrained``) reads added_tokens.json only when
tokenizer_config.json has no ``added_tokens_decoder``: each entry becomes an added token, special when
its text is one of the named special tokens (tokenizer_config.json, then special_tokens_map.json, and
their additional special tokens), normalized when it is not special. Whisper's Hugging Face form
defines ``<|endoftext|>`` = 50257 there and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tokaudit.artifacts.strict_json import expect_int, read_json_object
from tokaudit.errors import InputError

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
