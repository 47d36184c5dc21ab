"""A persistent cache of pure, slow results: the TA305 regex-engine probe of a pattern, the renders of a
chat template in both engines, and what is computed from a vocabulary file alone (TA401's undecodable ids,
fastokens' answer to its configuration), under the hash of the file's bytes (issue 22). Other models of a
fleet share them; a rerun skips them.

Entries are JSON files under the user cache directory (``$XDG_CACHE_HOME/tokaudit/results``, by default
``~/.cache/tokaudit/results``), never in a target. Each is named by a 256-bit hash (BLAKE2b) of what determines the
result: its kind, the inputs, the versions of the libraries involved and the source of tokaudit's modules that compute
it (a changed module misses). ``TOKAUDIT_CACHE=off`` (or ``0``, ``false``, ``no``) turns it off; any other value
is the directory to use.

A cache that cannot lie (issue 34): what is read from it is what this user's tokaudit wrote, or nothing.

* The directory is this user's: created 0700, and refused (the cache is then off for the run) when another
  user owns it or could write it, when another user could write one of its parents (and so swap it: a
  sticky ``/tmp`` is fine), or when it is inside a target being scanned (:func:`exclude`).
* An entry is opened without following a link (``O_NOFOLLOW``, relative to the directory's descriptor), and read
  only when it is a regular file of this user's that no one else can write, with one link, at most
  :data:`MAX_ENTRY_BYTES`; a FIFO, a link to ``/dev/zero`` or a 3 GB file is a miss, not a hang or a blow-up.
* Its JSON must hold its own key, and its value must pass the caller's check (:func:`conforms` for the shape, and
  the caller's ranges: an id beyond the vocabulary is a miss). Anything else is a miss, recomputed and rewritten.
* Writes are atomic (a new file, then ``rename``); a result bigger than :data:`MAX_ENTRY_BYTES` is not kept;
  when the directory grows past :data:`MAX_CACHE_BYTES`, the entries used longest ago are removed (a hit
  refreshes an entry's time).

Writing is best effort: a read-only home changes nothing but the speed. diskcache was considered and not used:
it stores values with pickle (a planted entry would run code) in SQLite; platformdirs would only give the
directory, which is two lines here.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Callable
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
#: Largest entry kept or read (one 10 KB template's renders made a 25.5 MB entry: not worth keeping).
MAX_ENTRY_BYTES = 4 * 1024 * 1024
#: Past this much in the directory, the entries used longest ago are removed down to three quarters of it.
MAX_CACHE_BYTES = 256 * 1024 * 1024
#: The size is looked at on a process's first write, then after every this many bytes written.
_EVICT_EVERY = 16 * 1024 * 1024
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)

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


#: Real paths of the targets loaded by this process: the cache is never inside one.
_targets: set[str] = set()
#: The directory's path -> (its descriptor, its real path), or None when refused; opened once per process.
_dirs: dict[str, tuple[int, str] | None] = {}
_written = [0, 0]  # bytes written by this process, and at the last size check


def exclude(root: Path) -> None:
    """The cache must never be inside ``root`` (a target being read): from now on it is off if it is."""
    try:
        _targets.add(os.path.realpath(root))
    except (OSError, ValueError):
        pass


def _within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def _others_can_write(st: os.stat_result) -> bool:
    """Whether a user other than this one (and root) could change what is in this directory: it belongs to
    someone else, or group/others may write it without the sticky bit (``/tmp`` has it: there a user can only
    rename or remove their own names)."""
    if st.st_uid not in (os.geteuid(), 0):
        return True
    return bool(st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)) and not st.st_mode & stat.S_ISVTX


def _directory() -> tuple[int, str] | None:
    """The cache directory's descriptor and real path, or None (off, unusable, or refused)."""
    root = cache_dir()
    if root is None:
        return None
    if str(root) not in _dirs:
        _dirs[str(root)] = _open_directory(root)
    found = _dirs[str(root)]
    if found is not None and any(_within(found[1], target) for target in _targets):
        return None
    return found


def _open_directory(root: Path) -> tuple[int, str] | None:
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        real = os.path.realpath(root)
        # every parent: no other user could have swapped a name on the way (a link into a target, their own dir)
        parent = os.path.dirname(real)
        while True:
            if _others_can_write(os.stat(parent)):
                return None
            if parent == os.path.dirname(parent):
                break
            parent = os.path.dirname(parent)
        fd = os.open(real, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC)
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            os.close(fd)
            return None  # another user's, or writable by others: entries may be planted
        if stat.S_IMODE(st.st_mode) != 0o700:
            os.chmod(fd, 0o700)  # ours and safe, made private (a directory from an older tokaudit)
    except OSError:
        os.close(fd)
        return None
    return fd, real


class OneOf:
    """A shape (:func:`conforms`) that is any one of ``shapes`` (a set of plain types says the same more briefly)."""

    def __init__(self, *shapes: Any) -> None:
        self.shapes = shapes


def conforms(value: Any, shape: Any) -> bool:
    """Whether JSON ``value`` has ``shape``: a type (``str``, ``int`` (not a bool), ``bool``, ``float``, ``object``:
    anything), ``None``, a set of those or a :class:`OneOf` (any one), ``[shape]`` (a list, every item), a tuple
    ``(s1, s2)`` (a list of exactly those), ``{str: shape}`` (an object, every value), or a dict of keys to shapes
    (an object with those keys; a key ending in ``?`` may be absent)."""
    if shape is None:
        return value is None
    if shape is object:
        return True
    if isinstance(shape, (set, OneOf)):
        return any(conforms(value, s) for s in (shape.shapes if isinstance(shape, OneOf) else shape))
    if isinstance(shape, type):
        if shape is int:
            return type(value) is int
        if shape is float:
            return type(value) in (int, float)
        return type(value) is shape
    if isinstance(shape, list):
        return type(value) is list and all(conforms(item, shape[0]) for item in value)
    if isinstance(shape, tuple):
        return type(value) is list and len(value) == len(shape) and all(conforms(v, s) for v, s in zip(value, shape))
    if isinstance(shape, dict):
        if type(value) is not dict:
            return False
        if len(shape) == 1 and str in shape:
            return all(conforms(v, shape[str]) for v in value.values())
        keys = {k.rstrip("?"): k.endswith("?") for k in shape}
        if not set(value) <= set(keys) or any(k not in value for k, optional in keys.items() if not optional):
            return False
        return all(conforms(value[k.rstrip("?")], s) for k, s in shape.items() if k.rstrip("?") in value)
    raise TypeError(f"not a shape: {shape!r}")


def load(key: str, check: Callable[[Any], bool]) -> Any:
    """The stored value, or None: absent, unreadable, not this user's, too big, corrupted, or failing ``check``
    (a bad entry is removed), or the cache is off."""
    found = _directory()
    if found is None:
        return None
    dfd = found[0]
    name = f"{key}.json"
    try:
        fd = os.open(name, os.O_RDONLY | _O_NOFOLLOW | os.O_NONBLOCK | _O_CLOEXEC, dir_fd=dfd)
    except (OSError, ValueError):
        return None  # absent, or a link (ELOOP)
    try:
        st = os.fstat(fd)
        if (
            not stat.S_ISREG(st.st_mode)
            or st.st_uid != os.geteuid()
            or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
            or st.st_nlink != 1
            or st.st_size > MAX_ENTRY_BYTES
        ):
            return None
        data = os.read(fd, st.st_size + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        entry = json.loads(data)
        value = entry["value"] if type(entry) is dict and entry.get("key") == key else None
        good = value is not None and bool(check(value))
    except (ValueError, RecursionError, KeyError, TypeError, IndexError, AttributeError):
        good = False
    if not good:
        _remove(dfd, name)
        return None
    try:
        os.utime(name, dir_fd=dfd, follow_symlinks=False)  # used now: evicted last
    except (OSError, NotImplementedError):
        pass
    return value


def _remove(dfd: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=dfd)
    except OSError:
        pass


def store(key: str, value: Any) -> None:
    """Write an entry atomically (a reader never sees half of one); failures are ignored, and so is a value over
    MAX_ENTRY_BYTES."""
    found = _directory()
    if found is None:
        return
    dfd = found[0]
    try:
        data = json.dumps({"key": key, "value": value}, ensure_ascii=False).encode("utf-8", "surrogatepass")
    except (ValueError, TypeError, RecursionError):
        return
    if len(data) > MAX_ENTRY_BYTES:
        return
    tmp = f".tmp-{os.getpid()}-{key}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o600, dir_fd=dfd)
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, f"{key}.json", src_dir_fd=dfd, dst_dir_fd=dfd)
    except OSError:
        _remove(dfd, tmp)
        return
    _written[0] += len(data)
    if _written[1] == 0 or _written[0] - _written[1] >= _EVICT_EVERY:
        _written[1] = _written[0]
        evict(dfd)


def evict(dfd: int, limit: int = MAX_CACHE_BYTES) -> int:
    """Remove the entries used longest ago until the directory holds at most three quarters of ``limit`` (when it
    holds more than ``limit``), and temporary files an hour old. Returns how many were removed."""
    import time

    entries: list[tuple[float, int, str]] = []
    removed = 0
    now = time.time()
    try:
        with os.scandir(dfd) as it:
            for item in it:
                try:
                    st = item.stat(follow_symlinks=False)
                except OSError:
                    continue
                if item.name.startswith(".tmp-") and now - st.st_mtime > 3600:
                    _remove(dfd, item.name)
                    removed += 1
                elif item.name.endswith(".json") and stat.S_ISREG(st.st_mode):
                    entries.append((st.st_mtime, st.st_size, item.name))
    except OSError:
        return removed
    total = sum(size for _, size, _ in entries)
    if total <= limit:
        return removed
    for _, size, name in sorted(entries):
        if total <= limit * 3 // 4:
            break
        _remove(dfd, name)
        total -= size
        removed += 1
    return removed
