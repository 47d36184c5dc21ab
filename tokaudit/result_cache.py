"""A persistent cache of pure, slow results: the TA305 regex-engine probe of a pattern, the renders of a
chat template in both engines, and what is computed from a vocabulary file alone (TA401's undecodable ids,
fastokens' answer to its configuration), under the hash of the file's bytes (issue 22). Other models of a
fleet share them; a rerun skips them.

Entries are JSON files under the user cache directory (``$XDG_CACHE_HOME/tokaudit/results``, by default
``~/.cache/tokaudit/results``), never in a target. Each is named by a 256-bit hash (BLAKE2b) of what determines the result:
its kind, the inputs, the versions of the libraries involved and the source of tokaudit's modules that compute
it (a changed module misses). An entry that cannot be read or parsed is a miss; writing is best effort
(a read-only home changes nothing but the speed).

``TOKAUDIT_CACHE=off`` (or ``0``, ``false``, ``no``) turns it off; any other value is the directory to use.
"""

from __future__ import annotations

import json
import os
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

try:  # CPython's built-in BLAKE2: importing hashlib starts OpenSSL, ~5 ms of every scan
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - other interpreters
    from hashlib import blake2b

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


@lru_cache(maxsize=None)
def installed_version(dist: str) -> str | None:
    """A distribution's version from its ``NAME-VERSION.dist-info`` directory name (looked up once per process:
    a scan asks for some of them several times, for its report and for the keys of this cache, which is why
    it lives here, in the bottom layer).

    Importing the library or importlib.metadata would cost 15-40 ms of every run's start-up.
    """
    for names in _dist_infos(tuple(sys.path)):
        for name in names:
            if name.lower().startswith(dist + "-"):
                return name[len(dist) + 1 : -len(".dist-info")]
    return None


@lru_cache(maxsize=4)
def _dist_infos(path: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """The ``*.dist-info`` names in each directory of ``path``, in order: each is listed once, not once for every
    distribution a run asks about (seven in a scan: ~3 ms)."""
    out = []
    for entry in path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        out.append(tuple(name for name in names if name.endswith(".dist-info")))
    return tuple(out)


def digest(data: bytes) -> str:
    """A 256-bit content hash (BLAKE2b) as hex."""
    return blake2b(data, digest_size=32).hexdigest()


def _source_digest(module: str) -> bytes:
    """The hash of a module's source file (its code decides the result). A module not imported yet is found,
    not imported: the template engines are imported only when a render misses this cache."""
    found = _sources.get(module)
    if found is None:
        loaded = sys.modules.get(module)
        if loaded is not None:
            path = getattr(loaded, "__file__", None)
        else:
            from importlib.util import find_spec

            spec = find_spec(module)
            path = spec.origin if spec is not None else None
        try:
            found = blake2b(Path(path).read_bytes(), digest_size=32).digest() if path else b"?"
        except OSError:
            found = b"?"
        _sources[module] = found
    return found


def cache_key(kind: str, inputs: Any, modules: tuple[str, ...]) -> str:
    """The name of an entry: ``kind``, the JSON-able ``inputs`` (versions included) and the source of ``modules``."""
    h = blake2b(f"{FORMAT}\0{kind}\0".encode(), digest_size=32)
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
    import tempfile  # only when a result is new

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
