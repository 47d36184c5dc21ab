"""``strict``: decode exactly as a files-only gateway does (smg, tiktoken-rs): any id that the data
files do not map is an error, never silently dropped. Decode only. The text follows the tokenizer's
own decoder chain (:class:`~tokaudit.model.text.TokenText`), so a Metaspace/Strip or WordPiece model
decodes as its library does."""

from __future__ import annotations

from collections.abc import Callable

from tokaudit.backends.base import UnknownId
from tokaudit.model.text import TokenText, UnmappedId
from tokaudit.model.tokenizer_model import TokenizerModel


class StrictBackend:
    name = "strict"
    can_encode = False

    def __init__(self, model: TokenizerModel) -> None:
        self.text = TokenText(model)
        self._gguf = _gguf_detokenizer(model)

    def encode(self, text: str) -> list[int]:
        raise NotImplementedError("the strict backend only decodes")

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        if self._gguf is not None:  # a GGUF alone: llama_detokenize emulated from its tokens and types
            return self._gguf(ids, skip_special_tokens)
        try:
            return self.text.decode(ids, skip_special_tokens)
        except UnmappedId as exc:
            raise UnknownId(exc.args[0]) from None

    def describe(self) -> str:
        if self._gguf is not None:
            return "llama_detokenize emulated from the GGUF's tokens and types (ids outside it are errors)"
        return f"files profile, decoder: {self.text.describe}"

    def versions(self) -> dict[str, str]:
        return {}


def _gguf_detokenizer(model: TokenizerModel) -> Callable[[list[int], bool], str] | None:
    """For a GGUF-only target: decode as llama.cpp's ``llama_detokenize`` does (pieces, the leading-space strip,
    the space cleanup), an id outside the vocabulary an error. None otherwise, or where pieces are not emulated."""
    g = model.artifacts.gguf
    if not model.artifacts.gguf_only or g is None:
        return None
    from tokaudit.model.llamacpp_load import piece_rules
    from tokaudit.model.llamacpp_vocab import NotEmulated, detokenize

    load = model.llamacpp
    assert load is not None  # the model has a GGUF
    try:
        rules = piece_rules(g, load)
    except NotEmulated:
        return None
    flags = load.flags
    n = len(g.tokens)

    def decode(ids: list[int], skip_special_tokens: bool) -> str:
        bad = next((i for i in ids if not 0 <= i < n), None)
        if bad is not None:
            raise UnknownId(bad)
        out = detokenize(
            rules,
            ids,
            special=not skip_special_tokens,
            add_space_prefix=flags["add_space_prefix"],
            clean=flags["clean_spaces"],
        )
        return out.decode("utf-8", "replace")

    return decode
