"""A tokenizer's decoder chain as its files declare it: the steps of a tokenizer.json ``decoder`` (or the one
transformers implies for vocab.txt / vocab.json), as data. Running the chain is :mod:`tokaudit.model.decoding`."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

#: Decoder types emulated; any other makes the chain ``unsupported``.
KNOWN_DECODERS = frozenset(
    {"ByteLevel", "Metaspace", "Replace", "ByteFallback", "Fuse", "Strip", "WordPiece", "BPEDecoder"}
)


@dataclass(frozen=True)
class Step:
    """One decoder of the chain. ``kind`` is the tokenizers type name; the other fields are its options."""

    kind: str
    #: Metaspace replacement / Replace pattern / Strip content / WordPiece prefix / BPEDecoder suffix.
    text: str = ""
    #: Replace: the replacement; ``regex``: the pattern is a regex rather than a literal string.
    content: str = ""
    regex: bool = False
    #: Metaspace: drop the replacement char in the first token (prepend_scheme first/always).
    strip_first: bool = False
    #: Strip: how many ``text`` chars to remove at the start / end; WordPiece: cleanup.
    start: int = 0
    stop: int = 0
    cleanup: bool = False

    def describe(self) -> str:
        if self.kind == "Metaspace":
            return f"Metaspace({self.text!r}{', first token stripped' if self.strip_first else ''})"
        if self.kind == "Replace":
            return f"Replace({self.text!r} → {self.content!r})"
        if self.kind == "Strip":
            return f"Strip({self.text!r}, {self.start}, {self.stop})"
        if self.kind == "WordPiece":
            return f"WordPiece({self.text!r}{', cleanup' if self.cleanup else ''})"
        if self.kind == "BPEDecoder":
            return f"BPEDecoder({self.text!r})"
        return self.kind


@dataclass(frozen=True)
class DecoderChain:
    """How a tokenizer turns token strings into text (tokenizer.json ``decoder``, or the implied one of
    vocab.txt / vocab.json). ``steps`` empty with ``join=True``: no decoder, tokens joined by spaces."""

    steps: tuple[Step, ...]
    #: Where the chain comes from, e.g. "tokenizer.json decoder" or "BERT default (vocab.txt)".
    source: str
    #: No decoder at all: tokenizers joins the tokens with single spaces.
    join: bool = False
    #: Decoder types that are not emulated (empty when every step is).
    unsupported: tuple[str, ...] = ()

    def describe(self) -> str:
        if self.join:
            return "none (tokens joined with spaces)"
        return " → ".join(s.describe() for s in self.steps) or "none"

    @cached_property
    def not_concatenative(self) -> str | None:
        """Why token bytes do not simply concatenate to the text, or None when they do (then
        :class:`PieceStream` yields the bytes each token adds)."""
        if self.unsupported:
            return f"the decoder {', '.join(self.unsupported)} is not emulated"
        if self.join:
            return "the tokenizer has no decoder: tokens are joined with spaces"
        fused = False
        for s in self.steps:
            if s.kind == "WordPiece":
                return (
                    "WordPiece puts a space before every token that does not start with '##': token bytes do not "
                    "concatenate to the text"
                )
            if s.kind == "BPEDecoder":
                return (
                    "BPEDecoder's suffix becomes a space except on the last token: token bytes do not concatenate to "
                    "the text"
                )
            if s.kind == "Replace" and fused and (s.regex or len(s.text) != 1):
                return "a Replace decoder after Fuse can match across tokens"
            if s.kind == "Strip" and s.stop and fused:
                return "a Strip decoder removes characters at the end of the whole text"
            if s.kind in ("Fuse", "ByteLevel"):
                fused = True
        return None


def parse_decoder(component: Any, source: str) -> DecoderChain:
    """The chain of a tokenizer.json ``decoder`` object (None: no decoder)."""
    if component is None:
        return DecoderChain((), source, join=True)
    steps: list[Step] = []
    unsupported: list[str] = []

    def walk(part: Any, depth: int) -> None:
        if not isinstance(part, dict) or depth > 16:
            unsupported.append(type(part).__name__)
            return
        kind = part.get("type")
        if kind == "Sequence":
            for sub in (part.get("decoders") or [])[:256]:
                walk(sub, depth + 1)
            return
        if kind not in KNOWN_DECODERS:
            unsupported.append(str(kind))
            return
        if kind == "Metaspace":
            scheme = part.get("prepend_scheme")
            if scheme is None:  # files older than tokenizers 0.14: add_prefix_space
                scheme = "always" if part.get("add_prefix_space", True) else "never"
            steps.append(Step(kind, text=str(part.get("replacement") or "\u2581"), strip_first=scheme != "never"))
        elif kind == "Replace":
            pattern = part.get("pattern") or {}
            is_regex = "Regex" in pattern
            steps.append(
                Step(
                    kind,
                    text=str(pattern.get("Regex", pattern.get("String", ""))),
                    content=str(part.get("content", "")),
                    regex=is_regex,
                )
            )
        elif kind == "Strip":
            steps.append(
                Step(
                    kind, text=str(part.get("content", " ")), start=_int(part.get("start")), stop=_int(part.get("stop"))
                )
            )
        elif kind == "WordPiece":
            steps.append(Step(kind, text=str(part.get("prefix", "##")), cleanup=bool(part.get("cleanup", True))))
        elif kind == "BPEDecoder":
            steps.append(Step(kind, text=str(part.get("suffix", "</w>"))))
        else:
            steps.append(Step(kind))

    walk(component, 0)
    return DecoderChain(tuple(steps), source, unsupported=tuple(unsupported))


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 20 else 0


#: The decoders transformers builds for the slow vocabulary files.
WORDPIECE_DEFAULT = DecoderChain(
    (Step("WordPiece", text="##", cleanup=True),), "WordPiece (vocab.txt, as BertTokenizer)"
)
BYTE_LEVEL_DEFAULT = DecoderChain((Step("ByteLevel"),), "ByteLevel (vocab.json + merges.txt, as GPT2Tokenizer)")
