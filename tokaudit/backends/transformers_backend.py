"""``transformers-fast`` / ``transformers-slow``: ``AutoTokenizer`` with ``use_fast=True`` / ``False``.

Only when the optional ``transformers`` extra is installed. The files are read from the local
target directory only (``local_files_only``). Remote code is trusted only when the user passes
``--trust-remote-code``; without it a model that needs remote code is unavailable, with the reason.
The class each load really produced is recorded: transformers v5 ignores ``use_fast=False`` and
returns its Rust ``TokenizersBackend`` anyway, and under concurrent loads it has been seen to
produce its Python backend instead (see the seeds), so "slow" is only a request.
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
        return cls(name, load_auto_tokenizer(root, use_fast, trust_remote_code), use_fast)

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
        return got

    def versions(self) -> dict[str, str]:
        import transformers

        return {"transformers": transformers.__version__}
