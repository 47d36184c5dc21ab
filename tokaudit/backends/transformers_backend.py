"""``transformers-fast`` / ``transformers-slow``: transformers' Rust tokenizer and its slow path;
``transformers-gguf``: the tokenizer transformers builds from a GGUF file (vLLM's GGUF path).

Only when the optional ``transformers`` extra is installed. The files are read from the local
target directory only (``local_files_only``). Remote code is trusted only when the user passes
``--trust-remote-code``; without it a model that needs remote code is unavailable, with the reason.

"Slow is slow": transformers 5 ignores ``use_fast=False`` for every class it implements in Rust
(checked by hand on 5.23: Llama, Gemma, BERT and GPT-2 layouts all give ``TokenizersBackend``), so
``transformers-slow`` is the class ``AutoTokenizer(use_fast=False)`` gives only when it really is not
the Rust one (transformers 4; the ``SentencePieceBackend``/``PythonBackend`` classes transformers 5
keeps, such as BertGenerationTokenizer; trusted remote code). Otherwise it is unavailable, with the
reason: a fast tokenizer is never called slow. (transformers' generic ``SentencePieceBackend`` is not
substituted: no Llama/Mistral/Gemma config selects it, and its decode leaves byte-fallback pieces as
``<0xNN>`` text; the library under it is the ``sentencepiece`` backend.) The loaded class is named.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tokaudit.backends.base import BackendUnavailable

#: What each backend name asks AutoTokenizer for.
USE_FAST = {"transformers-fast": True, "transformers-slow": False}


def load_gguf_tokenizer(path: Path) -> Any:
    """``AutoTokenizer.from_pretrained(dir, gguf_file=name)``: transformers rebuilding a tokenizer from the
    GGUF's metadata, as vLLM does when it serves a GGUF. transformers 5 reads GGUF only with torch
    installed (its GGUF reader, ``transformers/integrations/gguf/reader.py``, imports torch; the older
    architectures go through the ``gguf`` package as well): without torch the backend is unavailable."""
    transformers = _quiet_import()
    from importlib.util import find_spec

    if find_spec("torch") is None:
        raise BackendUnavailable(
            f"transformers {transformers.__version__} reads a GGUF only with torch installed "
            "(its GGUF reader imports torch): pip install torch"
        )
    try:
        return transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name, local_files_only=True)
    except BaseException as exc:  # loaders raise anything, Rust panics included
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        raise BackendUnavailable(
            f"AutoTokenizer(gguf_file={path.name}) failed: {type(exc).__name__}: {first}"
        ) from None


def _quiet_import() -> Any:
    """Import transformers without its import-time advisories on stderr (e.g. "PyTorch was not found")."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        import transformers
    except ImportError:
        raise BackendUnavailable("transformers is not installed (pip install 'tokaudit[transformers]')") from None
    return transformers


def ignores_use_fast(version: str) -> bool:
    """Whether this transformers' ``AutoTokenizer.from_pretrained`` drops ``use_fast`` before it reads anything
    (``kwargs.pop("use_fast", None)``, "V5: Always use fast tokenizers": read in 5.23.0 and 5.24.0), so that
    ``use_fast=True`` and ``use_fast=False`` are one and the same load. Older versions honour it; a major not read
    yet (6) gets its two loads, which is correct whatever it does."""
    parts = version.split(".")
    try:
        return (5, 23) <= (int(parts[0]), int(parts[1])) < (6, 0)
    except (IndexError, ValueError):
        return False


#: AutoTokenizer loads one :func:`load_backends` call made, by (root, use_fast, trust_remote_code): the tokenizer,
#: or the reason it is unavailable. transformers-fast and -slow share one when :func:`ignores_use_fast`.
AutoLoads = dict[tuple[Path, bool | None, bool], Any]


def load_auto_tokenizer(root: Path, use_fast: bool, trust_remote_code: bool, loads: AutoLoads | None = None) -> Any:
    """``AutoTokenizer.from_pretrained`` on a local directory; every failure is a ``BackendUnavailable``.
    ``loads``: the loads already made in this call (a tiktoken conversion takes transformers seconds), reused."""
    transformers = _quiet_import()
    if loads is None:
        return _auto_tokenizer(transformers, root, use_fast, trust_remote_code)
    key = (root, None if ignores_use_fast(transformers.__version__) else use_fast, trust_remote_code)
    if key not in loads:
        try:
            loads[key] = _auto_tokenizer(transformers, root, use_fast, trust_remote_code)
        except BackendUnavailable as exc:
            loads[key] = exc
    loaded = loads[key]
    if isinstance(loaded, BackendUnavailable):
        raise BackendUnavailable(str(loaded)) from None
    return loaded


def _auto_tokenizer(transformers: Any, root: Path, use_fast: bool, trust_remote_code: bool) -> Any:
    try:
        return transformers.AutoTokenizer.from_pretrained(
            str(root), use_fast=use_fast, trust_remote_code=trust_remote_code, local_files_only=True
        )
    except BaseException as exc:  # loaders raise anything, Rust panics included
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        if not trust_remote_code and "trust_remote_code" in str(exc):
            raise BackendUnavailable(
                f"needs the model's remote code; pass --trust-remote-code to run it ({first})"
            ) from None
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


def _config_class(root: Path) -> str | None:
    import json

    try:
        config = json.loads((root / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    name = config.get("tokenizer_class") if isinstance(config, dict) else None
    return name if isinstance(name, str) else None


def load_slow_tokenizer(root: Path, trust_remote_code: bool, loads: AutoLoads | None = None) -> Any:
    """transformers' slow (not Rust) tokenizer for the directory, or :class:`BackendUnavailable` saying why.

    transformers 5 has no slow variant of most classes (Llama, Gemma, BERT, GPT-2: ``use_fast=False``
    still gives the Rust class); it keeps slow classes only where no Rust one exists (the
    ``SentencePieceBackend`` / ``PythonBackend`` subclasses, e.g. BertGenerationTokenizer, and
    remote-code tokenizers), and ``AutoTokenizer(use_fast=False)`` returns those."""
    transformers = _quiet_import()
    remote = _has_remote_code(root)
    named = _config_class(root)
    rust = getattr(transformers, "TokenizersBackend", None)
    cls = getattr(transformers, named, None) if named else None
    known_rust = isinstance(cls, type) and rust is not None and issubclass(cls, rust)
    got = named if known_rust else None
    # Loading is skipped where the answer is known: a class transformers implements only in Rust, or
    # remote code that may not run (transformers 5 then converts the files to its Rust class itself).
    if not known_rust and (trust_remote_code or not remote):
        tok = load_auto_tokenizer(root, False, trust_remote_code, loads)
        if not getattr(tok, "is_fast", False):
            return tok
        got = type(tok).__name__
    hint = ""
    if remote and not trust_remote_code:
        hint = "; the model's remote tokenizer class may be slow: pass --trust-remote-code to run it"
    elif (root / "tokenizer.model").is_file():
        hint = "; the library under transformers' SentencePiece path is compared as the sentencepiece backend"
    raise BackendUnavailable(
        f"transformers {transformers.__version__} has no slow tokenizer for this model: AutoTokenizer(use_fast=False) "
        f"gives the Rust {got or 'TokenizersBackend'}{hint}"
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
    def load(
        cls, name: str, root: Path, trust_remote_code: bool = False, loads: AutoLoads | None = None
    ) -> TransformersBackend:
        use_fast = USE_FAST[name]
        if use_fast:
            return cls(name, load_auto_tokenizer(root, True, trust_remote_code, loads), True)
        return cls(name, load_slow_tokenizer(root, trust_remote_code, loads), False)

    @classmethod
    def load_gguf(cls, path: Path) -> TransformersBackend:
        """``transformers-gguf``: the tokenizer transformers (and so vLLM) builds from a GGUF file."""
        tokenizer = load_gguf_tokenizer(path)
        return cls("transformers-gguf", tokenizer, bool(getattr(tokenizer, "is_fast", False)))

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def encode_prompt(self, text: str) -> list[int]:
        """add_special_tokens=True, the default of transformers' encode (vLLM and SGLang's completions path)."""
        return list(self.tokenizer.encode(text, add_special_tokens=True))

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [list(x) for x in self.tokenizer(texts, add_special_tokens=False)["input_ids"]]

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=skip_special_tokens)

    def decode_batch(self, ids: list[list[int]], skip_special_tokens: bool = False) -> list[str]:
        return self.tokenizer.batch_decode(ids, skip_special_tokens=skip_special_tokens)

    def describe(self) -> str:
        """What this load really is, e.g. "TokenizersBackend (fast)", and whether it is what was asked for."""
        got = f"{self.loaded_class} ({'fast' if self.is_fast else 'slow'})"
        if self.is_fast != self.requested_fast:
            got += f", asked for use_fast={self.requested_fast}"
        return got

    def versions(self) -> dict[str, str]:
        import transformers

        return {"transformers": transformers.__version__}
