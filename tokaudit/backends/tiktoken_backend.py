"""``tiktoken``: an Encoding built from the ranks, the model's pattern and its special tokens."""

from __future__ import annotations

from tokaudit.backends.base import BackendUnavailable
from tokaudit.backends.pattern import Pattern
from tokaudit.backends.vocab import ByteVocab


#: Stands in for the pattern when there is none: decoding never reads it, and encode refuses.
_DECODE_ONLY_PATTERN = r"[\s\S]"


class TiktokenBackend:
    """With ``decode_only`` and no pattern it still decodes (decode and replay never need one) and cannot encode."""

    name = "tiktoken"

    def __init__(
        self, vocab: ByteVocab, pattern: Pattern | None, no_pattern: str | None = None, *, decode_only: bool = False
    ) -> None:
        import tiktoken

        if pattern is None and not decode_only:
            raise BackendUnavailable(no_pattern or "no pre-tokenizer pattern found (pattern-unknown); pass --pat-str")
        try:
            self.encoding = tiktoken.Encoding(
                name="tokaudit",
                pat_str=pattern.regex if pattern else _DECODE_ONLY_PATTERN,
                mergeable_ranks=vocab.ranks,
                special_tokens=vocab.specials,
            )
        except ValueError as exc:
            raise BackendUnavailable(f"tiktoken rejects the pattern: {exc}") from None
        self.pattern = pattern
        #: Why this backend cannot encode (no pattern), or None.
        self.no_encode_reason = (
            None if pattern else (no_pattern or "no pre-tokenizer pattern found (pattern-unknown); pass --pat-str")
        )
        self.can_encode = pattern is not None
        self.special_ids = vocab.skipped  # what skip_special_tokens drops: the flagged specials
        #: ``decode(ids)`` keeping special tokens is tiktoken's own function: fuzz's hot loop calls it directly.
        self.plain_decode = self.encoding.decode

    def describe(self) -> str:
        if self.pattern is None:
            return f"decode only: {self.no_encode_reason}"
        return f"pattern from {self.pattern.source}"

    def encode(self, text: str) -> list[int]:
        if self.pattern is None:
            raise BackendUnavailable(self.no_encode_reason or "no pattern")
        return self.encoding.encode(text, allowed_special="all")

    # tiktoken's own encode_batch/decode_batch submit one thread-pool future per text: on many short texts
    # (a corpus of lines) that measured 3x (encode) and 30x (decode) slower than this plain loop on 2 cores.
    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        if self.pattern is None:
            raise BackendUnavailable(self.no_encode_reason or "no pattern")
        encode, allowed = self.encoding.encode, self.encoding.special_tokens_set
        return [encode(t, allowed_special=allowed) for t in texts]

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        if skip_special_tokens:
            ids = [i for i in ids if i not in self.special_ids]
        return self.encoding.decode(ids)

    def decode_batch(self, ids: list[list[int]], skip_special_tokens: bool = False) -> list[str]:
        if skip_special_tokens:
            ids = [[i for i in x if i not in self.special_ids] for x in ids]
        decode = self.encoding.decode
        return [decode(x) for x in ids]

    def versions(self) -> dict[str, str]:
        import tiktoken

        return {"tiktoken": tiktoken.__version__}
