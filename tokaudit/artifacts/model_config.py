"""``config.json`` and ``generation_config.json``: declared vocabulary size and bos/eos/pad ids."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokaudit.artifacts.base import Provenance, expect_int, read_json_object
from tokaudit.errors import InputError

#: Sub-configs of multimodal / composite models that carry the language model's settings.
NESTED_CONFIGS = ("text_config", "llm_config", "language_config", "thinker_config", "decoder", "text_model")


@dataclass(frozen=True)
class TokenIds:
    """bos/eos/pad ids of one file; each may be an int or a list in the file."""

    bos: tuple[int, ...] = ()
    eos: tuple[int, ...] = ()
    pad: tuple[int, ...] = ()
    #: "eos" -> the key path it was read from.
    keys: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelConfig:
    """config.json: the vocabulary size, special ids, model type."""

    path: Path
    vocab_size: int | None
    vocab_size_key: str | None
    ids: TokenIds
    model_type: str | None
    auto_map: dict[str, Any]

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def vocab_size_source(self) -> Provenance:
        return Provenance(self.path.name, key=self.vocab_size_key)


@dataclass(frozen=True)
class GenerationConfig:
    """generation_config.json: its special ids."""

    path: Path
    ids: TokenIds

    @property
    def name(self) -> str:
        return self.path.name


def _id_list(value: Any, path: Path, key: str) -> tuple[int, ...]:
    if value is None:
        return ()
    if isinstance(value, list):
        return tuple(expect_int(v, path, f"{key}[{i}]") for i, v in enumerate(value))
    return (expect_int(value, path, key),)


def _token_ids(data: dict[str, Any], path: Path, prefix: str = "") -> TokenIds:
    found: dict[str, tuple[int, ...]] = {}
    keys: dict[str, str] = {}
    for name in ("bos", "eos", "pad"):
        key = f"{name}_token_id"
        if data.get(key) is not None:
            found[name] = _id_list(data[key], path, prefix + key)
            keys[name] = prefix + key
    return TokenIds(keys=keys, **found)


def _find_vocab_size(data: dict[str, Any], path: Path) -> tuple[int | None, str | None, dict[str, Any], str]:
    """The first ``vocab_size``: top level, then nested language-model configs (depth 2)."""
    if data.get("vocab_size") is not None:
        return expect_int(data["vocab_size"], path, "vocab_size"), "vocab_size", data, ""
    for name in NESTED_CONFIGS:
        sub = data.get(name)
        if isinstance(sub, dict):
            if sub.get("vocab_size") is not None:
                key = f"{name}.vocab_size"
                return expect_int(sub["vocab_size"], path, key), key, sub, f"{name}."
            for inner in NESTED_CONFIGS:
                deeper = sub.get(inner)
                if isinstance(deeper, dict) and deeper.get("vocab_size") is not None:
                    key = f"{name}.{inner}.vocab_size"
                    return expect_int(deeper["vocab_size"], path, key), key, deeper, f"{name}.{inner}."
    return None, None, data, ""


def parse_model_config(path: Path) -> ModelConfig:
    data = read_json_object(path)
    vocab_size, key, scope, prefix = _find_vocab_size(data, path)
    ids = _token_ids(data, path)
    if scope is not data:  # ids next to the nested vocab_size fill what the top level lacks
        nested = _token_ids(scope, path, prefix)
        ids = TokenIds(
            bos=ids.bos or nested.bos,
            eos=ids.eos or nested.eos,
            pad=ids.pad or nested.pad,
            keys={**nested.keys, **ids.keys},
        )
    auto_map = data.get("auto_map") or {}
    if not isinstance(auto_map, dict):
        raise InputError("expected an object", file=str(path), key="auto_map")
    model_type = data.get("model_type")
    return ModelConfig(path, vocab_size, key, ids, model_type if isinstance(model_type, str) else None, auto_map)


def parse_generation_config(path: Path) -> GenerationConfig:
    return GenerationConfig(path, _token_ids(read_json_object(path), path))
