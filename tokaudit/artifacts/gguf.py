"""The tokenizer inside a GGUF file (llama.cpp, Ollama, LM Studio), as its keys say it: tokens, types, scores,
merges, special ids, flags, chat templates and the embedding rows, from what the bounded reader
(:mod:`tokaudit.artifacts.gguf_reader`) found; and which GGUF of a directory (a split model's first shard) is the
model's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokaudit.artifacts.gguf_reader import GGUFFile, GGUFValue, TensorInfo, read_gguf
from tokaudit.records import Provenance
from tokaudit.errors import InputError

#: tokenizer.ggml.token_type values (llama.h llama_token_type).
TOKEN_TYPES = {0: "UNDEFINED", 1: "NORMAL", 2: "UNKNOWN", 3: "CONTROL", 4: "USER_DEFINED", 5: "UNUSED", 6: "BYTE"}
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

#: special-id keys (``tokenizer.ggml.<key>``) -> the record's name; the deprecated FIM names map to fim_*.
SPECIAL_ID_KEYS = {
    "bos_token_id": "bos",
    "eos_token_id": "eos",
    "eot_token_id": "eot",
    "eom_token_id": "eom",
    "unknown_token_id": "unk",
    "seperator_token_id": "sep",
    "padding_token_id": "pad",
    "mask_token_id": "mask",
    "cls_token_id": "cls",
    "fim_pre_token_id": "fim_pre",
    "fim_suf_token_id": "fim_suf",
    "fim_mid_token_id": "fim_mid",
    "fim_pad_token_id": "fim_pad",
    "fim_rep_token_id": "fim_rep",
    "fim_sep_token_id": "fim_sep",
    "prefix_token_id": "fim_pre",
    "suffix_token_id": "fim_suf",
    "middle_token_id": "fim_mid",
}
FLAG_KEYS = {
    "add_bos_token": "add_bos",
    "add_eos_token": "add_eos",
    "add_sep_token": "add_sep",
    "add_space_prefix": "add_space_prefix",
    "remove_extra_whitespaces": "remove_extra_whitespaces",
}

#: A split model's shards (``model-00001-of-00003.gguf``): the first holds the metadata.
_SHARD = re.compile(r"^(?P<stem>.*)-(?P<index>\d{5})-of-(?P<count>\d{5})\.gguf$")
#: At most this many names are looked at for a GGUF in a target directory.
MAX_GGUF_SCAN = 10_000


@dataclass(frozen=True)
class GGUFTokenizer:
    """The tokenizer a GGUF file carries, as the keys say it (llama.cpp's load-time defaults and
    overrides are applied elsewhere: :mod:`tokaudit.model.llamacpp_vocab`)."""

    path: Path
    version: int
    byte_order: str
    arch: str | None
    model: str | None
    pre: str | None
    tokens: tuple[bytes, ...]
    types: tuple[int, ...] | None
    scores: Sequence[float] | None
    merges: tuple[bytes, ...] | None
    #: Only the ids the file sets, raw (possibly out of range): bos, eos, eot, eom, unk, sep, pad, mask, cls, fim_*.
    special_ids: Mapping[str, int]
    #: Only the flags the file sets: add_bos, add_eos, add_sep, add_space_prefix, remove_extra_whitespaces.
    flags: Mapping[str, bool]
    #: "default" -> tokenizer.chat_template; NAME -> tokenizer.chat_template.NAME.
    chat_templates: Mapping[str, str]
    #: tokenizer.ggml.eos_token_ids, which Ollama writes and its engine stops on (llama.cpp ignores it).
    eos_token_ids: tuple[int, ...] | None
    vocab_size: int | None
    embedding_rows: int | None
    output_rows: int | None
    key_offsets: Mapping[str, int] = field(default_factory=dict)
    #: Split models: how many shards the name says, and the first shard read (this file).
    shard_count: int = 1
    bytes_read: int = 0
    #: tokenizer.ggml.precompiled_charsmap (a T5/UGM vocabulary's SentencePiece normalizer), raw.
    precompiled_charsmap: bytes | None = None

    @property
    def name(self) -> str:
        return self.path.name

    def source(self, key: str) -> Provenance:
        """Where a key of this file is, for findings."""
        return Provenance(self.path.name, key=key)

    def type_name(self, token_id: int) -> str:
        if self.types is None:
            return "NORMAL"
        return TOKEN_TYPES.get(self.types[token_id], f"UNDEFINED({self.types[token_id]})")


def first_shard(path: Path) -> tuple[Path, int]:
    """The shard holding the metadata of a split model (``NAME-00001-of-0000N.gguf``) and the count
    (the shard itself and 1 for a file not named like a shard)."""
    m = _SHARD.match(path.name)
    if m is None:
        return path, 1
    return path.with_name(f"{m['stem']}-00001-of-{m['count']}.gguf"), int(m["count"])


def gguf_in(root: Path) -> tuple[Path | None, str | None]:
    """The one GGUF model in a directory (a split model's first shard), or None and, when there are
    several models, why none was picked."""
    try:
        names = sorted(
            p.name for _, p in zip(range(MAX_GGUF_SCAN), root.iterdir()) if p.name.endswith(".gguf") and p.is_file()
        )
    except OSError:
        return None, None
    if not names:
        return None, None
    models = {(m["stem"] if (m := _SHARD.match(n)) else n) for n in names}
    if len(models) > 1:
        listed = ", ".join(sorted(models)[:3]) + (", …" if len(models) > 3 else "")
        return None, f"{len(models)} GGUF models in {root} ({listed})"
    first = first_shard(root / names[0])[0]
    if not first.is_file():
        return None, f"{first.name} is missing: the first shard of a split GGUF holds its metadata"
    return first, None


def _expect(values: Mapping[str, GGUFValue], key: str, types: tuple[str, ...], path: Path) -> Any:
    v = values.get(key)
    if v is None:
        return None
    if v.type not in types:
        raise InputError(
            f"at byte {v.offset}: {v.type} where GGUF stores {' or '.join(types)}", file=str(path), key=key
        )
    return v.value


_INTS = ("UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "UINT64", "INT64")


def _text_value(values: Mapping[str, GGUFValue], key: str, path: Path) -> str | None:
    raw = _expect(values, key, ("STRING",), path)
    if raw is None:
        return None
    try:
        return str(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(
            f"at byte {values[key].offset}: not UTF-8 (byte {exc.start} of the value)", file=str(path), key=key
        ) from None


def _rows(tensors: Sequence[TensorInfo], name: str) -> int | None:
    for t in tensors:
        if t.name == name:
            return t.dims[1] if len(t.dims) >= 2 else t.dims[0] if t.dims else None
    return None


def tokenizer_from(gguf: GGUFFile, shard_count: int = 1) -> GGUFTokenizer:
    """The tokenizer record of a read GGUF file; a key of the wrong type is one clear error."""
    v, path = gguf.values, gguf.path
    tokens = _expect(v, "tokenizer.ggml.tokens", ("ARRAY[STRING]",), path)
    if tokens is None:
        raise InputError(
            "no tokenizer in this GGUF file (llama.cpp: cannot find tokenizer vocab in model file)",
            file=str(path),
            key="tokenizer.ggml.tokens",
        )
    n = len(tokens)
    types = _expect(v, "tokenizer.ggml.token_type", tuple(f"ARRAY[{t}]" for t in _INTS), path)
    scores = _expect(v, "tokenizer.ggml.scores", ("ARRAY[FLOAT32]", "ARRAY[INT32]", "ARRAY[FLOAT64]"), path)
    for key, arr in (("tokenizer.ggml.token_type", types), ("tokenizer.ggml.scores", scores)):
        if arr is not None and len(arr) < n:
            raise InputError(
                f"at byte {v[key].offset}: {len(arr)} entries for {n} tokens (llama.cpp reads one per token)",
                file=str(path),
                key=key,
            )
    merges = _expect(v, "tokenizer.ggml.merges", ("ARRAY[STRING]",), path)
    special: dict[str, int] = {}
    for suffix, name in SPECIAL_ID_KEYS.items():
        value = _expect(v, f"tokenizer.ggml.{suffix}", _INTS, path)
        if value is not None and name not in special:
            special[name] = int(value)
    flags = {
        name: bool(value)
        for suffix, name in FLAG_KEYS.items()
        if (value := _expect(v, f"tokenizer.ggml.{suffix}", ("BOOL",), path)) is not None
    }
    templates: dict[str, str] = {}
    default = _text_value(v, "tokenizer.chat_template", path)
    if default is not None:
        templates["default"] = default
    for key in v:
        if key.startswith("tokenizer.chat_template."):
            templates[key.removeprefix("tokenizer.chat_template.")] = _text_value(v, key, path) or ""
    charsmap = _expect(v, "tokenizer.ggml.precompiled_charsmap", ("ARRAY[UINT8]", "ARRAY[INT8]"), path)
    eos_ids = _expect(v, "tokenizer.ggml.eos_token_ids", tuple(f"ARRAY[{t}]" for t in _INTS), path)
    arch = _text_value(v, "general.architecture", path)
    vocab_size = _expect(v, f"{arch}.vocab_size", _INTS, path) if arch else None
    return GGUFTokenizer(
        path=path,
        version=gguf.version,
        byte_order=gguf.byte_order,
        arch=arch,
        model=_text_value(v, "tokenizer.ggml.model", path),
        pre=_text_value(v, "tokenizer.ggml.pre", path),
        tokens=tokens,
        types=None if types is None else tuple(types[:n]),
        scores=None if scores is None else scores[:n],
        merges=merges,
        special_ids=special,
        flags=flags,
        chat_templates=templates,
        eos_token_ids=None if eos_ids is None else tuple(int(x) for x in eos_ids),
        vocab_size=None if vocab_size is None else int(vocab_size),
        embedding_rows=_rows(gguf.tensors, "token_embd.weight"),
        output_rows=_rows(gguf.tensors, "output.weight"),
        key_offsets={key: value.offset for key, value in v.items()},
        shard_count=shard_count,
        bytes_read=gguf.bytes_read,
        precompiled_charsmap=None if charsmap is None else bytes(charsmap),
    )


def read_gguf_tokenizer(path: Path) -> GGUFTokenizer:
    """The tokenizer of a GGUF file; for a split model, of its first shard (which holds the metadata)."""
    first, count = first_shard(path)
    if first != path and not first.is_file():
        raise InputError(f"{first.name} is missing: the first shard of a split GGUF holds its metadata", file=str(path))
    return tokenizer_from(read_gguf(first), count)
