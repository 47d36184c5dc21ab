"""``config.json`` and ``generation_config.json``: declared vocabulary size and bos/eos/pad ids."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokaudit.artifacts.strict_json import expect_int, read_json_object
from tokaudit.records import Provenance
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
class StopSettings:
    """generation_config.json's settings that keep transformers' ``generate`` from sampling given ids (each as the
    file writes it; absent keys are empty / None)."""

    suppress_tokens: tuple[int, ...] = ()
    begin_suppress_tokens: tuple[int, ...] = ()
    bad_words_ids: tuple[tuple[int, ...], ...] = ()
    #: (token sequence, bias) pairs
    sequence_bias: tuple[tuple[tuple[int, ...], float], ...] = ()
    min_new_tokens: int | None = None
    min_length: int | None = None


@dataclass(frozen=True)
class GenerationConfig:
    """generation_config.json: its special ids and the settings that suppress tokens."""

    path: Path
    ids: TokenIds
    stop: StopSettings = field(default_factory=StopSettings)

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


def _sequences(value: Any, path: Path, key: str) -> tuple[tuple[int, ...], ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise InputError("expected a list of id lists", file=str(path), key=key)
    out = []
    for i, seq in enumerate(value):
        if not isinstance(seq, list):
            raise InputError("expected a list of ids", file=str(path), key=f"{key}[{i}]")
        out.append(tuple(expect_int(v, path, f"{key}[{i}][{j}]") for j, v in enumerate(seq)))
    return tuple(out)


def _bias(value: Any, path: Path, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"expected a number, found {json.dumps(value)[:40]}", file=str(path), key=key)
    return float(value)


def _sequence_bias(value: Any, path: Path, key: str) -> tuple[tuple[tuple[int, ...], float], ...]:
    """transformers writes ``sequence_bias`` as ``[[[ids], bias], ...]``; a dict keyed by ``"(1, 2)"`` is read too."""
    if value is None:
        return ()
    if isinstance(value, dict):
        out = []
        for k, bias in value.items():
            ids = re.findall(r"-?\d+", k)
            if not ids or re.sub(r"[\s(),\[\]\d-]", "", k):
                raise InputError(
                    f'expected a key like "(1, 2)", found {json.dumps(k)[:40]}', file=str(path), key=f"{key}.{k}"
                )
            out.append((tuple(expect_int(int(i), path, f"{key}.{k}") for i in ids), _bias(bias, path, f"{key}.{k}")))
        return tuple(out)
    if not isinstance(value, list):
        raise InputError("expected a list of [ids, bias] pairs", file=str(path), key=key)
    out = []
    for i, pair in enumerate(value):
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], list)):
            raise InputError("expected an [ids, bias] pair", file=str(path), key=f"{key}[{i}]")
        token_ids = tuple(expect_int(v, path, f"{key}[{i}][0][{j}]") for j, v in enumerate(pair[0]))
        out.append((token_ids, _bias(pair[1], path, f"{key}[{i}][1]")))
    return tuple(out)


def _count(value: Any, path: Path, key: str) -> int | None:
    return None if value is None else expect_int(value, path, key)


def parse_generation_config(path: Path) -> GenerationConfig:
    data = read_json_object(path)
    stop = StopSettings(
        suppress_tokens=_id_list(data.get("suppress_tokens"), path, "suppress_tokens"),
        begin_suppress_tokens=_id_list(data.get("begin_suppress_tokens"), path, "begin_suppress_tokens"),
        bad_words_ids=_sequences(data.get("bad_words_ids"), path, "bad_words_ids"),
        sequence_bias=_sequence_bias(data.get("sequence_bias"), path, "sequence_bias"),
        min_new_tokens=_count(data.get("min_new_tokens"), path, "min_new_tokens"),
        min_length=_count(data.get("min_length"), path, "min_length"),
    )
    return GenerationConfig(path, _token_ids(data, path), stop)
