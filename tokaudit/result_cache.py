"""A persistent cache of pure, slow results: the TA305 regex-engine probe of a pattern, the renders of a
chat template in both engines (issue 22). Other models of a fleet share them; a rerun skips them.

Entries are JSON files under the user cache directory (``$XDG_CACHE_HOME/tokaudit/results``, by default
``~/.cache/tokaudit/results``), never in a target. Each is named by the SHA-256 of what determines the result:
its kind, the inputs, the versions of the libraries involved and the source of tokaudit's modules that compute
it (a changed module misses). An entry that cannot be read or parsed is a miss; writing is best effort
(a read-only home changes nothing but the speed).

``TOKAUDIT_CACHE=off`` (or ``0``, ``false``, ``no``) turns it off; any other value is the directory to use.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ENV = "TOKAUDIT_CACHE"
_OFF = frozenset({"off", "0", "false", "no"})
#: Bumped when the layout of entries changes.
FORMAT = 1

_sources: dict[str, bytes] = {}


def cache_dir() -> Path | None:
    """Where entries live, or None when the cache is turned off."""
    value = os.environ.get(ENV, "").strip()
    if value.lower() in _OFF:
        return None
    if value:
        return Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tokaudit" / "results"


def _source_digest(module: str) -> bytes:
    """SHA-256 of a loaded module's source file (its code decides the result)."""
    digest = _sources.get(module)
    if digest is None:
        path = getattr(sys.modules.get(module), "__file__", None)
        try:
            digest = hashlib.sha256(Path(path).read_bytes()).digest() if path else b"?"
        except OSError:
            digest = b"?"
        _sources[module] = digest
    return digest


def cache_key(kind: str, inputs: Any, modules: tuple[str, ...]) -> str:
    """The name of an entry: ``kind``, the JSON-able ``inputs`` (versions included) and the source of ``modules``."""
    h = hashlib.sha256(f"{FORMAT}\0{kind}\0".encode())
    h.update(json.dumps(inputs, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    for module in modules:
        h.update(_source_digest(module))
    return f"{kind}-{h.hexdigest()}"


def load(key: str) -> Any:
    """The stored value, or None (absent, unreadable, corrupted, or the cache is off)."""
    root = cache_dir()
    if root is None:
        return None
    try:
        entry = json.loads((root / f"{key}.json").read_bytes())
    except (OSError, ValueError):
        return None
    return entry.get("value") if isinstance(entry, dict) and entry.get("key") == key else None


def store(key: str, value: Any) -> None:
    """Write an entry atomically (a reader never sees half of one); failures are ignored."""
    root = cache_dir()
    if root is None:
        return
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=root, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(json.dumps({"key": key, "value": value}, ensure_ascii=False).encode("utf-8", "surrogatepass"))
            os.replace(tmp, root / f"{key}.json")
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, ValueError, TypeError):
        return
