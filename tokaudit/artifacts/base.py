"""Shared pieces of the parsers: provenance, added-token records, safe file reading."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokaudit.errors import InputError

#: Largest id (or vocabulary size) we accept from a file; beyond it the value is nonsense and
#: only ranges (never per-id structures) could represent it anyway.
MAX_ID = 2**63 - 1


@dataclass(frozen=True)
class Provenance:
    """Where a fact came from: a file and, when known, a 1-based line or a JSON key path."""

    file: str
    line: int | None = None
    key: str | None = None

    def __str__(self) -> str:
        if self.line is not None:
            return f"{self.file}:{self.line}"
        if self.key is not None:
            return f"{self.file} ({self.key})"
        return self.file

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"file": self.file}
        if self.line is not None:
            out["line"] = self.line
        if self.key is not None:
            out["key"] = self.key
        return out


@dataclass(frozen=True)
class AddedToken:
    """An added/special token as declared by one file (tokenizer.json, tokenizer_config.json, ...)."""

    id: int | None
    content: str
    special: bool | None
    source: Provenance
    lstrip: bool | None = None
    rstrip: bool | None = None
    normalized: bool | None = None
    single_word: bool | None = None

    def flags(self) -> dict[str, bool | None]:
        return {
            "special": self.special,
            "lstrip": self.lstrip,
            "rstrip": self.rstrip,
            "normalized": self.normalized,
            "single_word": self.single_word,
        }


def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", file=str(path)) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a file", file=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=str(path)) from None


def read_text(path: Path) -> str:
    data = read_bytes(path)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(f"not valid UTF-8 text (byte {exc.start})", file=str(path), line=line) from None


def read_json(path: Path) -> Any:
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", file=str(path), line=exc.lineno) from None
    except RecursionError:
        raise InputError("invalid JSON: nested too deeply", file=str(path)) from None


def read_json_object(path: Path) -> dict[str, Any]:
    data = read_json(path)
    if not isinstance(data, dict):
        raise InputError(f"expected a JSON object, found {type(data).__name__}", file=str(path))
    return data


def expect_int(value: Any, path: Path, key: str, *, minimum: int = 0) -> int:
    """An integer id or size from a JSON file; bools, floats and strings are errors."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"expected an integer, found {json.dumps(value)[:40]}", file=str(path), key=key)
    if value < minimum or value > MAX_ID:
        raise InputError(f"integer {value} out of range", file=str(path), key=key)
    return value


def optional_bool(value: Any, path: Path, key: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise InputError(f"expected true or false, found {json.dumps(value)[:40]}", file=str(path), key=key)


def parse_added_token(value: Any, path: Path, key: str, token_id: int | None) -> AddedToken:
    """An AddedToken given as a plain string or as a dict with ``content`` and flags."""
    source = Provenance(path.name, key=key)
    if isinstance(value, str):
        return AddedToken(token_id, value, None, source)
    if not isinstance(value, dict):
        raise InputError("expected a string or an object with 'content'", file=str(path), key=key)
    content = value.get("content")
    if not isinstance(content, str):
        raise InputError("expected a string 'content'", file=str(path), key=f"{key}.content")
    flags = {
        name: optional_bool(value.get(name), path, f"{key}.{name}")
        for name in ("special", "lstrip", "rstrip", "normalized", "single_word")
    }
    return AddedToken(token_id, content, source=source, **flags)
