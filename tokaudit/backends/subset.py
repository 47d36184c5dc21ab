"""Rank vocabularies cut down to the entries one question reads, so that a backend rebuilt from ranks
(tiktoken, hf from ranks, reference) loads in milliseconds instead of building 163k entries.

The backend is then the same library code on fewer entries, and its answers are the full build's
for the question asked (tests compare the two on fixtures and real models):

* decoding ids reads only those ids' entries: an id is kept exactly when the full decoder maps it
  (a rank whose bytes repeat later keeps only the later id, as the full build does);
* encoding a text reads only ranks of byte strings inside the text (a pre-token, and every part BPE
  merges, is a substring of it), so every rank that is a substring of the text is kept;
* always kept: the 256 single bytes (what makes the ranks byte-level, and never an empty table),
  every special token, and each rank that spells a special token's text in GPT-2's byte alphabet
  (tokenizers gives such a special the rank's id instead of its own).

Answers about any other id or text are not the model's: only the command that asked uses the backend.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tokaudit.artifacts.token_bytes import Scheme, token_bytes
from tokaudit.backends.vocab import ByteVocab

#: Substring look-ups a text may cost before the full vocabulary is built instead (~30 ms of dict
#: look-ups; building Kimi's 163k-rank Encoding is ~0.2 s).
TEXT_LOOKUP_BUDGET = 300_000


@dataclass(frozen=True)
class Subset:
    """What a restricted backend was built from, said in the output next to its load time."""

    vocab: ByteVocab
    #: "decoding the asked ids" or "encoding the text"
    purpose: str
    full_ranks: int

    def describe(self) -> str:
        return (
            f"built from {len(self.vocab.ranks)} of {self.full_ranks} ranks (those {self.purpose} reads, and the 256 "
            "single "
            f"bytes) and all {len(self.vocab.specials)} special tokens: its answers for {self.purpose} are the full "
            "build's; "
            "load_seconds is this build's"
        )


def _always(vocab: ByteVocab) -> dict[bytes, int]:
    ranks = vocab.ranks
    keep = {bytes([b]): ranks[bytes([b])] for b in range(256) if bytes([b]) in ranks}
    for content in vocab.specials:
        spelled = token_bytes(content, Scheme.BYTE_LEVEL)
        if spelled in ranks:
            keep[spelled] = ranks[spelled]
    return keep


def for_ids(vocab: ByteVocab, base: Mapping[int, bytes], ids: Iterable[int]) -> Subset:
    """The entries decoding ``ids`` reads (any order, repeats, negative or huge ids allowed). ``base`` is the
    rank file's id -> bytes that ``vocab.ranks`` was inverted from (cheaper than inverting 163k ranks back)."""
    ranks = vocab.ranks
    keep = _always(vocab)
    for i in ids:
        token = base.get(i)
        if token is not None and ranks.get(token) == i:  # a repeated token's earlier ids are not in the ranks
            keep[token] = i
    return Subset(ByteVocab(keep, vocab.specials, vocab.skipped), "decoding the asked ids", len(vocab.ranks))


def for_text(vocab: ByteVocab, text: str) -> Subset | None:
    """The entries encoding ``text`` reads; None when the text is too long for the look-up budget."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # tiktoken encodes lone surrogates after this same repair
        data = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")
    ranks = vocab.ranks
    longest = max(map(len, ranks), default=0)
    n = len(data)
    if n * min(n, longest) > TEXT_LOOKUP_BUDGET:
        return None
    keep = _always(vocab)
    get = ranks.get
    for start in range(n):
        for end in range(start + 1, min(n, start + longest) + 1):
            rank = get(data[start:end])
            if rank is not None:
                keep[data[start:end]] = rank
    return Subset(ByteVocab(keep, vocab.specials, vocab.skipped), "encoding the text", len(ranks))
