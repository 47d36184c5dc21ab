"""The byte-level vocabulary a BPE backend is built from: ranks (token bytes -> id) and specials."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from tokaudit.artifacts.kinds import names_of_rank_files
from tokaudit.backends.base import BackendUnavailable
from tokaudit.model.text import TokenText
from tokaudit.model.tokenizer_model import TokenizerModel


#: Largest id the tokenizer libraries can hold (u32).
MAX_U32 = 2**32 - 1


@dataclass(frozen=True)
class ByteVocab:
    #: token bytes -> rank (rank == id, except in a rank file whose ids are shifted by a block of specials first).
    ranks: dict[bytes, int]
    #: special/added token text -> id (every added token: encoders match them all in text).
    specials: dict[str, int]
    #: The ids of ``specials`` that ``skip_special_tokens`` drops: those the files mark special
    #: (:attr:`tokaudit.model.text.TokenText.special_ids`), not every added token. Kimi-K2.5 marks its
    #: tool-call and ``<think>`` markers ``special: false``; tokenizers (hence transformers 5's
    #: TokenizersBackend) and the remote slow tokenizer keep them, and so must every backend here.
    skipped: frozenset[int] = frozenset()

    @cached_property
    def by_id(self) -> dict[int, bytes]:
        return {i: b for b, i in self.ranks.items()}


def byte_vocab(model: TokenizerModel) -> ByteVocab:
    """Ranks and specials from the files profile; requires a rank file (``Artifacts.rank_file``)."""
    a = model.artifacts
    rank_file = a.rank_file
    if rank_file is None:
        raise BackendUnavailable(f"needs byte-level ranks ({names_of_rank_files(last=' or ')})")
    base = rank_file.by_id
    # An empty *special* token makes tiktoken's encode loop forever: it is kept out below (scan reports
    # it as TA206 empty-token). An empty rank is harmless (whisper's multilingual.tiktoken has one, id
    # 50256) and stays, so that decoding it behaves as tiktoken does.
    ranks = {token: i for i, token in base.items()}
    specials: dict[str, int] = {}
    if a.tokenizer_json is not None:
        # tokenizer.json is then the files profile's base vocabulary: only its added tokens are specials.
        for added in a.tokenizer_json.added_tokens:
            if added.id is not None and added.content:
                specials.setdefault(added.content, added.id)
    else:
        for layer in model.files.layers:
            if layer.tokens is base:
                continue
            for i, token in layer.tokens.items():
                if token:
                    specials.setdefault(token.decode("utf-8", "replace"), i)
    too_big = [i for i in (*ranks.values(), *specials.values()) if i > MAX_U32]
    if too_big:  # tiktoken raises OverflowError, tokenizers a TypeError: say which id
        where = a.tiktoken.source(max(too_big)) if a.tiktoken and max(too_big) in base else None
        raise BackendUnavailable(
            f"id {max(too_big)}{f' ({where})' if where else ''} does not fit in 32 bits "
            "(tiktoken and tokenizers store ids as u32)"
        )
    missing = [b for b in range(256) if bytes([b]) not in ranks]
    if missing:
        raise BackendUnavailable(
            f"ranks lack {len(missing)} of the 256 single bytes (e.g. 0x{missing[0]:02X}): not byte-level BPE"
        )
    flagged = TokenText(model).special_ids
    return ByteVocab(ranks, specials, frozenset(i for i in specials.values() if i in flagged))
