"""``sentencepiece``: the ``sentencepiece`` library on a SentencePiece ``tokenizer.model``, the real
slow path of Llama 2 / Mistral / Gemma / T5 models (what transformers' slow tokenizers and
llama.cpp's SPM tokenizer emulate).

The processor is built from the serialized proto in memory (``model_proto=``): nothing is written
anywhere, nothing in the target is opened a second time.

Special tokens follow transformers' slow tokenizers (``LlamaTokenizer(legacy=True)``, the default
of Llama 2 and Mistral repos): the text is first split on the special strings (control and
user-defined pieces, then tokenizer_config's added tokens, longest first); each plain segment is encoded
by sentencepiece on its own (so it gets the dummy prefix, as in ``tokenizers`` with a
``Prepend("▁")`` normalizer); each special string becomes its id. The bare library never matches
``<s>`` in text; llama.cpp with ``parse_special`` splits the same way. Decode renders a special
piece as its text (sentencepiece itself drops control pieces) and drops it with
``skip_special_tokens``; everything else is ``SentencePieceProcessor.decode`` (the unknown piece
prints as `` ⁇ ``), so with ``skip_special_tokens`` the text is exactly the library's own decode.
"""

from __future__ import annotations

import re
from typing import Any

from tokaudit.artifacts.sentencepiece_model import PieceType, SentencePieceModel
from tokaudit.backends.base import BackendUnavailable
from tokaudit.model.text import TokenText
from tokaudit.model.tokenizer_model import TokenizerModel

#: Budget of special strings in the split regex (real models: Mistral v3 has 771).
MAX_SPECIALS = 50_000


def special_tokens(model: TokenizerModel, sp: SentencePieceModel) -> dict[str, int]:
    """Special text -> id: control pieces, user-defined pieces, then tokenizer_config's added tokens
    (what the slow tokenizer's trie splits on). The unknown piece only when tokenizer_config lists it:
    sentencepiece itself reads ``<unk>`` in text as text and decodes the piece as `` ⁇ ``."""
    out: dict[str, int] = {}
    for i in sorted(sp.special_ids):
        out.setdefault(sp.pieces[i].piece, i)
    for i in sp.ids_of_type(PieceType.USER_DEFINED):
        out.setdefault(sp.pieces[i].piece, i)
    cfg = model.artifacts.tokenizer_config
    if cfg is not None:
        for tok in cfg.added_tokens_decoder:
            if tok.id is not None and tok.content:
                out.setdefault(tok.content, tok.id)
    return dict(list(out.items())[:MAX_SPECIALS])


class SentencePieceBackend:
    name = "sentencepiece"

    def __init__(self, model: TokenizerModel) -> None:
        sp = model.artifacts.sentencepiece
        if sp is None:
            raise BackendUnavailable("needs a SentencePiece tokenizer.model")
        import sentencepiece

        self.model = sp
        self.processor: Any = sentencepiece.SentencePieceProcessor(model_proto=sp.data)
        self.size = self.processor.get_piece_size()
        self.specials = special_tokens(model, sp)
        #: id -> text of every token the decoder renders as its text (special, or beyond the pieces).
        self.special_text = {
            i: t for t, i in self.specials.items() if i >= self.size or sp.pieces[i].type is not PieceType.USER_DEFINED
        }
        #: the ids decode(skip_special_tokens=True) drops: the special-flagged ones (a tokenizer_config added token
        #: marked special: false is kept, as transformers' slow tokenizers keep what is not in all_special_ids)
        flagged = TokenText(model).special_ids
        self.skipped = frozenset(i for i in self.special_text if i in flagged)
        names = sorted(self.specials, key=len, reverse=True)
        self._split = re.compile("(" + "|".join(map(re.escape, names)) + ")") if names else None

    def describe(self) -> str:
        return (
            f"sentencepiece {self.model.model_type} from {self.model.name} ({self.size} pieces"
            f"{', byte fallback' if self.model.byte_fallback else ''}); special strings split as transformers' slow "
            "tokenizer does"
        )

    def encode(self, text: str) -> list[int]:
        if self._split is None:
            return list(self.processor.encode(text, out_type=int))
        ids: list[int] = []
        for k, part in enumerate(self._split.split(text)):
            if k % 2:
                ids.append(self.specials[part])
            elif part:
                ids.extend(self.processor.encode(part, out_type=int))
        return ids

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        if self._split is None:
            return [list(x) for x in self.processor.encode(texts, out_type=int)]
        return [self.encode(t) for t in texts]

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        special = self.special_text
        if not any(i in special for i in ids):
            return self.processor.decode(list(ids))  # raises IndexError for an id outside the pieces
        if skip_special_tokens:
            ids = [i for i in ids if i not in self.skipped]
            if not any(i in special for i in ids):
                return self.processor.decode(ids)
        parts: list[str] = []
        run: list[int] = []
        for i in ids:
            if i in special:
                parts.append(self._run(run, not parts))
                parts.append(special[i])
                run = []
            else:
                run.append(i)
        parts.append(self._run(run, not parts))
        return "".join(parts)

    def _run(self, run: list[int], first: bool) -> str:
        """One run of ordinary pieces; after a special token the dummy-prefix space is kept, as the
        tokenizer.json decoder (Replace, ByteFallback, Fuse, Strip one leading space) keeps it."""
        if not run:
            return ""
        text = self.processor.decode(run)
        if not first and self.model.add_dummy_prefix and self.processor.id_to_piece(run[0]).startswith("\u2581"):
            text = " " + text
        return text

    def versions(self) -> dict[str, str]:
        import sentencepiece

        return {"sentencepiece": sentencepiece.__version__}


def tokenizer_from_sentencepiece(model: TokenizerModel) -> tuple[Any, str]:
    """A ``tokenizers.Tokenizer`` converted from the SentencePiece model, as transformers' SpmConverter
    family does when a repo ships only tokenizer.model: BPE (merges recovered from the piece scores) or
    Unigram (the piece scores), byte fallback, the precompiled normalizer, ▁ for spaces."""
    from tokenizers import AddedToken, Regex, Tokenizer, models, normalizers, pre_tokenizers

    sp = model.artifacts.sentencepiece
    assert sp is not None
    unk = sp.unk_piece
    try:
        if sp.model_type == "bpe":
            vocab = {p.piece: i for i, p in reversed(list(enumerate(sp.pieces)))}
            tok = Tokenizer(
                models.BPE(
                    vocab=vocab, merges=_merges(sp, vocab), unk_token=unk, fuse_unk=True, byte_fallback=sp.byte_fallback
                )
            )
        elif sp.model_type == "unigram":
            tok = Tokenizer(
                models.Unigram([(p.piece, p.score) for p in sp.pieces], sp.unk_id if unk else None, sp.byte_fallback)
            )
        else:
            raise BackendUnavailable(f"tokenizers has no converter for a SentencePiece {sp.model_type} model")
        steps: list[Any] = []
        if sp.precompiled_charsmap:
            steps.append(normalizers.Precompiled(sp.precompiled_charsmap))
        if sp.remove_extra_whitespaces:
            # sentencepiece trims and collapses spaces only (after its normalizer), never tabs or newlines
            steps += [normalizers.Replace(Regex(r"\A +| +\z"), ""), normalizers.Replace(Regex(" {2,}"), " ")]
        if sp.model_type == "bpe":
            if sp.add_dummy_prefix:
                steps.append(normalizers.Prepend("\u2581"))
            if sp.escape_whitespaces:
                steps.append(normalizers.Replace(" ", "\u2581"))
        else:
            tok.pre_tokenizer = pre_tokenizers.Metaspace(
                replacement="\u2581", prepend_scheme="always" if sp.add_dummy_prefix else "never", split=True
            )
        if steps:
            tok.normalizer = normalizers.Sequence(steps)
        from tokenizers import decoders

        tok.decoder = decoders.Sequence([_decoder(step) for step in sp.decoder_json["decoders"]])
    except BackendUnavailable:
        raise
    except Exception as exc:  # noqa: BLE001 - tokenizers raises plain Exception on bad input
        raise BackendUnavailable(f"tokenizers cannot build from {sp.name}: {exc}") from None
    specials = special_tokens(model, sp)
    user = {sp.pieces[i].piece for i in sp.ids_of_type(PieceType.USER_DEFINED)}
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials if t not in user])
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in specials if t in user])
    return tok, f"converted from {sp.name} ({sp.model_type}, as transformers' SentencePiece converters do)"


def _decoder(step: dict[str, Any]) -> Any:
    """One step of :attr:`SentencePieceModel.decoder_json` as a tokenizers decoder."""
    from tokenizers import decoders

    kind = step["type"]
    if kind == "Replace":
        return decoders.Replace(step["pattern"]["String"], step["content"])
    if kind == "Strip":
        return decoders.Strip(step["content"], step["start"], step["stop"])
    return getattr(decoders, kind)()


#: Budget of the merge recovery: splits tried in all (a real 262k vocabulary needs ~2M) and the longest
#: piece split (trainers cap pieces at 16 characters by default; a hostile model could hold a 100 MB one).
MAX_MERGE_STEPS = 50_000_000
MAX_MERGE_PIECE_CHARS = 1024


def _merges(sp: SentencePieceModel, vocab: dict[str, int]) -> list[tuple[str, str]]:
    """BPE merges implied by the pieces: every split of a normal piece into two pieces, ordered by
    the piece's score (higher merges first), then by the piece's own id, then by the ids of the two halves.

    Pieces of equal score are merged in id order, as sentencepiece does and as transformers'
    ``SpmConverter.build_tokenizer_from_spm_proto`` ranks them: Mistral's whitespace pieces (runs of 1-16
    ``▁``) all score -1e9, and ordering their merges by the halves' ids instead split runs of 17 or more
    spaces into other pieces (94 of 240 whitespace texts on Mistral SP v1-v7)."""
    found: list[tuple[float, int, int, int, str, str]] = []
    steps = 0
    for piece_id, p in enumerate(sp.pieces):
        if p.type is not PieceType.NORMAL:
            continue
        text = p.piece
        if len(text) > MAX_MERGE_PIECE_CHARS:
            raise BackendUnavailable(
                f"a piece of {len(text)} characters is longer than the {MAX_MERGE_PIECE_CHARS} the converter splits"
            )
        steps += len(text)
        if steps > MAX_MERGE_STEPS:
            raise BackendUnavailable(f"recovering the BPE merges needs more than {MAX_MERGE_STEPS} steps")
        for cut in range(1, len(text)):
            left, right = text[:cut], text[cut:]
            li, ri = vocab.get(left), vocab.get(right)
            if li is not None and ri is not None:
                found.append((-p.score, piece_id, li, ri, left, right))
    found.sort()
    return [(left, right) for *_, left, right in found]
