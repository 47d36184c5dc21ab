"""What the id tables say about one id: its token bytes, which profile and artifact map it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tokaudit.artifacts.token_bytes import is_partial_utf8
from tokaudit.model.id_table import Lookup
from tokaudit.model.tokenizer_model import FILES, TokenizerModel


@dataclass(frozen=True)
class TokenInfo:
    id: int
    #: The winning lookup per profile (None where the profile maps nothing).
    lookups: dict[str, Lookup | None]

    @property
    def first(self) -> Lookup | None:
        """The files profile's token, else the first other profile's."""
        return next((lk for lk in self.lookups.values() if lk is not None), None)

    @property
    def token(self) -> bytes | None:
        lk = self.first
        return None if lk is None else lk.token

    @property
    def special(self) -> bool:
        lk = self.first
        return bool(lk and lk.layer.special)


def token_info(model: TokenizerModel, token_id: int) -> TokenInfo:
    order = [FILES] + [name for name in model.profiles if name != FILES]
    return TokenInfo(token_id, {name: model.profiles[name].lookup(token_id) for name in order})


def token_json(info: TokenInfo, piece: bytes | None = None) -> dict[str, Any]:
    """One token for decode/encode output: id, bytes, text (None when no profile maps it). ``piece``:
    what the token adds to the text through the tokenizer's decoder (:class:`~tokaudit.model.text.TokenText`),
    shown instead of the raw table bytes when the files profile maps the id."""
    token = info.token if piece is None else piece
    return {
        "id": info.id,
        "mapped": token is not None,
        "profile": next((name for name, lk in info.lookups.items() if lk is not None), None),
        "bytes_hex": None if token is None else token.hex(),
        "text": None if token is None else token.decode("utf-8", "replace"),
        "partial_utf8": token is not None and is_partial_utf8(token),
        "special": info.special,
    }


def in_declared_range(model: TokenizerModel, token_id: int) -> bool:
    return 0 <= token_id < model.checked_size
