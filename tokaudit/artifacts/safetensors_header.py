"""Embedding / lm_head row counts from safetensors *headers* (no tensor data is read)."""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokaudit.artifacts.safe_files import regular_file_error
from tokaudit.artifacts.strict_json import parse_json_text, read_json_object
from tokaudit.records import Provenance
from tokaudit.errors import InputError

_EMBEDDING = re.compile(r"(^|\.)(embed_tokens|wte|word_embeddings|tok_embeddings|embeddings)\.weight$")
_LM_HEAD = re.compile(r"(^|\.)(lm_head|output|embed_out)\.weight$")
_MAX_HEADER = 100 * 1024 * 1024


@dataclass(frozen=True)
class TensorRows:
    """Row count of one tensor, read from the header of the file that holds it."""

    tensor: str
    rows: int
    source: Provenance


@dataclass(frozen=True)
class EmbeddingShapes:
    path: Path  # model.safetensors or the index
    embedding: TensorRows | None
    lm_head: TensorRows | None
    #: Shards named by the index that are not present (header-only checks skipped for them).
    missing_shards: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.path.name


def read_header(path: Path) -> dict[str, Any]:
    problem = regular_file_error(path)  # a FIFO or /proc file would block the read below
    if problem is not None:
        raise problem
    try:
        with path.open("rb") as fh:
            prefix = fh.read(8)
            if len(prefix) < 8:
                raise InputError("too short for a safetensors header", file=str(path))
            (size,) = struct.unpack("<Q", prefix)
            if size > _MAX_HEADER:
                raise InputError(f"header length {size} is implausible: not a safetensors file", file=str(path))
            raw = fh.read(size)
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=str(path)) from None
    if len(raw) < size:
        raise InputError("header truncated", file=str(path))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"header is not UTF-8 (byte {8 + exc.start})", file=str(path)) from None
    header = parse_json_text(text, str(path))  # deep nesting, huge integers, NaN: one clear line
    if not isinstance(header, dict):
        raise InputError("header is not a JSON object", file=str(path))
    return header


def _rows(header: dict[str, Any], name: str, path: Path) -> TensorRows:
    shape = header[name].get("shape") if isinstance(header[name], dict) else None
    if not (isinstance(shape, list) and shape and isinstance(shape[0], int) and not isinstance(shape[0], bool)):
        raise InputError("tensor has no integer shape", file=str(path), key=f"{name}.shape")
    return TensorRows(name, shape[0], Provenance(path.name, key=f"{name}.shape[0]"))


def _pick(names: list[str], pattern: re.Pattern[str]) -> str | None:
    matches = sorted((n for n in names if pattern.search(n)), key=lambda n: (n.count("."), n))
    # prefer the language model's tensor over vision/audio towers
    text = [n for n in matches if not re.search(r"vision|visual|audio|image|mm_projector", n)]
    return next(iter(text or matches), None)


def parse_safetensors(path: Path) -> EmbeddingShapes:
    header = read_header(path)
    names = [n for n in header if n != "__metadata__"]
    emb, head = _pick(names, _EMBEDDING), _pick(names, _LM_HEAD)
    return EmbeddingShapes(
        path,
        _rows(header, emb, path) if emb else None,
        _rows(header, head, path) if head else None,
        (),
    )


def parse_safetensors_index(path: Path) -> EmbeddingShapes:
    data = read_json_object(path)
    weight_map = data.get("weight_map")
    if not isinstance(weight_map, dict):
        raise InputError("missing 'weight_map' object", file=str(path), key="weight_map")
    found: dict[str, TensorRows | None] = {}
    missing: list[str] = []
    for role, pattern in (("embedding", _EMBEDDING), ("lm_head", _LM_HEAD)):
        name = _pick(list(weight_map), pattern)
        found[role] = None
        if name is None:
            continue
        shard_name = weight_map[name]
        if not isinstance(shard_name, str) or "/" in shard_name or "\\" in shard_name:
            raise InputError("expected a shard file name", file=str(path), key=f"weight_map.{name}")
        shard = path.parent / shard_name
        if not shard.is_file():
            missing.append(shard_name)
            continue
        header = read_header(shard)
        if name not in header:
            raise InputError(f"tensor {name!r} named by the index is not in the shard", file=str(shard))
        found[role] = _rows(header, name, shard)
    return EmbeddingShapes(path, found["embedding"], found["lm_head"], tuple(sorted(set(missing))))
