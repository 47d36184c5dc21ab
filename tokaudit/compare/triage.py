"""Round-trip triage: which ``decode(encode(text)) != text`` cases are the model's own normalizer at
work (NFC/NFKC, lower-casing, accent stripping, a WordPiece pre-tokenizer dropping whitespace),
which are characters its vocabulary maps to the unknown token, and which are real losses.

A normalizer effect is the same for every backend and every case: one note naming the normalizer,
not an error per backend and case.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tokaudit.model.text import wordpiece_settings
from tokaudit.model.tokenizer_model import TokenizerModel

NORMALIZER, UNKNOWN, REAL = "normalizer", "unknown-token", "real"

#: Pre-tokenizers that discard whitespace (text is split on it, decode puts single spaces back).
_WHITESPACE_DROPPING = {"BertPreTokenizer", "Whitespace", "WhitespaceSplit"}


def _strip_accents(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")


def _drop_controls(text: str) -> str:
    """BertNormalizer's clean_text: "other" characters (Cc, Cf, Cn, Co, Cs) go, tab/newline/return stay."""
    return "".join(c for c in text if not (unicodedata.category(c)[0] == "C" and c not in "\t\n\r"))


@dataclass(frozen=True)
class Triage:
    #: The character-level effects of the model's normalizer, e.g. "NFKC", "BertNormalizer: lower-casing, ...".
    normalizer: str | None
    steps: tuple[Callable[[str], str], ...]
    #: Why whitespace differences are the tokenizer's own (None: they are real losses).
    whitespace: str | None
    unk_token: str | None
    #: Said once in the finding, e.g. "BertTokenizer defaults for do_lower_case (tokenizer_config.json does not set
    #: it)".
    assumption: str | None = None
    #: Other spellings of the unknown token in decoded text (sentencepiece prints "<unk>" as " ⁇ ").
    unk_forms: tuple[str, ...] = ()
    #: Where the dummy-prefix "▁" is added to every text segment between special tokens (tokenizers'
    #: Prepend normalizer, sentencepiece's add_dummy_prefix): decode shows it as a space after each.
    segment_prefix: str | None = None
    specials: tuple[str, ...] = ()

    def canon(self, text: str) -> str:
        for step in self.steps:
            text = step(text)
        return "".join(text.split()) if self.whitespace else text

    def classify(self, text: str, output: str) -> str:
        if (self.steps or self.whitespace) and self.canon(text) == self.canon(output):
            return NORMALIZER
        if self.segment_prefix and self.specials:
            undone = output
            for special in self.specials:  # longest first: "</s>" before "<s>"
                undone = undone.replace(special + " ", special)
            if undone == text or ((self.steps or self.whitespace) and self.canon(undone) == self.canon(text)):
                return NORMALIZER
        forms = ((self.unk_token,) if self.unk_token else ()) + self.unk_forms
        if any(output.count(u) > text.count(u) for u in forms):
            return UNKNOWN
        return REAL


def _library_normalizer(component: Any) -> Callable[[str], str] | None:
    """The tokenizers library's own normalizer for a tokenizer.json ``normalizer`` object (exact, the
    Precompiled SentencePiece charsmap included), or None when it cannot be built."""
    if not isinstance(component, dict):
        return None
    import json

    from tokenizers import Tokenizer

    spec: dict[str, Any] = {
        "version": "1.0",
        "normalizer": component,
        "pre_tokenizer": None,
        "post_processor": None,
        "decoder": None,
        "added_tokens": [],
        "truncation": None,
        "padding": None,
        "model": {"type": "WordLevel", "vocab": {"x": 0}, "unk_token": "x"},
    }
    try:
        normalizer = Tokenizer.from_str(json.dumps(spec)).normalizer
    except BaseException as exc:  # an unusual normalizer tokenizers cannot rebuild (a panic included)
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return None
    return None if normalizer is None else normalizer.normalize_str


def _unicode_form(form: str) -> Callable[[str], str]:
    """unicodedata.normalize to one form, as a step."""
    return lambda t: unicodedata.normalize(form, t)  # type: ignore[arg-type]  # NFC, NFD, NFKC or NFKD: the caller checked


def _effects(component: Any, depth: int = 0) -> tuple[list[str], list[Callable[[str], str]]]:
    """Names of a tokenizer.json normalizer's parts, and Python stand-ins for the character-level ones
    (used only when the library cannot rebuild the normalizer)."""
    names: list[str] = []
    steps: list[Callable[[str], str]] = []
    if not isinstance(component, dict) or depth > 16:
        return names, steps
    kind = component.get("type")
    if kind == "Sequence":
        for sub in (component.get("normalizers") or [])[:64]:
            n, s = _effects(sub, depth + 1)
            names += n
            steps += s
    elif kind in ("NFC", "NFD", "NFKC", "NFKD"):
        names.append(kind)
        steps.append(_unicode_form(kind))
    elif kind == "Precompiled":
        names.append("Precompiled (SentencePiece charsmap, NFKC-like)")
        steps.append(lambda t: unicodedata.normalize("NFKC", t))
    elif kind == "Lowercase":
        names.append("Lowercase")
        steps.append(str.lower)
    elif kind == "StripAccents":
        names.append("StripAccents")
        steps.append(_strip_accents)
    elif kind in ("Replace", "Prepend", "Strip"):
        names.append(
            kind
            + (
                f"({component.get('pattern', {}).get('String', '')!r} → {component.get('content', '')!r})"
                if kind == "Replace" and isinstance(component.get("pattern"), dict)
                else ""
            )
        )
    elif kind == "BertNormalizer":
        lower = bool(component.get("lowercase", True))
        accents = component.get("strip_accents")
        accents = lower if accents is None else bool(accents)
        parts = [
            p
            for p, on in (
                ("lower-casing", lower),
                ("accent stripping", accents),
                ("control characters removed", component.get("clean_text", True)),
            )
            if on
        ]
        names.append("BertNormalizer" + (f" ({', '.join(parts)})" if parts else ""))
        if component.get("clean_text", True):
            steps.append(_drop_controls)
        if lower:
            steps.append(str.lower)
        if accents:
            steps.append(_strip_accents)
    return names, steps


def _pre_tokenizer_kinds(component: Any, depth: int = 0) -> set[str]:
    if not isinstance(component, dict) or depth > 16:
        return set()
    if component.get("type") == "Sequence":
        out: set[str] = set()
        for sub in (component.get("pretokenizers") or [])[:64]:
            out |= _pre_tokenizer_kinds(sub, depth + 1)
        return out
    return {str(component.get("type"))}


def _unk_piece(model: Any) -> str | None:
    """The unknown token of a tokenizer.json model (BPE/WordPiece ``unk_token``, Unigram ``unk_id``)."""
    if not isinstance(model, dict):
        return None
    unk = model.get("unk_token")
    if isinstance(unk, str) and unk:
        return unk
    unk_id, vocab = model.get("unk_id"), model.get("vocab")
    if (
        isinstance(unk_id, int)
        and isinstance(vocab, list)
        and 0 <= unk_id < len(vocab)
        and isinstance(vocab[unk_id], list)
    ):
        return str(vocab[unk_id][0])
    return None


def _unk_surfaces(steps: Any, unk: str | None) -> tuple[str, ...]:
    """What the decoder turns the unknown token into (converted SentencePiece models: " ⁇ ")."""
    out = []
    for step in steps:
        if unk and step.kind == "Replace" and not step.regex and step.text == unk:
            surface = step.content.replace("\u2581", " ").strip()
            if surface:
                out.append(surface)
    return tuple(out)


def _specials(model: TokenizerModel) -> tuple[str, ...]:
    out: dict[str, None] = {}
    for layer in model.files.layers:
        if layer.special:
            for token in list(layer.tokens.values())[:4096]:
                out.setdefault(token.decode("utf-8", "replace"), None)
    return tuple(sorted((t for t in out if t), key=len, reverse=True))


def _with_segments(triage: Triage, model: TokenizerModel, prefix: str | None) -> Triage:
    if prefix is None:
        return triage
    from dataclasses import replace

    specials = _specials(model)
    return replace(triage, segment_prefix=prefix, specials=specials) if specials else triage


def _prepends(component: Any, depth: int = 0) -> bool:
    if not isinstance(component, dict) or depth > 16:
        return False
    if component.get("type") == "Sequence":
        return any(_prepends(sub, depth + 1) for sub in (component.get("normalizers") or [])[:64])
    return component.get("type") == "Prepend"


def triage_for(model: TokenizerModel) -> Triage:
    """The round-trip triage of this model, from the files its base vocabulary comes from."""
    triage = _triage(model)
    a = model.artifacts
    tj = a.tokenizer_json
    if tj is not None and tj.name == model.base.artifact:
        prefix = (
            "the Prepend('▁') normalizer runs on every segment between special tokens"
            if _prepends(tj.raw.get("normalizer"))
            else None
        )
        return _with_segments(triage, model, prefix)
    sp = getattr(a, "sentencepiece", None)
    if sp is not None and sp.name == model.base.artifact and getattr(sp, "add_dummy_prefix", False):
        return _with_segments(
            triage, model, "sentencepiece adds its dummy prefix to every segment between special tokens"
        )
    return triage


def _gguf_triage(model: TokenizerModel) -> Triage:
    """A GGUF alone: the normalizer llama.cpp runs for its vocabulary type. WordPiece (llama.cpp's BERT
    preprocessing: lower-casing, accents stripped, split on whitespace and punctuation) and UGM (the GGUF's
    precompiled SentencePiece charsmap, run by tokenizers' own Precompiled normalizer) change text by design."""
    g = model.artifacts.gguf
    load = model.llamacpp
    assert g is not None and load is not None  # a GGUF alone
    unk_id = load.id_of("unk")
    unk = g.tokens[unk_id].decode("utf-8", "replace") if unk_id is not None else None
    if load.vocab_type == "WPM":
        from tokenizers import normalizers

        bert = normalizers.BertNormalizer(lowercase=True, strip_accents=True, handle_chinese_chars=True)
        return Triage(
            "llama.cpp's WordPiece preprocessing (lower-casing, accent stripping)",
            (bert.normalize_str,),
            "llama.cpp's WordPiece splits on whitespace and punctuation",
            unk,
        )
    if load.vocab_type == "UGM" and g.precompiled_charsmap:
        from tokenizers import normalizers

        try:
            charsmap = normalizers.Precompiled(g.precompiled_charsmap).normalize_str
        except BaseException as exc:  # a charsmap tokenizers refuses (a panic included)
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            return Triage(None, (), None, unk)
        spaces = (
            "llama.cpp's UGM normalizer removes extra whitespace"
            if g.flags.get("remove_extra_whitespaces", True)
            else None
        )
        return Triage("the GGUF's precompiled SentencePiece charsmap", (charsmap,), spaces, unk)
    return Triage(None, (), None, unk)


def _triage(model: TokenizerModel) -> Triage:
    a = model.artifacts
    if a.gguf_only:
        return _gguf_triage(model)
    tj = a.tokenizer_json
    if tj is not None and tj.name == model.base.artifact:
        names, steps = _effects(tj.raw.get("normalizer"))
        library = _library_normalizer(tj.raw.get("normalizer"))
        if library is not None:
            steps = [library]
        dropping = _pre_tokenizer_kinds(tj.raw.get("pre_tokenizer")) & _WHITESPACE_DROPPING
        unk = _unk_piece(tj.raw.get("model"))
        return Triage(
            " → ".join(names) or None,
            tuple(steps),
            f"the {sorted(dropping)[0]} pre-tokenizer splits on whitespace" if dropping else None,
            unk,
            unk_forms=_unk_surfaces(tj.decoder.steps, unk),
        )
    wp = wordpiece_settings(model)
    if wp is not None:
        from tokenizers import normalizers

        bert = normalizers.BertNormalizer(
            lowercase=wp.do_lower_case, strip_accents=wp.strip_accents, handle_chinese_chars=wp.tokenize_chinese_chars
        )
        bert_steps: list[Callable[[str], str]] = [bert.normalize_str]
        unk = "[UNK]" if "[UNK]" in (a.vocab_txt.vocab.values() if a.vocab_txt else ()) else None
        assumption = None
        if wp.defaulted:
            why = (
                "tokenizer_config.json does not set them" if a.tokenizer_config else "there is no tokenizer_config.json"
            )
            assumption = f"BertTokenizer's defaults are assumed for {', '.join(wp.defaulted)} ({why})"
        return Triage(
            wp.describe(),
            tuple(bert_steps),
            "BERT's pre-tokenizer splits on whitespace and punctuation",
            unk,
            assumption,
        )
    sp = getattr(a, "sentencepiece", None)
    if sp is not None and sp.name == model.base.artifact:
        name = getattr(sp, "normalizer", None)
        nfkc = isinstance(name, str) and "nfkc" in name.lower()
        surface = str(getattr(sp, "unk_surface", "") or "").strip()
        sp_steps: tuple[Callable[[str], str], ...] = (lambda t: unicodedata.normalize("NFKC", t),) if nfkc else ()
        try:  # the library's own normalizer (its precompiled charsmap), exact
            import sentencepiece

            processor = sentencepiece.SentencePieceProcessor(model_proto=sp.data)
            sp_steps = (lambda t: processor.normalize(t).replace("\u2581", " "),)
        except Exception:  # noqa: BLE001 - a model the library refuses: keep the NFKC stand-in
            pass
        return Triage(
            f"SentencePiece {name}" if name else None,
            sp_steps,
            "SentencePiece removes extra whitespace" if getattr(sp, "remove_extra_whitespaces", False) else None,
            getattr(sp, "unk_piece", None),
            unk_forms=(surface,) if surface else (),
        )
    return Triage(None, (), None, None)
