"""``reference``: a small pure-Python byte-level BPE over the ranks, written to be obviously correct.

It is the slow oracle the fast engines are compared with: split out special tokens, split the
rest with the model's regex, then repeatedly merge the adjacent pair whose concatenation has
the lowest rank (tiktoken's algorithm; a piece that is itself a token is taken whole).
"""

from __future__ import annotations

import time

from tokaudit.backends.base import BackendUnavailable, UnknownId
from tokaudit.backends.pattern import Pattern
from tokaudit.backends.vocab import ByteVocab


#: Wall-clock budget of one reference encode call (regex split + BPE). A catastrophic-backtracking
#: pattern (``(?:\\S|\\S)*\\x00``) or a huge piece ends in :class:`BackendTimeout`, which callers
#: report as backend-crash; after one timeout the backend refuses further calls at once.
CALL_SECONDS = 3.0


class BackendTimeout(TimeoutError):
    """A backend call ran past its budget."""


def bpe(piece: bytes, ranks: dict[bytes, int], deadline: float | None = None) -> list[int]:
    whole = ranks.get(piece)
    if whole is not None:
        return [whole]
    parts = [piece[i : i + 1] for i in range(len(piece))]
    while len(parts) > 1:
        if deadline is not None and len(parts) > 256 and time.monotonic() > deadline:  # quadratic in the piece length
            raise BackendTimeout(f"BPE of a {len(piece)}-byte piece ran past the {CALL_SECONDS:g} s budget")
        best_rank, best_at = None, -1
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and (best_rank is None or rank < best_rank):
                best_rank, best_at = rank, i
        if best_rank is None:
            break
        parts[best_at : best_at + 2] = [parts[best_at] + parts[best_at + 1]]
    return [ranks[p] for p in parts]


class ReferenceBackend:
    name = "reference"

    def __init__(self, vocab: ByteVocab, pattern: Pattern | None) -> None:
        import regex

        if pattern is None:
            raise BackendUnavailable("no pre-tokenizer pattern found (pattern-unknown); pass --pat-str")
        try:
            # VERSION1 gives class set operations ([\p{L}&&[^\p{Han}]]) the meaning tiktoken and Oniguruma give them.
            self.regex = regex.compile(pattern.regex, regex.VERSION1)
        except regex.error as exc:
            raise BackendUnavailable(f"the regex module rejects the pattern: {exc}") from None
        self.vocab = vocab
        self.special_ids = vocab.skipped  # what skip_special_tokens drops: the flagged specials
        specials = sorted(vocab.specials, key=len, reverse=True)
        self.special_split = (
            regex.compile("(" + "|".join(regex.escape(s) for s in specials) + ")") if specials else None
        )
        self.decoder = {**vocab.by_id, **{i: s.encode("utf-8") for s, i in vocab.specials.items()}}
        self._cache: dict[bytes, list[int]] = {}
        #: why an earlier call ran past the budget ("" while none has)
        self.timed_out = ""

    def _encode_ordinary(self, text: str, out: list[int], deadline: float) -> None:
        ranks, cache = self.vocab.ranks, self._cache
        try:
            for match in self.regex.finditer(text, timeout=max(0.01, deadline - time.monotonic())):
                piece = match.group().encode("utf-8")
                ids = cache.get(piece)
                if ids is None:
                    ids = cache[piece] = bpe(piece, ranks, deadline)
                out.extend(ids)
        except BackendTimeout as exc:
            self.timed_out = str(exc)
            raise
        except TimeoutError:
            self.timed_out = f"the pattern ran past the {CALL_SECONDS:g} s budget (catastrophic backtracking?)"
            raise BackendTimeout(self.timed_out) from None

    def encode(self, text: str) -> list[int]:
        if self.timed_out:
            raise BackendTimeout(f"not run: an earlier call failed: {self.timed_out}")
        deadline = time.monotonic() + CALL_SECONDS
        out: list[int] = []
        chunks = self.special_split.split(text) if self.special_split else [text]
        for k, chunk in enumerate(chunks):
            if k % 2:
                out.append(self.vocab.specials[chunk])
            elif chunk:
                self._encode_ordinary(chunk, out, deadline)
        return out

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        parts = []
        for i in ids:
            token = self.decoder.get(i)
            if token is None:
                raise UnknownId(f"Invalid token for decoding: {i}")
            if not (skip_special_tokens and i in self.special_ids):
                parts.append(token)
        return b"".join(parts).decode("utf-8", "replace")

    def versions(self) -> dict[str, str]:
        return {}
