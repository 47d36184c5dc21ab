"""``tokenizer_config.json`` and ``special_tokens_map.json`` (transformers' tokenizer settings)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokaudit.artifacts.strict_json import expect_int, parse_added_token, read_json_object
from tokaudit.records import AddedToken
from tokaudit.errors import InputError

#: The named special-token fields transformers understands.
SPECIAL_FIELDS = ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token")


@dataclass(frozen=True)
class TokenizerConfig:
    """tokenizer_config.json: added tokens, special tokens, chat template, tokenizer class."""

    path: Path
    added_tokens_decoder: tuple[AddedToken, ...]
    #: bos_token, eos_token, ... -> the token (content and flags); absent or null fields are omitted.
    special: dict[str, AddedToken]
    additional_special_tokens: tuple[AddedToken, ...]
    chat_template: str | None
    tokenizer_class: str | None
    auto_map: dict[str, Any]
    #: WordPiece normalizer settings that are present (do_lower_case, strip_accents, tokenize_chinese_chars).
    settings: dict[str, Any] = field(default_factory=dict)
    #: The file has an ``added_tokens_decoder`` key (even an empty one): transformers then ignores added_tokens.json.
    declares_added_tokens: bool = False
    #: The boolean loader settings present (add_bos_token, add_eos_token, add_prefix_space, legacy).
    loader_flags: dict[str, bool] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.path.name


@dataclass(frozen=True)
class SpecialTokensMap:
    """special_tokens_map.json."""

    path: Path
    special: dict[str, AddedToken]
    additional_special_tokens: tuple[AddedToken, ...]

    @property
    def name(self) -> str:
        return self.path.name


def _special_fields(data: dict[str, Any], path: Path) -> tuple[dict[str, AddedToken], tuple[AddedToken, ...]]:
    special = {
        field: parse_added_token(data[field], path, field, None)
        for field in SPECIAL_FIELDS
        if data.get(field) is not None
    }
    extra = data.get("additional_special_tokens") or []
    if not isinstance(extra, list):
        raise InputError("expected a list", file=str(path), key="additional_special_tokens")
    additional = tuple(
        parse_added_token(item, path, f"additional_special_tokens[{i}]", None) for i, item in enumerate(extra)
    )
    return special, additional


def _chat_template(value: Any, path: Path) -> str | None:
    """A template string, or the ``default`` entry of the list-of-named-templates form."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        named = {
            t.get("name"): t.get("template") for t in value if isinstance(t, dict) and isinstance(t.get("name"), str)
        }
        chosen = named.get("default", next(iter(named.values()), None))
        if chosen is None or isinstance(chosen, str):
            return chosen
    raise InputError("expected a template string or a list of {name, template}", file=str(path), key="chat_template")


def parse_tokenizer_config(path: Path) -> TokenizerConfig:
    data = read_json_object(path)
    raw_decoder = data.get("added_tokens_decoder") or {}
    if not isinstance(raw_decoder, dict):
        raise InputError("expected an object of id -> token", file=str(path), key="added_tokens_decoder")
    added = []
    for key, value in raw_decoder.items():
        if not (key.isascii() and key.isdigit()) or len(key) > 19:
            raise InputError(
                f"id {key!r} is not a non-negative integer", file=str(path), key=f"added_tokens_decoder.{key}"
            )
        token_id = expect_int(int(key), path, f"added_tokens_decoder.{key}")
        added.append(parse_added_token(value, path, f"added_tokens_decoder.{key}", token_id))
    special, additional = _special_fields(data, path)
    tokenizer_class = data.get("tokenizer_class")
    auto_map = data.get("auto_map") or {}
    if not isinstance(auto_map, dict):
        raise InputError("expected an object", file=str(path), key="auto_map")
    return TokenizerConfig(
        path=path,
        added_tokens_decoder=tuple(sorted(added, key=lambda t: t.id or 0)),
        special=special,
        additional_special_tokens=additional,
        chat_template=_chat_template(data.get("chat_template"), path),
        tokenizer_class=tokenizer_class if isinstance(tokenizer_class, str) else None,
        auto_map=auto_map,
        settings=_settings(data, path),
        declares_added_tokens="added_tokens_decoder" in data,
        loader_flags={key: data[key] for key in LOADER_FLAGS if isinstance(data.get(key), bool)},
    )


#: Boolean settings that change what transformers builds (the pipeline a class rebuilds, the BOS/EOS it adds).
LOADER_FLAGS = ("add_bos_token", "add_eos_token", "add_prefix_space", "legacy")
#: WordPiece (BertTokenizer) normalizer settings: name -> the types a value may have.
WORDPIECE_SETTINGS = {"do_lower_case": (bool,), "strip_accents": (bool, type(None)), "tokenize_chinese_chars": (bool,)}


def _settings(data: dict[str, Any], path: Path) -> dict[str, Any]:
    out = {}
    for key, types in WORDPIECE_SETTINGS.items():
        if key in data:
            if not isinstance(data[key], types):
                raise InputError(
                    f"expected {' or '.join('null' if t is type(None) else t.__name__ for t in types)}",
                    file=str(path),
                    key=key,
                )
            out[key] = data[key]
    return out


def parse_special_tokens_map(path: Path) -> SpecialTokensMap:
    data = read_json_object(path)
    special, additional = _special_fields(data, path)
    return SpecialTokensMap(path, special, additional)
