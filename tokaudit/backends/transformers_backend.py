"""``transformers-fast`` / ``transformers-slow``: transformers' Rust tokenizer and its slow path.

Only when the optional ``transformers`` extra is installed. The files are read from the local
target directory only (``local_files_only``). Remote code is trusted only when the user passes
``--trust-remote-code``; without it a model that needs remote code is unavailable, with the reason.

"Slow is slow": transformers 5 ignores ``use_fast=False`` (AutoTokenizer returns its Rust
``TokenizersBackend`` anyway; checked by hand on 5.23 for Llama, Gemma, BERT and GPT-2 layouts), so
``transformers-slow`` picks the slow path explicitly: the class ``AutoTokenizer(use_fast=False)``
gives when it really is not the Rust one (transformers 4, remote-code tokenizers), else
``SentencePieceBackend`` (the ``sentencepiece`` library) on a SentencePiece ``tokenizer.model``. When
neither exists the backend is unavailable, with the reason; a fast tokenizer is never called slow.
The loaded class is named in the output.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tokaudit.backends.base import BackendUnavailable

#: What each backend name asks AutoTokenizer for.
USE_FAST = {"transformers-fast": True, "transformers-slow": False}


def _quiet_import() -> Any:
    """Import transformers without its import-time advisories on stderr (e.g. "PyTorch was not found")."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        import transformers
    except ImportError:
        raise BackendUnavailable("transformers is not installed (pip install 'tokaudit[transformers]')") from None
    return transformers


def load_auto_tokenizer(root: Path, use_fast: bool, trust_remote_code: bool) -> Any:
    """``AutoTokenizer.from_pretrained`` on a local directory; every failure is a ``BackendUnavailable``."""
    transformers = _quiet_import()
    try:
        return transformers.AutoTokenizer.from_pretrained(
            str(root), use_fast=use_fast, trust_remote_code=trust_remote_code, local_files_only=True
        )
    except BaseException as exc:  # noqa: BLE001 - loaders raise anything, Rust panics included
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        if not trust_remote_code and "trust_remote_code" in str(exc):
            raise BackendUnavailable(f"needs the model's remote code; pass --trust-remote-code to run it ({first})") from None
        raise BackendUnavailable(f"AutoTokenizer failed: {type(exc).__name__}: {first}") from None


def _has_remote_code(root: Path) -> bool:
    import json

    if any(root.glob("tokenization_*.py")):
        return True
    try:
        config = json.loads((root / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and isinstance(config.get("auto_map"), dict)


def load_slow_tokenizer(root: Path, trust_remote_code: bool) -> Any:
    """transformers' slow (not Rust) tokenizer for the directory, or :class:`BackendUnavailable` saying why."""
    transformers = _quiet_import()
    major = int(transformers.__version__.split(".")[0])
    got = None
    remote = _has_remote_code(root)
    # 5.x returns the Rust class for use_fast=False unless the model's own (remote) class is run: no need to load it
    if major < 5 or (remote and trust_remote_code):
        tok = load_auto_tokenizer(root, False, trust_remote_code)
        if not getattr(tok, "is_fast", False):
            return tok
        got = type(tok).__name__
    model_file = root / "tokenizer.model"
    backend = getattr(transformers, "SentencePieceBackend", None)
    if backend is not None and model_file.is_file():
        try:
            return backend.from_pretrained(str(root), local_files_only=True)
        except BaseException as exc:  # noqa: BLE001 - a tokenizer.model that is not SentencePiece (GLM-4's tiktoken ranks), a panic
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            first = (str(exc).strip().splitlines() or [""])[0][:200]
            raise BackendUnavailable(f"SentencePieceBackend cannot load tokenizer.model: {type(exc).__name__}: {first}") from None
    said = got or "TokenizersBackend"
    hint = "; the model's remote tokenizer class may be slow: pass --trust-remote-code to run it" if remote and not trust_remote_code else ""
    raise BackendUnavailable(
        f"transformers {transformers.__version__} has no slow tokenizer for this model: AutoTokenizer(use_fast=False) "
        f"gives the Rust {said}, and there is no SentencePiece tokenizer.model for SentencePieceBackend{hint}"
    )


class TransformersBackend:
    def __init__(self, name: str, tokenizer: Any, requested_fast: bool) -> None:
        self.name = name
        self.tokenizer = tokenizer
        self.requested_fast = requested_fast
        #: The class AutoTokenizer really produced, e.g. ``TokenizersBackend`` or ``GPT2Tokenizer``.
        self.loaded_class = type(tokenizer).__name__
        self.is_fast = bool(getattr(tokenizer, "is_fast", False))

    @classmethod
    def load(cls, name: str, root: Path, trust_remote_code: bool = False) -> TransformersBackend:
        use_fast = USE_FAST[name]
        if use_fast:
            return cls(name, load_auto_tokenizer(root, True, trust_remote_code), True)
        return cls(name, load_slow_tokenizer(root, trust_remote_code), False)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [list(x) for x in self.tokenizer(texts, add_special_tokens=False)["input_ids"]]

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=skip_special_tokens)

    def decode_batch(self, ids: list[list[int]], skip_special_tokens: bool = False) -> list[str]:
        return self.tokenizer.batch_decode(ids, skip_special_tokens=skip_special_tokens)

    def describe(self) -> str:
        """"TokenizersBackend (fast)": what this load really is, and whether it is what was asked for."""
        got = f"{self.loaded_class} ({'fast' if self.is_fast else 'slow'})"
        if self.is_fast != self.requested_fast:
            got += f", asked for use_fast={self.requested_fast}"
        elif not self.is_fast and self.loaded_class == "SentencePieceBackend":
            got += ": the sentencepiece library under transformers (AutoTokenizer ignores use_fast=False)"
        return got

    def versions(self) -> dict[str, str]:
        import transformers

        return {"transformers": transformers.__version__}
