"""A marker's id as the serving stacks look it up, shared by the case (which cuts the output at the end-of-turn
ids) and the decoder (which finds the parsers' markers by id)."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from tokaudit.checks.common import find_content
from tokaudit.model.tokenizer_model import TokenizerModel


def vocab_lookup(model: TokenizerModel, tokenizer: Any = None) -> Callable[[str], int | None]:
    """A marker's id as the stacks look it up (``vocab.get(marker)``: the token's own spelling, an added token's
    content), or None."""
    to_id = getattr(tokenizer, "token_to_id", None)

    @lru_cache(maxsize=256)
    def id_of(marker: str) -> int | None:
        if to_id is not None:
            found = to_id(marker)
            return found if isinstance(found, int) else None
        hit = find_content(model.files, marker)
        return hit[0] if hit is not None else None

    return id_of
