"""Shared pieces of the parsers: provenance, added-token records, safe file reading."""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from tokaudit.errors import InputError

try:  # a faster parser for the large files (tokenizer.json: ~35 MB); json decides whenever they could differ
    import orjson as _orjson
except ImportError:  # pragma: no cover - a dependency, but the stdlib path is complete on its own
    _orjson = None  # type: ignore[assignment]

#: Largest id (or vocabulary size) we accept from a file; beyond it the value is nonsense and
#: only ranges (never per-id structures) could represent it anyway.
MAX_ID = 2**63 - 1


@dataclass(frozen=True)
class Provenance:
    """Where a fact came from: a file and, when known, a 1-based line (and column) or a JSON key path."""

    file: str
    line: int | None = None
    key: str | None = None
    #: 1-based, in characters; set with the line of a JSON key (see :mod:`tokaudit.artifacts.json_positions`).
    column: int | None = None

    def __str__(self) -> str:
        if self.line is not None:
            return f"{self.file}:{self.line}"
        if self.key is not None:
            return f"{self.file} ({self.key})"
        return self.file

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"file": self.file}
        if self.line is not None:
            out["line"] = self.line
        if self.column is not None:
            out["column"] = self.column
        if self.key is not None:
            out["key"] = self.key
        return out


@dataclass(frozen=True)
class AddedToken:
    """An added/special token as declared by one file (tokenizer.json, tokenizer_config.json, ...)."""

    id: int | None
    content: str
    special: bool | None
    source: Provenance
    lstrip: bool | None = None
    rstrip: bool | None = None
    normalized: bool | None = None
    single_word: bool | None = None

    def flags(self) -> dict[str, bool | None]:
        return {
            "special": self.special,
            "lstrip": self.lstrip,
            "rstrip": self.rstrip,
            "normalized": self.normalized,
            "single_word": self.single_word,
        }


#: Largest file tokaudit reads (the biggest real tokenizer.json is ~35 MB); beyond it a parse
#: would need more memory than a CI runner has.
MAX_FILE_BYTES = 256 * 1024 * 1024
_MiB = 1024 * 1024


_PSEUDO_FS = ("/proc/", "/sys/", "/dev/")


def _describe_mode(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a special file"


def _symlink_note(path: Path) -> str:
    """' (symlink to X, outside the target directory)' when ``path`` is a symlink, else ''."""
    try:
        if not path.is_symlink():
            return ""
        dest = os.path.realpath(path)
        outside = os.path.commonpath([dest, os.path.realpath(path.parent)]) != os.path.realpath(path.parent)
    except (OSError, ValueError):
        return ""
    return f" (symlink to {dest}{', outside the target directory' if outside else ''})"


def is_existing_file(arg: str) -> bool:
    """Whether a command-line argument names an existing file. Arguments that are ids or text can be
    longer than a file name may be (ENAMETOOLONG) or hold a NUL: those are simply not files."""
    try:
        return Path(arg).is_file()
    except (OSError, ValueError):
        return False


def path_exists(path: Path) -> bool:
    """``path.exists()`` that answers False instead of raising for over-long names; a symlink loop or a
    broken symlink exists (it is there, and reading it gives the clear error)."""
    try:
        return path.exists() or path.is_symlink()
    except (OSError, ValueError):
        return False


def regular_file_error(path: Path) -> InputError | None:
    """Why ``path`` cannot be read as a file, or None when it is a regular file (after resolving symlinks).

    FIFOs, devices and sockets block or never end: they are refused before anything opens them.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if path.is_symlink():
            return InputError(f"broken symlink{_symlink_note(path)}", file=str(path))
        return InputError("no such file", file=str(path))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return InputError("symlink loop (too many levels of symbolic links)", file=str(path))
        if exc.errno == errno.ENAMETOOLONG:
            return InputError("file name too long", file=str(path))
        return InputError(f"cannot read file: {exc.strerror or exc}", file=str(path))
    if stat.S_ISDIR(st.st_mode):
        return InputError("is a directory, expected a file", file=str(path))
    if not stat.S_ISREG(st.st_mode):
        return InputError(f"not a regular file: {_describe_mode(st.st_mode)}{_symlink_note(path)}", file=str(path))
    real = os.path.realpath(path)
    if real.startswith(_PSEUDO_FS):  # /proc/kmsg says "regular file" and blocks (and reading it consumes the kernel log)
        return InputError(f"not a regular file: a {real.split('/')[1]} pseudo-file{_symlink_note(path)}", file=str(path))
    return None


def outside_error(path: Path, root: Path) -> InputError | None:
    """Why a file of the target directory ``root`` is refused: it resolves outside it (``vocab.txt ->
    /etc/passwd`` would be scanned, and decoded or quoted into a report). None when it stays inside, or is one
    of the Hugging Face cache's links: ``<repo>/snapshots/<rev>/file -> ../../blobs/<hash>`` resolves inside
    that repo's own ``blobs`` folder."""
    try:
        real = os.path.realpath(path)
        inside = os.path.realpath(root)
    except (OSError, ValueError):
        return None  # reading it gives the clear error
    if _within(real, inside):
        return None
    snapshots = os.path.dirname(inside)
    if os.path.basename(snapshots) == "snapshots" and _within(real, os.path.join(os.path.dirname(snapshots), "blobs")):
        return None
    return InputError(f"refused: a symlink to {real}, outside the target directory (tokaudit reads a target's own files only)",
                      file=str(path))


def _within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def _open_regular(path: Path) -> int:
    """A descriptor of ``path`` opened for reading, once it is checked to be a regular file (see
    :func:`regular_file_error`). Non-blocking: a /proc or /sys file that would block (``/proc/kmsg``)
    is refused instead of hanging."""
    problem = regular_file_error(path)
    if problem is not None:
        raise problem
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=str(path)) from None
    try:
        st = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=str(path)) from None
    if not stat.S_ISREG(st.st_mode):  # swapped after the check
        os.close(fd)
        raise InputError(f"not a regular file: {_describe_mode(st.st_mode)}{_symlink_note(path)}", file=str(path))
    return fd


def read_bytes(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file, at most ``limit`` of them; anything else is an :class:`InputError`."""
    fd = _open_regular(path)
    try:
        st = os.fstat(fd)
        if st.st_size > limit:
            raise InputError(f"file is {st.st_size / _MiB:.1f} MiB; the limit is {limit // _MiB} MiB", file=str(path))
        chunks = []
        total = 0
        while True:
            try:
                chunk = os.read(fd, 1 << 20 if chunks else st.st_size + 1)  # a regular file: one read
            except BlockingIOError:
                raise InputError(f"not a regular file: reading it would block{_symlink_note(path)}", file=str(path)) from None
            if not chunk:
                break
            total += len(chunk)
            if total > limit:
                raise InputError(f"file is over the limit of {limit // _MiB} MiB", file=str(path))
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=str(path)) from None
    finally:
        os.close(fd)


def read_bytes_head(path: Path, size: int) -> bytes:
    """At most the first ``size`` bytes of a regular file (checked as :func:`read_bytes` checks it)."""
    fd = _open_regular(path)
    try:
        return os.read(fd, size)
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=str(path)) from None
    finally:
        os.close(fd)


@contextmanager
def open_regular(path: Path) -> Iterator[BinaryIO]:
    """A regular file opened for reading in binary (checked as :func:`read_bytes` checks it), for reading
    a large file a piece at a time."""
    with os.fdopen(_open_regular(path), "rb") as f:
        try:
            yield f
        except OSError as exc:
            raise InputError(f"cannot read file: {exc.strerror or exc}", file=str(path)) from None


def read_text(path: Path) -> str:
    return decode_text(read_bytes(path), str(path))


def decode_text(data: bytes, file: str) -> str:
    """UTF-8 (with or without a BOM) or an error naming the line of the first bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(f"not valid UTF-8 text (byte {exc.start})", file=file, line=line) from None


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
# The patterns of error paths are strings, compiled on first use (re caches them): most runs never need one.
_BIG_INT = r"(?<![\w.\"])-?\d{%d,}" % (sys.get_int_max_str_digits() + 1 if hasattr(sys, "get_int_max_str_digits") else 4301)
_CONSTANT = r"(?<![\w\"])-?(?:NaN|Infinity)\b"


def has_lone_surrogate_escape(text: str) -> bool:
    """A \\u escape of a lone surrogate (a pair, as ensure_ascii writes emoji, is fine). A plain
    substring test first: scanning 30 MB with a regex costs more than parsing it."""
    if "\\ud" not in text and "\\uD" not in text:
        return False
    pending_high = -1  # end offset of an unpaired high surrogate escape
    for m in _SURROGATE_ESCAPE.finditer(text):
        high = m.group()[3].lower() in "89ab"
        if pending_high >= 0:
            if not high and m.start() == pending_high:
                pending_high = -1
                continue
            return True
        if not high:
            return True
        pending_high = m.end()
    return pending_high >= 0


_SURROGATE = "[\ud800-\udfff]"


class _ConstantFound(ValueError):
    """NaN / Infinity / -Infinity met while parsing (see :func:`parse_json_text`)."""


def _constant_found(name: str) -> Any:
    raise _ConstantFound(name)


#: ``json`` without NaN / Infinity (a ValueError): build it once, not per call (that doubled a short line's cost).
STRICT_JSON = json.JSONDecoder(parse_constant=_constant_found)


class _Constant(str):
    """NaN / Infinity / -Infinity where the file has it: Python's json accepts them, JSON does not."""


def parse_json_text(text: str, file: str, line: int | None = None) -> Any:
    """``json.loads`` for untrusted text: every failure is one :class:`InputError` naming the line.

    Rejects what Python accepts but JSON does not (NaN, Infinity: named with their key), integers
    too long for Python to convert, nesting deeper than the recursion limit, and lone surrogates
    (they cannot be encoded as UTF-8 later). ``line`` is the line of ``text`` in its file when it
    is one line of it.
    """
    def at(offset: int) -> int | None:
        return line if line is not None else text.count("\n", 0, offset) + 1

    constants: list[_Constant] = []

    def constant(name: str) -> _Constant:
        constants.append(_Constant(name))
        return constants[-1]

    try:
        try:
            value = STRICT_JSON.decode(text)
        except _ConstantFound:  # parsed again, keeping the constants, to name the key that holds one
            value = json.loads(text, parse_constant=constant)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", file=file,
                         line=line if line is not None else exc.lineno) from None
    except RecursionError:
        raise InputError("invalid JSON: nested too deeply", file=file, line=line) from None
    except ValueError:  # Python's int-string conversion limit
        m = re.search(_BIG_INT, text)
        digits = len(m.group().lstrip("-")) if m else None
        raise InputError(f"integer with {digits or 'too many'} digits: not a plausible value", file=file,
                         line=at(m.start()) if m else line) from None
    if constants:
        m = re.search(_CONSTANT, text)
        key = _find_key(value, "", lambda v: isinstance(v, _Constant))
        raise InputError(f"invalid JSON: {constants[0]} is not a JSON number", file=file,
                         line=at(m.start()) if m else line, key=key or None)
    if has_lone_surrogate_escape(text):
        surrogate = re.compile(_SURROGATE)
        key = _find_key(value, "", lambda v: isinstance(v, str) and surrogate.search(v) is not None)
        if key is not None:
            raise InputError("lone surrogate (\\ud800-\\udfff) in a string: not encodable as UTF-8", file=file,
                             line=line, key=key or None)
    return value


def _find_key(value: Any, key: str, bad: Callable[[Any], bool], depth: int = 0, *, keys: bool = True) -> str | None:
    """The key path of the first value (or object key, with ``keys``) for which ``bad`` holds."""
    if bad(value):
        return key
    if depth > 200:
        return None
    if isinstance(value, dict):
        for k, v in value.items():
            if keys and bad(k):
                return f"{key}[{json.dumps(k)}]"  # the key as JSON spells it: ["\\ud800"]
            found = _find_key(v, f"{key}.{k}" if key else str(k), bad, depth + 1, keys=keys)
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found = _find_key(v, f"{key}[{i}]", bad, depth + 1, keys=keys)
            if found is not None:
                return found
    return None


# tokenizers' (serde's) error messages: error paths, compiled on first use like _BIG_INT's
_JSON_TOKEN = r'"(?:[^"\\]|\\.)*"|[{}\[\],:]'
_SERDE_AT = r"(?s)^(?P<msg>.*?) at line (?P<line>\d+) column (?P<col>\d+)$"
_SERDE_INVALID = (r'invalid (?:type|value): (?:string "(?P<s>(?:[^"\\]|\\.)*)"|integer `(?P<i>-?\d+)`|'
                  r'boolean `(?P<b>true|false)`|(?P<n>null)|floating point `(?P<f>[^`]+)`)')


def json_path_at(text: str, line: int, column: int) -> str:
    """The key path of the innermost JSON value that contains 1-based ``line``/``column``."""
    lines = text.split("\n", line)[: line - 1]
    offset = sum(len(x) + 1 for x in lines) + column - 1
    stack: list[list[Any]] = []  # [kind, key or index, expecting a key]
    for m in re.compile(_JSON_TOKEN).finditer(text, 0, max(0, offset)):
        tok = m.group()
        if tok in "{[":
            stack.append(["{", None, True] if tok == "{" else ["[", 0, False])
        elif tok in "}]":
            if stack:
                stack.pop()
        elif tok == ",":
            if stack and stack[-1][0] == "[":
                stack[-1][1] += 1
            elif stack:
                stack[-1][2] = True
        elif tok == ":":
            if stack:
                stack[-1][2] = False
        elif stack and stack[-1][0] == "{" and stack[-1][2]:
            stack[-1][1] = json.loads(tok)
    path = ""
    for kind, key, _ in stack:
        if key is None:
            break
        path += f"[{key}]" if kind == "[" else (f".{key}" if path else str(key))
    return path


def serde_error_path(text: str, message: str) -> tuple[str, str] | None:
    """``(json path, message)`` for a serde error ("... at line L column C", which points at the end
    of the section serde was reading): the path of the offending value when the message quotes it
    (found inside that section), else the section's path."""
    m = re.match(_SERDE_AT, message.strip())
    if m is None:
        return None
    section = json_path_at(text, int(m["line"]), int(m["col"]))
    bad = re.search(_SERDE_INVALID, m["msg"])
    if bad is not None:
        try:
            root = json.loads(text)
        except (ValueError, RecursionError):
            root = None
        node = root
        for part in re.findall(r"[^.\[\]]+|\[\d+\]", section):
            if isinstance(node, list) and part.startswith("["):
                node = node[int(part[1:-1])] if int(part[1:-1]) < len(node) else None
            elif isinstance(node, dict):
                node = node.get(part)
            else:
                node = None
        if bad["s"] is not None:
            want: Any = json.loads(f'"{bad["s"]}"')
        elif bad["i"] is not None:
            want = int(bad["i"])
        elif bad["b"] is not None:
            want = bad["b"] == "true"
        elif bad["n"] is not None:
            want = None
        else:
            want = float(bad["f"])
        found = _find_key(node, section, lambda v: type(v) is type(want) and v == want, keys=False)
        if found is not None:
            return found, m["msg"]
    return section, m["msg"]


#: Digits to ``0``, everything else to a space: a run of 19 zeros marks an integer orjson may not keep exact.
_DIGIT_RUNS = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))
_LONG_NUMBER = b"0" * 19
#: Every 9th byte is looked at first: 19 consecutive bytes always hold two consecutive multiples of 9.
_SAMPLE_STEP = 9
#: Places where two sampled bytes in a row are digits looked at one by one (a real tokenizer.json has a few
#: hundred to two thousand); past this, the whole file is scanned.
_MAX_CANDIDATES = 4096
#: Bytes translated at a time by the whole-file scan: the pieces reuse one buffer, where the whole of a 33 MB
#: file would be a new one (its page faults cost more than the translation: 27 -> 19 ms on Llama 3's 9 MB).
_DIGIT_SCAN_PIECE = 1 << 18


def _long_number(data: bytes) -> bool:
    """Whether ``data`` holds a run of 19 or more digits.

    A run of 19 covers two consecutive sampled bytes (every 9th), so the bytes around each place where two
    sampled bytes in a row are digits are all that need a look (Llama 3: 29 -> 7 ms). A file with more such
    places than _MAX_CANDIDATES is scanned whole instead, in pieces that overlap by 18 bytes."""
    step = _SAMPLE_STEP
    sampled = data[::step].translate(_DIGIT_RUNS)
    at = sampled.find(b"00")
    for _ in range(_MAX_CANDIDATES):
        if at < 0:
            return False
        start = at * step  # a run through this byte and the next sampled one lies within [start - 9, start + 19)
        if _LONG_NUMBER in data[max(start - step, 0):start + len(_LONG_NUMBER)].translate(_DIGIT_RUNS):
            return True
        at = sampled.find(b"00", at + 1)
    overlap = len(_LONG_NUMBER) - 1
    return any(_LONG_NUMBER in data[max(start - overlap, 0):start + _DIGIT_SCAN_PIECE].translate(_DIGIT_RUNS)
               for start in range(0, len(data), _DIGIT_SCAN_PIECE))


def _fast_json(data: bytes) -> Any:
    """orjson's value of ``data`` where it is exactly json's, else ``_NOT_PARSED``.

    orjson rejects everything :func:`parse_json_text` reports (invalid UTF-8, a BOM, NaN, lone
    surrogates, deep nesting) and turns integers past 64 bits into floats: on any rejection, or any
    run of 19 digits (an integer that may not fit), the stdlib path parses and words the error.
    """
    if _orjson is None or _long_number(data):
        return _NOT_PARSED
    try:
        return _orjson.loads(data)
    except _orjson.JSONDecodeError:
        return _NOT_PARSED


_NOT_PARSED = object()


def read_json(path: Path) -> Any:
    return json_value(read_bytes(path), path)


def json_value(data: bytes, path: Path) -> Any:
    """The JSON value of ``data``, the bytes of ``path`` (named in errors)."""
    value = _fast_json(data)
    if value is _NOT_PARSED:
        value = parse_json_text(decode_text(data, str(path)), str(path))
    return value


def read_json_object(path: Path) -> dict[str, Any]:
    return json_object(read_bytes(path), path)


def json_object(data: bytes, path: Path) -> dict[str, Any]:
    """:func:`json_value` of ``data``, which must be an object."""
    value = json_value(data, path)
    if not isinstance(value, dict):
        raise InputError(f"expected a JSON object, found {type(value).__name__}", file=str(path))
    return value


def expect_int(value: Any, path: Path, key: str, *, minimum: int = 0) -> int:
    """An integer id or size from a JSON file; bools, floats and strings are errors."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"expected an integer, found {json.dumps(value)[:40]}", file=str(path), key=key)
    if value < minimum or value > MAX_ID:
        raise InputError(f"integer {value} out of range", file=str(path), key=key)
    return value


def optional_bool(value: Any, path: Path, key: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise InputError(f"expected true or false, found {json.dumps(value)[:40]}", file=str(path), key=key)


def parse_added_token(value: Any, path: Path, key: str, token_id: int | None) -> AddedToken:
    """An AddedToken given as a plain string or as a dict with ``content`` and flags."""
    source = Provenance(path.name, key=key)
    if isinstance(value, str):
        return AddedToken(token_id, value, None, source)
    if not isinstance(value, dict):
        raise InputError("expected a string or an object with 'content'", file=str(path), key=key)
    content = value.get("content")
    if not isinstance(content, str):
        raise InputError("expected a string 'content'", file=str(path), key=f"{key}.content")
    flags = {
        name: optional_bool(value.get(name), path, f"{key}.{name}")
        for name in ("special", "lstrip", "rstrip", "normalized", "single_word")
    }
    return AddedToken(token_id, content, source=source, **flags)
