"""``strict``: decode exactly as a files-only gateway does (smg, tiktoken-rs): any id that the data
files do not map is an error, never silently dropped. Decode only."""

from __future__ import annotations

from functools import cached_property

from tokaudit.backends.base import UnknownId
from tokaudit.model.tokenizer_model import TokenizerModel


class StrictBackend:
    name = "strict"
    can_encode = False

    def __init__(self, model: TokenizerModel) -> None:
        self.table = model.files

    @cached_property
    def _flat(self) -> tuple[dict[int, bytes], frozenset[int]]:
        """id -> bytes with the table's precedence (earlier layers win), and the ids whose winning layer is special."""
        tokens: dict[int, bytes] = {}
        special: set[int] = set()
        for layer in reversed(self.table.layers):
            tokens.update(layer.tokens)
            if layer.special:
                special.update(layer.tokens)
            else:
                special.difference_update(layer.tokens)
        return tokens, frozenset(special)

    def encode(self, text: str) -> list[int]:
        raise NotImplementedError("the strict backend only decodes")

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        tokens, special = self._flat
        parts = []
        for i in ids:
            token = tokens.get(i)
            if token is None:
                raise UnknownId(f"no entry found for key {i} (a files-only loader maps no token to it)")
            if not (skip_special_tokens and i in special):
                parts.append(token)
        return b"".join(parts).decode("utf-8", "replace")

    def versions(self) -> dict[str, str]:
        return {}
