"""``fastokens``: Dynamo's hybrid tokenizer. Encode with fastokens (a Rust BPE encoder, loaded
with ``fastokens.Tokenizer.from_file(tokenizer.json)``), decode with HF tokenizers from the same
file, as Dynamo's ``FastTokenizer`` does. Only with the ``fastokens`` extra."""

from __future__ import annotations

from typing import Any

from tokaudit.backends.base import BackendUnavailable
from tokaudit.model.fastokens_probe import probe_fastokens
from tokaudit.model.tokenizer_model import TokenizerModel


class FastokensBackend:
    name = "fastokens"

    def __init__(self, fast: Any, decoder: Any, file: str, version: str | None) -> None:
        self.fast = fast
        self.decoder = decoder
        self.file = file
        self.version = version

    @classmethod
    def load(cls, model: TokenizerModel) -> FastokensBackend:
        tj = model.artifacts.tokenizer_json
        if tj is None:
            raise BackendUnavailable("needs tokenizer.json (the file Dynamo hands fastokens)")
        probe = probe_fastokens(tj.path)
        if not probe.installed:
            raise BackendUnavailable("fastokens is not installed (pip install 'tokaudit[fastokens]')")
        if probe.error is not None:
            raise BackendUnavailable(f"fastokens cannot load {tj.name}: {probe.error} (Dynamo falls back to HF)")
        from tokenizers import Tokenizer

        try:
            decoder = Tokenizer.from_file(str(tj.path))
        except Exception as exc:  # noqa: BLE001 - the decode half is HF tokenizers
            raise BackendUnavailable(f"tokenizers cannot load {tj.name} for decoding: {exc}") from None
        return cls(probe.tokenizer, decoder, tj.name, probe.version)

    def describe(self) -> str:
        return f"fastokens {self.version or ''} encode, tokenizers decode, from {self.file} (Dynamo's hybrid)".replace(
            "  ", " "
        )

    def encode(self, text: str) -> list[int]:
        return list(self.fast.encode(text, add_special_tokens=False).ids)

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [list(e.ids) for e in self.fast.encode_batch(texts, add_special_tokens=False)]

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return self.decoder.decode(ids, skip_special_tokens=skip_special_tokens)

    def decode_batch(self, ids: list[list[int]], skip_special_tokens: bool = False) -> list[str]:
        return self.decoder.decode_batch(ids, skip_special_tokens=skip_special_tokens)

    def versions(self) -> dict[str, str]:
        import tokenizers

        return {"fastokens": self.version or "unknown", "tokenizers": tokenizers.__version__}
