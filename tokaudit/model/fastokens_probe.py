"""Can Dynamo's optional fast encoder (fastokens) load this tokenizer.json?

Dynamo's ``--dyn-tokenizer-backend fastokens`` (``DYN_TOKENIZER_BACKEND=fastokens``) encodes with
fastokens and decodes with HF tokenizers; when fastokens cannot load the file it falls back to HF
without saying so. The only way to know is to try: the answer is fastokens' own error message.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

#: How Dynamo selects the hybrid encoder.
DYNAMO_FLAG = "--dyn-tokenizer-backend fastokens (DYN_TOKENIZER_BACKEND=fastokens)"


@dataclass(frozen=True)
class FastokensProbe:
    #: False when the fastokens package is not installed (nothing was checked).
    installed: bool
    #: fastokens' own words when it refuses the file, else None.
    error: str | None
    version: str | None = None
    tokenizer: Any = None

    @property
    def loads(self) -> bool:
        return self.installed and self.error is None


def _version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fastokens")
    except PackageNotFoundError:
        return None


@lru_cache(maxsize=8)
def _probe(path: str, _mtime_ns: int, _size: int) -> FastokensProbe:
    try:
        import fastokens
    except ImportError:
        return FastokensProbe(False, None)
    try:
        tok = fastokens.Tokenizer.from_file(path)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - any refusal, Rust panics included, is the answer
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        return FastokensProbe(True, first or type(exc).__name__, _version())
    return FastokensProbe(True, None, _version(), tok)


def probe_fastokens(path: Path) -> FastokensProbe:
    """Try ``fastokens.Tokenizer.from_file`` once per file version (cached: scan's loader table,
    TA306 and the backend share one load)."""
    try:
        st = path.stat()
    except OSError as exc:
        return FastokensProbe(True, f"cannot read {path.name}: {exc.strerror or exc}")
    return _probe(str(path), st.st_mtime_ns, st.st_size)
