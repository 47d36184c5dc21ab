"""The records every layer shares: where a fact came from, and an added token as one file declares it.

The ground floor: the artifact parsers build them, the model, checks, commands and report read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Provenance:
    """Where a fact came from: a file and, when known, a 1-based line (and column) or a JSON key path."""

    file: str
    line: int | None = None
    key: str | None = None
    #: 1-based, in characters; set with the line of a JSON key (see :mod:`tokaudit.artifacts.json_positions`).
    column: int | None = None

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
        if self.column is not None:
            out["column"] = self.column
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
