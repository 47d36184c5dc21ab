"""``strict``: decode exactly as a files-only gateway does (smg, tiktoken-rs): any id that the data
files do not map is an error, never silently dropped. Decode only."""

from __future__ import annotations

from tokaudit.backends.base import UnknownId
from tokaudit.model.tokenizer_model import TokenizerModel


class StrictBackend:
    name = "strict"
    can_encode = False

    def __init__(self, model: TokenizerModel) -> None:
        self.table = model.files

    def encode(self, text: str) -> list[int]:
        raise NotImplementedError("the strict backend only decodes")

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        tokens, special = self.table.flat
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
