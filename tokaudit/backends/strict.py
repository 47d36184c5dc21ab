"""``strict``: decode exactly as a files-only gateway does (smg, tiktoken-rs): any id that the data
files do not map is an error, never silently dropped. Decode only. The text follows the tokenizer's
own decoder chain (:class:`~tokaudit.model.text.TokenText`), so a Metaspace/Strip or WordPiece model
decodes as its library does."""

from __future__ import annotations

from tokaudit.backends.base import UnknownId
from tokaudit.model.text import TokenText, UnmappedId
from tokaudit.model.tokenizer_model import TokenizerModel


class StrictBackend:
    name = "strict"
    can_encode = False

    def __init__(self, model: TokenizerModel) -> None:
        self.text = TokenText(model)

    def encode(self, text: str) -> list[int]:
        raise NotImplementedError("the strict backend only decodes")

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        try:
            return self.text.decode(ids, skip_special_tokens)
        except UnmappedId as exc:
            raise UnknownId(exc.args[0]) from None

    def describe(self) -> str:
        return f"files profile, decoder: {self.text.describe}"

    def versions(self) -> dict[str, str]:
        return {}
