"""Tokenize a rendered prompt as the serving stack does: special tokens in the text become their ids,
and the stack adds what its post-processor (tokenizer.json) or ``add_bos_token`` (tokenizer_config.json)
adds in front."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tokaudit.checks.common import find_content
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.template.source import add_bos_token, special_token_context


@dataclass(frozen=True)
class Prefix:
    """The token the stack puts in front of every prompt, and which setting says so."""

    token: str
    token_id: int | None
    setting: str


def _template_processing_first(processor: Any) -> tuple[str, int | None] | None:
    """The first special token a post-processor prepends to a single sequence (TemplateProcessing, Bert, Roberta)."""
    if not isinstance(processor, dict):
        return None
    kind = processor.get("type")
    if kind == "Sequence":
        for part in processor.get("processors") or []:
            found = _template_processing_first(part)
            if found is not None:
                return found
        return None
    if kind == "TemplateProcessing":
        single = processor.get("single") or []
        first = single[0] if single and isinstance(single[0], dict) else {}
        special = first.get("SpecialToken") if isinstance(first, dict) else None
        if not isinstance(special, dict) or not isinstance(special.get("id"), str):
            return None
        entry = (processor.get("special_tokens") or {}).get(special["id"]) or {}
        ids = entry.get("ids") if isinstance(entry, dict) else None
        return special["id"], ids[0] if isinstance(ids, list) and ids and isinstance(ids[0], int) else None
    if kind in ("BertProcessing", "RobertaProcessing"):
        cls = processor.get("cls")
        if isinstance(cls, list) and len(cls) == 2 and isinstance(cls[0], str) and isinstance(cls[1], int):
            return cls[0], cls[1]
    return None


def prepended(model: TokenizerModel) -> Prefix | None:
    """What the serving stack prepends: tokenizer.json's post-processor when there is one, else add_bos_token."""
    tj = model.artifacts.tokenizer_json
    if model.artifacts.gguf_only:
        g = model.artifacts.gguf
        load = model.llamacpp  # set: the model is a GGUF
        assert g is not None and load is not None
        bos = load.id_of("bos")
        if not load.flags.get("add_bos") or bos is None:
            return None
        return Prefix(
            g.tokens[bos].decode("utf-8", "replace"), bos, f"{g.path.name} add_bos ({load.flag_origin['add_bos']})"
        )
    if tj is not None:
        found = _template_processing_first(tj.raw.get("post_processor"))
        if found is not None:
            return Prefix(found[0], found[1], f"{tj.name} post_processor")
        return None
    if add_bos_token(model):
        bos_text = special_token_context(model).get("bos_token")
        if bos_text is not None:
            hit = find_content(model.files, bos_text)
            return Prefix(bos_text, hit[0] if hit else None, "tokenizer_config.json add_bos_token")
    return None


class ServingEncoder:
    """Full-prompt tokenization, built on first use: ``tokenizers`` with add_special_tokens (its
    post-processor) from tokenizer.json, else tiktoken/hf from the vocabulary files plus add_bos_token."""

    def __init__(self, model: TokenizerModel) -> None:
        self.model = model
        self.prefix = prepended(model)
        self._encode: Any = None
        self.name: str | None = None
        self.error: str | None = None
        #: the ``tokenizers.Tokenizer`` it encodes with, when it is one (the parser round trip decodes with it too)
        self.tokenizer: Any = None
        self._tried = False

    def _load(self) -> None:
        self._tried = True
        tj = self.model.artifacts.tokenizer_json
        if tj is not None:
            from tokaudit.backends.base import call
            from tokaudit.backends.hf_backend import tokenizer_from_parsed
            from tokenizers import Tokenizer

            # from what load_model parsed (the same tokenizer, without parsing 33 MB again for Gemma 3), but
            # a file with a BOM goes to from_file, which refuses it as the serving stacks' loaders do
            with tj.path.open("rb") as f:
                bom = f.read(3) == b"\xef\xbb\xbf"
            tok = None if bom else tokenizer_from_parsed(tj)
            if tok is None:
                out = call(Tokenizer.from_file, str(tj.path))
                if not out.ok:
                    self.error = f"tokenizers cannot load {tj.name}: {out.describe()}"
                    return
                tok = out.value
            self._encode = lambda text: tok.encode(text, add_special_tokens=True).ids
            self.tokenizer = tok
            self.name = f"hf ({tj.name}, add_special_tokens)"
            return
        from tokaudit.backends.registry import load_backends

        if self.model.artifacts.gguf_only:  # llama.cpp's server: specials parsed, BOS per the GGUF's flags
            loaded = load_backends(self.model, ["llama.cpp"])[0]
            if loaded.backend is None:
                self.error = f"llama.cpp: {loaded.unavailable}"
                return
            self._encode = loaded.backend.encode_prompt  # type: ignore[attr-defined]  # LlamaCppBackend's own method
            self.name = "llama.cpp (llama_tokenize, add_special and parse_special)"
            return
        backend_name = "tiktoken" if self.model.artifacts.tiktoken is not None else "hf"
        loaded = load_backends(self.model, [backend_name])[0]
        if loaded.backend is None:
            self.error = f"{backend_name}: {loaded.unavailable}"
            return
        backend = loaded.backend
        first = [self.prefix.token_id] if self.prefix is not None and self.prefix.token_id is not None else []
        self._encode = lambda text: first + list(backend.encode(text))
        self.name = backend_name + (f" + {self.prefix.setting}" if first and self.prefix is not None else "")

    def encode(self, text: str) -> list[int] | None:
        """The ids, or None when no encoder can be built or it fails on this text (``error`` says why)."""
        if not self._tried:
            self._load()
        if self._encode is None:
            return None
        from tokaudit.backends.base import call

        out = call(self._encode, text)
        if not out.ok:
            self.error = out.describe()
            return None
        return list(out.value)
