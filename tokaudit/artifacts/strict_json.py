"""JSON from untrusted files, as strictly as JSON itself: every failure is one :class:`InputError` naming the
line or key (NaN, huge integers, deep nesting, lone surrogates), orjson where it gives exactly json's value,
serde's error messages mapped to key paths, and the typed reads of ids, sizes, flags and added tokens."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tokaudit.artifacts.safe_files import decode_text, read_bytes
from tokaudit.errors import InputError
from tokaudit.records import AddedToken, Provenance

try:  # a faster parser for the large files (tokenizer.json: ~35 MB); json decides whenever they could differ
    import orjson as _orjson
except ImportError:  # pragma: no cover - a dependency, but the stdlib path is complete on its own
    _orjson = None  # type: ignore[assignment]  # no orjson: the stdlib path alone

#: Largest id (or vocabulary size) we accept from a file; beyond it the value is nonsense and
#: only ranges (never per-id structures) could represent it anyway.
MAX_ID = 2**63 - 1


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
# The patterns of error paths are strings, compiled on first use (re caches them): most runs never need one.
_BIG_INT = r"(?<![\w.\"])-?\d{%d,}" % (
    sys.get_int_max_str_digits() + 1 if hasattr(sys, "get_int_max_str_digits") else 4301
)
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
        raise InputError(
            f"invalid JSON: {exc.msg} (column {exc.colno})", file=file, line=line if line is not None else exc.lineno
        ) from None
    except RecursionError:
        raise InputError("invalid JSON: nested too deeply", file=file, line=line) from None
    except ValueError:  # Python's int-string conversion limit
        m = re.search(_BIG_INT, text)
        digits = len(m.group().lstrip("-")) if m else None
        raise InputError(
            f"integer with {digits or 'too many'} digits: not a plausible value",
            file=file,
            line=at(m.start()) if m else line,
        ) from None
    if constants:
        m = re.search(_CONSTANT, text)
        key = _find_key(value, "", lambda v: isinstance(v, _Constant))
        raise InputError(
            f"invalid JSON: {constants[0]} is not a JSON number",
            file=file,
            line=at(m.start()) if m else line,
            key=key or None,
        )
    if has_lone_surrogate_escape(text):
        surrogate = re.compile(_SURROGATE)
        key = _find_key(value, "", lambda v: isinstance(v, str) and surrogate.search(v) is not None)
        if key is not None:
            raise InputError(
                "lone surrogate (\\ud800-\\udfff) in a string: not encodable as UTF-8",
                file=file,
                line=line,
                key=key or None,
            )
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
_SERDE_INVALID = (
    r'invalid (?:type|value): (?:string "(?P<s>(?:[^"\\]|\\.)*)"|integer `(?P<i>-?\d+)`|'
    r"boolean `(?P<b>true|false)`|(?P<n>null)|floating point `(?P<f>[^`]+)`)"
)


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
        if _LONG_NUMBER in data[max(start - step, 0) : start + len(_LONG_NUMBER)].translate(_DIGIT_RUNS):
            return True
        at = sampled.find(b"00", at + 1)
    overlap = len(_LONG_NUMBER) - 1
    return any(
        _LONG_NUMBER in data[max(start - overlap, 0) : start + _DIGIT_SCAN_PIECE].translate(_DIGIT_RUNS)
        for start in range(0, len(data), _DIGIT_SCAN_PIECE)
    )


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
