"""Control-token literals a chat template writes, and whether each reaches the model as its one id.

One reasoning serves both the static check of the template source (TA205
template-token-unregistered) and the check of rendered prompts (TA804 template-token-split), so
the two never disagree:

* ``<|...|>``, ``<｜...｜>`` and ``[UPPER]`` shapes are control tokens by their shape;
* a bare tag (``<think>``, ``</s>``, ``<start_of_turn>``) is a control token only when some file
  registers it (an added or named special token, or the remote code). A tag nothing registers is
  markup the model reads as text: Qwen3's tool instructions write ``<tools>``, ``</tools>``,
  ``<function-name>`` and ``<args-json-object>`` as prose;
* a control token is fine when the serving encoder's added tokens hold it, when transformers
  registers it from a named field, or when it is one vocabulary entry the encoder keeps whole.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tokaudit.checks.common import _CONTROL, find_content
from tokaudit.model.tokenizer_model import FILES, REMOTE_CODE, TokenizerModel

_BARE_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9_.:-]*>")


def literals_in(text: str) -> Iterator[re.Match[str]]:
    """Every control-token-shaped literal in ``text``, in order."""
    return _CONTROL.finditer(text)


@dataclass(frozen=True)
class Verdict:
    """What happens to one control-token literal."""

    text: str
    #: False: markup the tokenizer does not know (not a control token); True: a control token.
    control: bool
    #: True when it reaches the model as its one registered id.
    ok: bool
    token_id: int | None = None
    #: "files", "remote-code" or None: which profile maps its text.
    registered_by: str | None = None
    encoded_ids: list[int] | None = None
    encoder: str | None = None

    def why(self) -> str:
        if self.registered_by == REMOTE_CODE:
            return (
                f"only the remote code registers it (id {self.token_id}); loaders of the data files alone "
                "(e.g. tiktoken-rs) encode it as text"
            )
        if self.registered_by == FILES:
            return f"it is vocabulary entry {self.token_id} but not an added token, and the encoder splits it"
        return "no added token or vocabulary entry has this text"

    def encodes(self) -> str:
        if self.encoded_ids is None:
            return ""
        return f"; it encodes to {len(self.encoded_ids)} ids {self.encoded_ids[:8]}"


class LiteralClassifier:
    """Classifies literals for one model; the encoder is built only when a literal needs encoding."""

    def __init__(self, model: TokenizerModel) -> None:
        self.model = model
        a = model.artifacts
        named: set[str] = set()
        for record in (a.tokenizer_config, a.special_tokens_map):
            if record is not None:
                named |= {t.content for t in record.special.values()} | {
                    t.content for t in record.additional_special_tokens
                }
        self.named = named
        self.registered: Mapping[str, int | None] = {t.content: t.id for t in a.registered_added_tokens}
        if a.gguf_only:  # llama.cpp's special-token cache: what llama_tokenize(parse_special) splits out whole
            from tokaudit.model.llamacpp_load import special_cache

            self.registered = special_cache(a.gguf, model.llamacpp)  # type: ignore[arg-type]  # gguf_only: both are set
        #: every added/special text any file or the remote code knows (not the base vocabulary)
        known = set(self.registered) | named
        for table in model.profiles.values():
            for layer in table.layers:
                if layer is not model.base and len(layer.tokens) <= 1_000_000:
                    known |= {t.decode("utf-8", "replace") for t in layer.tokens.values()}
        self.known = known
        self._cache: dict[str, Verdict] = {}
        self._encoder: Any = None
        self.encoder_name: str | None = None
        self._tried = False

    def _content_id(self, content: str) -> tuple[int | None, str | None]:
        hit = find_content(self.model.files, content)
        if hit is not None:
            return hit[0], FILES
        if REMOTE_CODE in self.model.profiles:
            hit = find_content(self.model.profiles[REMOTE_CODE], content)
            if hit is not None:
                return hit[0], REMOTE_CODE
        return None, None

    def encode(self, text: str) -> list[int] | None:
        """The cheapest encoder of the data files (hf from tokenizer.json, else tiktoken), no special tokens added."""
        if not self._tried:
            self._tried = True
            from tokaudit.backends.registry import load_backends

            a = self.model.artifacts
            name = "hf" if a.tokenizer_json is not None else "llama.cpp" if a.gguf_only else "tiktoken"
            loaded = load_backends(self.model, [name])[0]
            self._encoder, self.encoder_name = loaded.backend, (name if loaded.backend else None)
        if self._encoder is None:
            return None
        from tokaudit.backends.base import call

        out = call(self._encoder.encode, text)
        return list(out.value) if out.ok else None

    def verdict(self, text: str) -> Verdict:
        hit = self._cache.get(text)
        if hit is None:
            hit = self._cache[text] = self._classify(text)
        return hit

    def _classify(self, text: str) -> Verdict:
        if _BARE_TAG.fullmatch(text) and text not in self.known:
            return Verdict(text, control=False, ok=True)
        if text in self.registered:
            return Verdict(text, True, True, self.registered[text], FILES)
        token_id, profile = self._content_id(text)
        if profile == FILES and text in self.named:
            return Verdict(text, True, True, token_id, profile)  # a named special token transformers registers
        ids = self.encode(text)
        if profile == FILES and ids == [token_id]:
            return Verdict(
                text, True, True, token_id, profile, ids, self.encoder_name
            )  # one vocabulary entry, kept whole
        return Verdict(text, True, False, token_id, profile, ids, self.encoder_name)
