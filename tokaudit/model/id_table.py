"""Id tables: which token each id maps to, and which artifact and loader rule put it there."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from tokaudit.records import Provenance
from tokaudit.ids import IdRanges


@dataclass(frozen=True)
class Layer:
    """One source of ids for a loader, e.g. the ranks of tiktoken.model or added_tokens_decoder."""

    rule: str
    artifact: str
    tokens: Mapping[int, bytes]
    special: bool
    locate: Callable[[int], Provenance] = field(compare=False, repr=False)
    #: The content hash of the file the tokens were parsed from (computed when asked), where one is kept: a
    #: result-cache key for what is computed from the tokens alone.
    digest: Callable[[], str] | None = field(default=None, compare=False, repr=False)

    @cached_property
    def mapped(self) -> IdRanges:
        return IdRanges.from_ids(self.tokens.keys())


@dataclass(frozen=True)
class Lookup:
    """An id, its token, and the layer that mapped it."""

    id: int
    token: bytes
    layer: Layer

    @property
    def source(self) -> Provenance:
        return self.layer.locate(self.id)


@dataclass(frozen=True)
class IdTable:
    """The ids one loader profile sees. Earlier layers win where two claim an id."""

    profile: str
    description: str
    layers: tuple[Layer, ...]

    @cached_property
    def mapped(self) -> IdRanges:
        out = IdRanges()
        for layer in self.layers:
            out = out.union(layer.mapped)
        return out

    @cached_property
    def flat(self) -> tuple[dict[int, bytes], frozenset[int]]:
        """The whole table as one dict id -> bytes (earlier layers win), and the ids whose winning
        layer is special: for hot loops that would otherwise walk the layers per id."""
        tokens: dict[int, bytes] = {}
        special: set[int] = set()
        for layer in reversed(self.layers):
            tokens.update(layer.tokens.items())  # items(): a TokenBytes table is built in one pass
            if layer.special:
                special.update(layer.tokens)
            else:
                special.difference_update(layer.tokens)
        return tokens, frozenset(special)

    def lookup(self, token_id: int) -> Lookup | None:
        for layer in self.layers:
            token = layer.tokens.get(token_id)
            if token is not None:
                return Lookup(token_id, token, layer)
        return None
