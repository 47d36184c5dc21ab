"""Running a decoder chain (:mod:`tokaudit.artifacts.decoder_chain`) as the ``tokenizers`` decoders do: token
strings -> text, and, for a chain whose token bytes concatenate, the bytes each token adds in stream order
(:class:`PieceStream`). :mod:`tokaudit.model.text` applies it to ids."""

from __future__ import annotations

import re
from typing import Any

from tokaudit.artifacts.decoder_chain import DecoderChain, Step
from tokaudit.artifacts.token_bytes import Scheme, token_bytes

_BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")

#: WordPiece ``cleanup``: the replacements ``tokenizers`` (and BERT's ``clean_up_tokenization``) make.
_CLEANUP = (
    (" .", "."),
    (" ?", "?"),
    (" !", "!"),
    (" ,", ","),
    (" ' ", "'"),
    (" n't", "n't"),
    (" 'm", "'m"),
    (" do not", " don't"),
    (" 's", "'s"),
    (" 've", "'ve"),
    (" 're", "'re"),
)


def cleanup(text: str) -> str:
    for dirty, clean in _CLEANUP:
        text = text.replace(dirty, clean)
    return text


def decode(chain: DecoderChain, tokens: list[str]) -> str:
    """The text tokenizers' ``decode`` gives for these token strings (added tokens included)."""
    if chain.join:
        return " ".join(tokens)
    for step in chain.steps:
        tokens = apply_step(step, tokens)
    return "".join(tokens)


def apply_step(step: Step, tokens: list[str]) -> list[str]:
    """One step of the chain on the token strings: the exact semantics of tokenizers' decode_chain."""
    k = step.kind
    if k == "ByteLevel":
        data = b"".join(token_bytes(t, Scheme.BYTE_LEVEL) for t in tokens)
        return [data.decode("utf-8", "replace")]
    if k == "Metaspace":
        return [t.replace(step.text, "" if i == 0 and step.strip_first else " ") for i, t in enumerate(tokens)]
    if k == "Replace":
        return [replace(step, t) for t in tokens]
    if k == "ByteFallback":
        return _byte_fallback(tokens)
    if k == "Fuse":
        return ["".join(tokens)]
    if k == "Strip":
        return [_strip(t, step.text, step.start, step.stop) for t in tokens]
    if k == "WordPiece":
        out = []
        for i, t in enumerate(tokens):
            if i:
                t = t.replace(step.text, "", 1) if t.startswith(step.text) else " " + t
            out.append(cleanup(t) if step.cleanup else t)
        return out
    if k == "BPEDecoder":
        return [t.replace(step.text, "" if i == len(tokens) - 1 else " ") for i, t in enumerate(tokens)]
    return tokens


def replace(step: Step, token: str) -> str:
    """A Replace step on one token: a literal string or a regex."""
    if not step.regex:
        return token.replace(step.text, step.content) if step.text else token
    import regex

    return regex.sub(step.text, lambda _m: step.content, token)


def _strip(token: str, content: str, start: int, stop: int) -> str:
    """tokenizers' Strip, quirk included: the kept length is counted in UTF-8 bytes but taken in chars."""
    chars = list(token)
    start_cut = 0
    for c in chars[:start]:
        if c != content:
            break
        start_cut += 1
    stop_cut = 0
    for c in reversed(chars[len(chars) - stop :] if stop else []):
        if c != content:
            break
        stop_cut += 1
    keep = max(len(token.encode("utf-8")) - start_cut - stop_cut, 0)
    return "".join(chars[start_cut : start_cut + keep])


def _strip_start(data: bytes, content: bytes, start: int) -> bytes:
    while start and content and data.startswith(content):
        data = data[len(content) :]
        start -= 1
    return data


def _byte_token(token: str) -> int | None:
    """The byte of a ``<0xNN>`` ByteFallback token."""
    m = _BYTE_TOKEN.fullmatch(token) if len(token) == 6 else None
    return int(m.group(1), 16) if m else None


def _byte_fallback(tokens: list[str]) -> list[str]:
    """``<0xNN>`` runs become their bytes; a run that is not valid UTF-8 is one U+FFFD per byte (as tokenizers)."""
    out: list[str] = []
    run: list[int] = []

    def close() -> None:
        if run:
            try:
                out.append(bytes(run).decode("utf-8"))
            except UnicodeDecodeError:
                out.extend("\ufffd" for _ in run)
            run.clear()

    for t in tokens:
        b = _byte_token(t)
        if b is not None:
            run.append(b)
        else:
            close()
            out.append(t)
    close()
    return out


class PieceStream:
    """The bytes each token adds to the text, in stream order, for a chain whose token bytes
    concatenate (``not_concatenative`` is None): per-token steps on bytes, the first-token rules
    (Metaspace, a Strip after Fuse) applied to the start of the text."""

    def __init__(self, chain: DecoderChain) -> None:
        self.chain = chain
        self.index = 0
        self._cache: dict[str, bytes] = {}  # non-first tokens: a pure function of the token
        fused = False
        #: Strips that apply once to the start of the whole text: [content bytes, remaining].
        self.lead: list[list[Any]] = []
        for s in chain.steps:
            if s.kind == "Strip" and fused and s.start:
                self.lead.append([s.text.encode("utf-8"), s.start])
            if s.kind in ("Fuse", "ByteLevel"):
                fused = True

    def piece(self, token: str | bytes) -> bytes:
        """The next token's bytes (a ``bytes`` token is raw: rank files have no decoder chain)."""
        first = self.index == 0
        self.index += 1
        if isinstance(token, bytes):
            data = token
        elif first:
            data = self._token(token, True)
        else:
            data = self._cache.get(token)  # type: ignore[assignment]  # None is handled on the next line
            if data is None:
                data = self._cache[token] = self._token(token, False)
        for lead in self.lead:
            while lead[1] and lead[0] and data.startswith(lead[0]):
                data = data[len(lead[0]) :]
                lead[1] -= 1
            if data:
                lead[1] = 0  # only the very start of the whole text is stripped
        return data

    def _token(self, token: str, first: bool) -> bytes:
        data: bytes | None = None  # set once a step turned the token into raw bytes
        fused = False
        for s in self.chain.steps:
            k = s.kind
            if k == "ByteLevel":
                if data is None:
                    data = token_bytes(token, Scheme.BYTE_LEVEL)
                fused = True
            elif k == "Fuse":
                fused = True
            elif k == "ByteFallback":
                b = _byte_token(token) if data is None else None
                if b is not None:
                    data = bytes([b])
            elif data is not None:  # a later step on a byte-fallback byte (rare): apply it to the bytes
                if k == "Metaspace":
                    data = data.replace(s.text.encode("utf-8"), b"" if first and s.strip_first else b" ")
                elif k == "Replace" and not s.regex and s.text:
                    data = data.replace(s.text.encode("utf-8"), s.content.encode("utf-8"))
                elif k == "Strip" and not fused:
                    data = _strip_start(data, s.text.encode("utf-8"), s.start)
            elif k == "Metaspace":
                token = token.replace(s.text, "" if first and s.strip_first else " ")
            elif k == "Replace":
                token = replace(s, token)
            elif k == "Strip" and not fused:
                token = _strip(token, s.text, s.start, s.stop)
        return token.encode("utf-8") if data is None else data
