"""``hf``: HF ``tokenizers`` from tokenizer.json, or a byte-level BPE rebuilt from the ranks.

Rebuilding from ranks is what converters do: every split of a token into two known tokens
becomes a merge ranked by the token's own rank, so BPE merges in tiktoken's order. Special
tokens are put in the vocabulary at their declared ids *before* they are registered, so that
sparse ids (Kimi's) are kept instead of being renumbered.
"""

from __future__ import annotations

from itertools import accumulate, repeat
from operator import and_, rshift
from typing import Any

from tokaudit.artifacts.safe_files import read_text
from tokaudit.artifacts.strict_json import serde_error_path
from tokaudit.artifacts.text_files import unknown_merges
from tokaudit.artifacts.tokenizer_json import TokenizerJson
from tokaudit.backends.base import BackendUnavailable
from tokaudit.backends.pattern import Pattern, onig_pattern
from tokaudit.backends.vocab import ByteVocab
from tokaudit.model.text import slow_special_tokens, wordpiece_settings
from tokaudit.model.tokenizer_model import TokenizerModel


def merge_ids(ranks: dict[bytes, int]) -> tuple[list[int], list[int]]:
    """The merges implied by ranks, as rank pairs (left ranks, right ranks): each split of a token into two
    tokens, ordered by the token's rank, then the left half's. Ranks must be distinct (they are ids).

    Each split is one int key (token rank, left rank, right rank as bit fields): the loop appends untracked
    ints and one C sort orders them, where sorting (rank, left, right, bytes, bytes) tuples and re-slicing
    the halves cost as much as the search. Halves are looked up in per-length tables (smaller, so more of
    each stays in cache)."""
    if len(set(ranks.values())) != len(ranks):
        raise ValueError("ranks are not distinct")
    width = max(ranks.values(), default=0).bit_length()
    by_length: dict[int, dict[bytes, int]] = {}
    for token, rank in ranks.items():
        if token:  # an empty rank is never half of a merge
            by_length.setdefault(len(token), {})[token] = rank
    # Only cuts where both halves have the length of some token: a real vocabulary has ~100 distinct
    # lengths, so a pathological 10 MB token costs ~100 slices instead of 10 million (was quadratic).
    lengths = sorted(by_length)
    keys: list[int] = []
    append = keys.append
    for size in lengths:
        cuts = [
            (cut, by_length[cut].get, by_length[size - cut].get)
            for cut in lengths
            if cut < size and size - cut in by_length
        ]
        # the longer half first: it is a token less often, so fewer second lookups (350k instead of 500k on Kimi)
        right_first = [c for c in cuts if 2 * c[0] <= size]
        left_first = [c for c in cuts if 2 * c[0] > size]
        for token, rank in by_length[size].items() if cuts else ():
            high = rank << (2 * width)
            for cut, left_rank, right_rank in right_first:
                right = right_rank(token[cut:])
                if right is not None:
                    left = left_rank(token[:cut])
                    if left is not None:
                        append(high | (left << width) | right)
            for cut, left_rank, right_rank in left_first:
                left = left_rank(token[:cut])
                if left is not None:
                    right = right_rank(token[cut:])
                    if right is not None:
                        append(high | (left << width) | right)
    keys.sort()
    mask = (1 << width) - 1
    return list(map(and_, map(rshift, keys, repeat(width)), repeat(mask))), list(map(and_, keys, repeat(mask)))


def recover_merges(ranks: dict[bytes, int]) -> list[tuple[bytes, bytes]]:
    """Merges implied by ranks: each split of a token into two tokens, ordered by the token's rank (then the left's)."""
    by_rank = {rank: token for token, rank in ranks.items()}
    lefts, rights = merge_ids(ranks)
    return list(zip(map(by_rank.__getitem__, lefts), map(by_rank.__getitem__, rights)))


def tokenizer_from_ranks(vocab: ByteVocab, pattern: Pattern | None) -> Any:
    """``pattern`` None: a decode-only tokenizer, with neither a Split pre-tokenizer nor merges (decoding
    reads only the vocabulary and the decoder; recovering Kimi's 295k merges and building the BPE from
    them is 85% of the 1.5 s build)."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

    from tokaudit.artifacts.token_bytes import byte_encoder

    # bytes -> GPT-2 byte-level spelling in C: latin-1 maps byte b to code point b, translate re-spells it
    table = {b: c for b, c in byte_encoder().items()}

    # one latin-1 decode + translate of all tokens at once, then sliced (latin-1 keeps one char per byte)
    tokens = list(vocab.ranks)
    joined = b"".join(tokens).decode("latin-1").translate(table)
    ends = list(accumulate(map(len, tokens)))
    spelled = [joined[a:b] for a, b in zip([0, *ends], ends)]
    bpe_vocab = dict(zip(spelled, vocab.ranks.values()))
    for content, token_id in vocab.specials.items():
        bpe_vocab.setdefault(content, token_id)
    merges: list[tuple[str, str]] = []
    if pattern is not None:
        # the merge halves are the vocabulary's own str objects: no re-spelling, and PyO3 converts each once
        values = list(vocab.ranks.values())
        # ranks 0..n-1 in order (tiktoken files): the spelled list is already indexed by rank
        by_rank: Any = spelled if values == list(range(len(values))) else dict(zip(values, spelled))
        lefts, rights = merge_ids(vocab.ranks)
        merges = list(zip(map(by_rank.__getitem__, lefts), map(by_rank.__getitem__, rights)))
    # ignore_merges: a pre-token that is itself a token is taken whole, as tiktoken and TikTokenConverter do.
    tok = Tokenizer(models.BPE(vocab=bpe_vocab, merges=merges, ignore_merges=True))
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    if pattern is None:
        tok.pre_tokenizer = byte_level
    else:
        regex = onig_pattern(pattern.regex)
        try:
            split = pre_tokenizers.Split(Regex(regex), behavior="isolated", invert=False)
        except Exception as exc:  # noqa: BLE001 - tokenizers raises plain Exception for a bad regex
            raise BackendUnavailable(f"tokenizers rejects the pattern: {exc}") from None
        tok.pre_tokenizer = pre_tokenizers.Sequence([split, byte_level])
    tok.decoder = decoders.ByteLevel()
    # each added token keeps its special flag: tokenizers' decode(skip_special_tokens=True) drops only special ones
    tok.add_special_tokens(
        [AddedToken(c, special=True, normalized=False) for c, i in vocab.specials.items() if i in vocab.skipped]
    )
    tok.add_tokens(
        [AddedToken(c, special=False, normalized=False) for c, i in vocab.specials.items() if i not in vocab.skipped]
    )
    return tok


#: Appended to a token's byte-level spelling to keep apart ids with the same bytes (a GGUF's SPM ``<0x41>``
#: and ``A``); outside GPT-2's alphabet, and deleted by the decoder before its ByteLevel step.
_APART = "\ue000"


def tokenizer_from_pieces(model: TokenizerModel) -> Any:
    """A decode-only tokenizer whose decode is the concatenation of the bytes the model's files table gives
    each id (a GGUF alone: the pieces llama.cpp renders); the special ids (a GGUF's CONTROL and UNKNOWN
    tokens) are special added tokens, so ``skip_special_tokens`` drops them as llama.cpp does without
    ``special``. What replay decodes a GGUF target with."""
    from tokenizers import AddedToken, Tokenizer, decoders, models

    from tokaudit.artifacts.token_bytes import byte_encoder

    table = {b: c for b, c in byte_encoder().items()}
    tokens, special = model.files.flat
    ids = sorted(tokens)
    spelled = [tokens[i].decode("latin-1").translate(table) for i in ids]
    seen: dict[str, int] = {}
    vocab: dict[str, int] = {}
    for token_id, text in zip(ids, spelled):
        k = seen[text] = seen.get(text, -1) + 1
        vocab[text + _APART * (k + (not text))] = token_id
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=next(iter(vocab))))
    tok.decoder = decoders.Sequence([decoders.Replace(_APART, ""), decoders.ByteLevel()])
    by_id = {i: t for t, i in vocab.items()}
    tok.add_special_tokens(
        [AddedToken(by_id[i], special=True, normalized=False) for i in sorted(special) if i in by_id]
    )
    return tok


#: The keys of a BPE model in tokenizer.json; a model with any other goes through tokenizers' own parser.
_BPE_OPTIONS = (
    "dropout",
    "unk_token",
    "continuing_subword_prefix",
    "end_of_word_suffix",
    "fuse_unk",
    "byte_fallback",
    "ignore_merges",
)
_ADDED_FLAGS = ("single_word", "lstrip", "rstrip", "normalized", "special")


def tokenizer_from_parsed(tj: TokenizerJson) -> Any | None:
    """The tokenizer of a BPE tokenizer.json, built from the JSON tokaudit already parsed; None when that
    could differ from ``Tokenizer.from_str`` of the file (then the caller lets tokenizers parse it).

    Gemma 3's file is 33 MB, so a second parse cost ~1.5 CPU-s: here only the small components go through
    from_str (in a shell without vocabulary or added tokens), the BPE is built from the parsed vocabulary
    and merges (the constructor from_str uses too), and the added tokens are registered in file order, as
    tokenizers' deserializer does. Each added token must come back at its declared id."""
    import json

    from tokenizers import AddedToken, Tokenizer, models

    data, model = tj.raw, tj.raw.get("model")
    if tj.model_type != "BPE" or not isinstance(model, dict) or model.get("type") != "BPE":
        return None
    if set(model) - {"type", "vocab", "merges", *_BPE_OPTIONS}:
        return None
    vocab, merges, added = model.get("vocab"), model.get("merges"), data.get("added_tokens") or []
    if not isinstance(vocab, dict) or not isinstance(merges, list) or not isinstance(added, list):
        return None
    kinds = set(map(type, merges))
    if kinds == {str}:  # "a b": exactly one space in each, so any way of splitting agrees
        if set(map(str.count, merges, repeat(" "))) != {1}:
            return None
        pairs = list(map(tuple, map(str.split, merges, repeat(" "))))
    elif kinds <= {list}:
        pairs = list(map(tuple, merges))
    else:
        return None
    tokens = []
    for item in added:
        if not (
            isinstance(item, dict)
            and isinstance(item.get("content"), str)
            and type(item.get("id")) is int
            and all(type(item.get(flag)) is bool for flag in _ADDED_FLAGS)
        ):
            return None
        tokens.append(AddedToken(item["content"], **{flag: item[flag] for flag in _ADDED_FLAGS}))
    shell = {**data, "added_tokens": [], "model": {"type": "BPE", "vocab": {}, "merges": []}}
    try:
        tok = Tokenizer.from_str(json.dumps(shell))
        tok.model = models.BPE(
            # listed pairs are unchecked: BPE refuses a non-pair inside the try
            vocab=vocab,
            merges=pairs,  # type: ignore[arg-type]  # unchecked pairs (see above)
            **{k: model[k] for k in _BPE_OPTIONS if model.get(k) is not None},
        )
        tok.add_tokens(tokens)
        if any(tok.token_to_id(item["content"]) != item["id"] for item in added):
            return None
    except BaseException as exc:  # anything tokenizers refuses (a Rust panic too): let it parse the file
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return None
    return tok


def tokenizer_from_vocab_files(model: TokenizerModel) -> tuple[Any, str] | None:
    """What transformers builds from the slow files: GPT-2 byte-level BPE from vocab.json + merges.txt,
    or BERT WordPiece (lower-casing, as BertTokenizer does by default) from vocab.txt."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers

    a = model.artifacts
    try:
        if a.vocab_json is not None and a.merges is not None:
            bad = unknown_merges(a.vocab_json, a.merges)
            if bad:  # scan reports it (TA303); say where instead of tokenizers' "out of vocabulary"
                line, (left, right), missing = bad[0]
                raise BackendUnavailable(
                    f"{a.merges.name}:{line}: merge {left!r} + {right!r} names {missing!r}, "
                    f"which {a.vocab_json.name} lacks"
                )
            # from what scan parsed (BOM-safe), not from_file
            vocab = {token: i for i, token in a.vocab_json.vocab.items()}
            tok = Tokenizer(models.BPE(vocab=vocab, merges=list(a.merges.merges)))
            tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
            tok.decoder = decoders.ByteLevel()
            origin = f"built from {a.vocab_json.name} + {a.merges.name} (GPT-2 byte-level BPE)"
        elif a.vocab_txt is not None:
            unk = next((t for t in a.vocab_txt.vocab.values() if t == "[UNK]"), None)
            # from what scan parsed (BOM-safe), not from_file
            pieces = {token: i for i, token in a.vocab_txt.vocab.items()}
            tok = Tokenizer(models.WordPiece(vocab=pieces, **({"unk_token": unk} if unk else {})))
            wp = wordpiece_settings(model)
            assert wp is not None
            tok.normalizer = normalizers.BertNormalizer(
                lowercase=wp.do_lower_case,
                strip_accents=wp.strip_accents,
                handle_chinese_chars=wp.tokenize_chinese_chars,
            )
            tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
            tok.decoder = decoders.WordPiece()
            defaults = f"; BertTokenizer defaults for {', '.join(wp.defaulted)}" if wp.defaulted else ""
            origin = f"built from {a.vocab_txt.name} (BERT WordPiece, {wp.describe()}{defaults})"
        else:
            return None
    except Exception as exc:  # noqa: BLE001 - tokenizers raises plain Exception for malformed files
        raise BackendUnavailable(f"tokenizers cannot build from the vocabulary files: {exc}") from None
    cfg = a.tokenizer_config
    added = cfg.added_tokens_decoder if cfg else ()
    # bos_token, eos_token, ... (BertTokenizer's defaults for a bare vocab.txt)
    specials = dict.fromkeys(slow_special_tokens(model))
    specials.pop("", None)  # an empty added token (TA206) is kept out of every encoder
    tok.add_special_tokens([AddedToken(content, special=True, normalized=False) for content in specials])
    tok.add_tokens([AddedToken(t.content, special=False) for t in added if not t.special and t.content])
    return tok, origin


class HFBackend:
    name = "hf"
    #: False for a tokenizer rebuilt for decoding only (read by ``backends.base.can_encode``).
    can_encode = True

    def __init__(self, tokenizer: Any, origin: str) -> None:
        self.tokenizer = tokenizer
        #: "tokenizer.json" or "rebuilt from tiktoken.model ranks".
        self.origin = origin

    @classmethod
    def from_model(
        cls,
        model: TokenizerModel,
        vocab: ByteVocab | None,
        pattern: Pattern | None,
        no_pattern: str | None = None,
        *,
        decode_only: bool = False,
    ) -> HFBackend:
        from tokenizers import Tokenizer

        tj = model.artifacts.tokenizer_json
        if tj is not None:
            parsed = tokenizer_from_parsed(tj)  # what from_str gives, without parsing the file a second time
            if parsed is not None:
                return cls(parsed, tj.name)
            try:
                # from the text scan parsed (BOM stripped), not from_file: serde rejects a BOM-prefixed file
                return cls(Tokenizer.from_str(read_text(tj.path)), tj.name)
            except BaseException as exc:  # includes Rust panics on malformed files
                if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                    raise
                # serde points at the end of the section it was reading: name the offending key instead
                located = serde_error_path(read_text(tj.path), str(exc))
                if located is not None:
                    raise BackendUnavailable(
                        f"tokenizers cannot load {tj.name} (key {located[0]}): {located[1]}"
                    ) from None
                raise BackendUnavailable(f"tokenizers cannot load {tj.name}: {type(exc).__name__}: {exc}") from None
        if vocab is None:
            if model.artifacts.gguf_only and decode_only:
                backend = cls(
                    tokenizer_from_pieces(model), f"decode only, from the llama.cpp pieces of {model.vocab_artifact}"
                )
                backend.can_encode = False
                return backend
            legacy = tokenizer_from_vocab_files(model)
            if legacy is None:
                if model.artifacts.rank_file is not None:
                    from tokaudit.backends.vocab import byte_vocab

                    byte_vocab(model)  # the ranks are there but unusable: raises the precise reason
                raise BackendUnavailable("needs tokenizer.json, byte-level ranks, vocab.json + merges.txt or vocab.txt")
            return cls(*legacy)
        reason = no_pattern or "no pre-tokenizer pattern found (pattern-unknown); pass --pat-str"
        if pattern is None and not decode_only:
            raise BackendUnavailable(reason)
        if decode_only:
            # The caller only decodes (replay, decode, explain, fuzz): no merges to recover and no pre-tokenizer
            # (decoding never reads them; checking the pattern in Oniguruma costs 50 ms, and a pattern it
            # splits differently must not stop a decode). Encoding without them would be a guess.
            origin = f"rebuilt from {model.vocab_artifact} ranks" + ("" if pattern else f", decode only: {reason}")
            backend = cls(tokenizer_from_ranks(vocab, None), origin)
            backend.can_encode = False
            return backend
        return cls(tokenizer_from_ranks(vocab, pattern), f"rebuilt from {model.vocab_artifact} ranks")

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def encode_prompt(self, text: str) -> list[int]:
        """add_special_tokens=True: what tokenizer.json's post_processor adds (TGI, smg, Dynamo encode so)."""
        return self.tokenizer.encode(text, add_special_tokens=True).ids

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [e.ids for e in self.tokenizer.encode_batch(texts, add_special_tokens=False)]

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=skip_special_tokens)

    def decode_batch(self, ids: list[list[int]], skip_special_tokens: bool = False) -> list[str]:
        return self.tokenizer.decode_batch(ids, skip_special_tokens=skip_special_tokens)

    def versions(self) -> dict[str, str]:
        import tokenizers

        return {"tokenizers": tokenizers.__version__}
