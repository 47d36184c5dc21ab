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


@dataclass(frozen=True)
class TokenRow:
    """One token of decode/encode output: id, bytes, text (None when no profile maps it), the first profile
    that maps it, whether it is special, and whether a decode that skips special tokens drops it."""

    id: int
    mapped: bool
    profile: str | None
    bytes_hex: str | None
    text: str | None
    partial_utf8: bool
    special: bool
    skipped: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "mapped": self.mapped,
            "profile": self.profile,
            "bytes_hex": self.bytes_hex,
            "text": self.text,
            "partial_utf8": self.partial_utf8,
            "special": self.special,
            "skipped": self.skipped,
        }


def token_row(info: TokenInfo, piece: bytes | None = None, special: bool | None = None, skip: bool = False) -> TokenRow:
    """``info`` as a row. ``piece``: what the token adds to the text through the tokenizer's decoder
    (:class:`~tokaudit.model.text.TokenText`), shown instead of the raw table bytes when the files profile maps
    the id; ``special``: the tokenizer's own flag, which replaces the table's when the files profile maps it;
    ``skip``: the decode skips special tokens (a special token of the files profile is then skipped)."""
    token = info.token if piece is None else piece
    profile = next((name for name, lk in info.lookups.items() if lk is not None), None)
    is_special = special if special is not None and profile == FILES else info.special
    return TokenRow(
        id=info.id,
        mapped=token is not None,
        profile=profile,
        bytes_hex=None if token is None else token.hex(),
        text=None if token is None else token.decode("utf-8", "replace"),
        partial_utf8=token is not None and is_partial_utf8(token),
        special=is_special,
        skipped=skip and is_special and profile == FILES,
    )


def in_declared_range(model: TokenizerModel, token_id: int) -> bool:
    return 0 <= token_id < model.checked_size
