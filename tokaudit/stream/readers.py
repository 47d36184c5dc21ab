"""Token-stream readers: the ids a server produced, in the formats people capture them in.

Formats (``fmt`` / ``--stream-format``):

* ``json``  — one JSON array of ids; one id per step.
* ``ids``   — ids separated by whitespace and/or commas; one id per step.
* ``jsonl`` — JSON Lines, one step per line: an object with ``token_ids``, ``ids``,
  ``output_ids`` or ``token_id`` (an id or a list: speculative decoding emits several per step),
  or a bare JSON array of ids.
* ``sse``   — an OpenAI-compatible server-sent-events capture: ``data: {...}`` lines whose
  ``choices`` carry token ids under the same keys, ``data: [DONE]`` at the end; one step per event.

Every error is an :class:`InputError` naming the source and the line (and column or element).
"""

from __future__ import annotations

import json
import re
import sys
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import accumulate, chain
from pathlib import Path
from typing import Any, overload

from tokaudit.artifacts.safe_files import decode_text, open_regular, read_bytes, read_bytes_head, regular_file_error
from tokaudit.artifacts.strict_json import STRICT_JSON, has_lone_surrogate_escape, parse_json_text
from tokaudit.errors import InputError, shorten

FORMATS = ("json", "ids", "jsonl", "sse")
ID_KEYS = ("token_ids", "ids", "output_ids", "token_id")
MAX_ID = 2**32  # ids are u32 in every gateway; anything at or above is not a token id
#: A stream held in memory whole (stdin, a JSON array) is at most this (an SSE capture of 32k tokens is ~6 MB).
MAX_STREAM_BYTES = 16 * 1024 * 1024
#: A larger capture file in a line format (SSE, JSONL, ids) is read line by line, up to this: an SSE capture
#: spends ~190 bytes per token, so 1M tokens is ~190 MB (the id budget below stops it sooner).
MAX_CAPTURE_BYTES = 512 * 1024 * 1024
#: Longest line of a capture read line by line: a JSONL or ids line of 2M ids (the limit below) is ~16 MB. Checked
#: before the line is held whole (issue 34: a 300 MB line cost 3.3 GB before the id limit stopped it).
MAX_LINE_BYTES = 32 * 1024 * 1024
#: What format detection reads of a large capture.
_HEAD_BYTES = 1 << 20
#: Ids in one stream: replay is linear in time and memory (issue 11: a 1M-token agent transcript
#: replays in seconds), so the cap is twice that, not one response's length.
MAX_STREAM_IDS = 2_000_000


class Steps(Sequence[tuple[int, ...]]):
    """A stream's steps as a view of its flat ids: step ``s`` is ``ids[starts[s]:starts[s + 1]]``, and with
    ``starts`` None every step is one id. No tuple per step is kept (1M one-id tuples cost 64 MB)."""

    __slots__ = ("ids", "starts")

    def __init__(self, ids: Sequence[int], starts: Sequence[int] | None = None) -> None:
        self.ids, self.starts = ids, starts

    @property
    def single(self) -> bool:
        """Every step carries exactly one id."""
        return self.starts is None

    def __len__(self) -> int:
        return len(self.ids) if self.starts is None else len(self.starts) - 1

    @overload
    def __getitem__(self, s: int) -> tuple[int, ...]: ...
    @overload
    def __getitem__(self, s: slice) -> Steps: ...

    def __getitem__(self, s: int | slice) -> tuple[int, ...] | Steps:
        starts = self.starts
        if isinstance(s, slice):
            first, end, stride = s.indices(len(self))
            if stride != 1:
                raise ValueError("steps are sliced with a stride of 1")
            end = max(end, first)
            if starts is None:
                return Steps(self.ids[first:end])
            a = starts[first]
            return Steps(self.ids[a:starts[end]], array("q", [x - a for x in starts[first:end + 1]]))
        if s < 0:
            s += len(self)
        if not 0 <= s < len(self):
            raise IndexError(s)
        if starts is None:
            return (self.ids[s],)
        return tuple(self.ids[starts[s]:starts[s + 1]])

    def __iter__(self) -> Iterator[tuple[int, ...]]:
        if self.starts is None:
            return ((i,) for i in self.ids)
        ids, starts = self.ids, self.starts
        return (tuple(ids[a:b]) for a, b in zip(starts, starts[1:]))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)) or len(other) != len(self):
            return False
        return all(a == tuple(b) for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Steps({list(self)[:8]!r}{'...' if len(self) > 8 else ''})"


def step_start(steps: Sequence[Sequence[int]], s: int) -> int:
    """Where step ``s`` starts among the stream's ids (its first id's position)."""
    if isinstance(steps, Steps):
        return s if steps.starts is None else steps.starts[s]
    return sum(map(len, steps[:s]))


class Stream:
    """A token stream as the server emitted it: the ids (a compact array) and where each step starts."""

    def __init__(self, format: str, ids: Sequence[int], starts: Sequence[int] | None = None) -> None:
        self.format = format
        self.ids: Sequence[int] = ids if isinstance(ids, array) else array("q", ids)
        self.steps = Steps(self.ids, starts)

    @classmethod
    def of_steps(cls, format: str, steps: Iterable[Sequence[int]]) -> Stream:
        """A stream from one sequence of ids per step (empty steps are dropped)."""
        steps = [step for step in steps if step]
        if all(len(step) == 1 for step in steps):
            return cls(format, array("q", [step[0] for step in steps]))
        ids = array("q", [i for step in steps for i in step])
        return cls(format, ids, array("q", accumulate(map(len, steps), initial=0)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and self.format == other.format and self.steps == other.steps

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Stream({self.format!r}, {self.steps!r})"


def read_stream(arg: str, fmt: str | None = None) -> Stream:
    """Read a stream from a path, or from stdin when ``arg`` is ``-``."""
    if arg == "-":
        raw = getattr(sys.stdin, "buffer", None)  # a text-only stdin (tests, embedding) has none
        data = raw.read(MAX_STREAM_BYTES + 1) if raw is not None else sys.stdin.read(MAX_STREAM_BYTES + 1).encode("utf-8", "surrogateescape")
        if len(data) > MAX_STREAM_BYTES:
            raise InputError(f"stream is over the limit of {MAX_STREAM_BYTES >> 20} MiB", file="<stdin>")
        return parse_stream(decode_text(data, "<stdin>"), "<stdin>", fmt)
    path = Path(arg)
    if path.is_dir():
        raise InputError("is a directory, not a token stream", file=arg)
    _check_format(fmt)
    size = path.stat().st_size if regular_file_error(path) is None else 0
    if size <= MAX_STREAM_BYTES:
        return parse_stream(decode_text(read_bytes(path, MAX_STREAM_BYTES), arg), arg, fmt)
    # a large capture: read line by line (never the whole text in memory), when its format has lines
    head = read_bytes_head(path, _HEAD_BYTES)
    fmt = fmt or detect_format(head.decode("utf-8", "replace").removeprefix("\ufeff"))  # the first lines decide
    if fmt == "json" or size > MAX_CAPTURE_BYTES:
        limit = MAX_STREAM_BYTES if fmt == "json" else MAX_CAPTURE_BYTES
        raise InputError(f"file is {size / 2**20:.1f} MiB; the limit is {limit >> 20} MiB"
                         + (" for a JSON array (a line format, such as JSONL or SSE, is read line by line up to "
                            f"{MAX_CAPTURE_BYTES >> 20} MiB)" if fmt == "json" else ""), file=arg)
    return _stream_of(fmt, _PARSERS[fmt](lambda: _file_lines(path, arg, MAX_CAPTURE_BYTES), arg), arg)


def parse_stream(text: str, source: str, fmt: str | None = None) -> Stream:
    """Parse ``text`` in format ``fmt`` (auto-detected when None)."""
    _check_format(fmt)
    fmt = fmt or detect_format(text)
    if fmt == "json":
        return _stream_of(fmt, _parse_json(text, source), source)
    lines = text.splitlines()
    return _stream_of(fmt, _PARSERS[fmt](lambda: lines, source), source)


def _check_format(fmt: str | None) -> None:
    if fmt is not None and fmt not in FORMATS:
        raise InputError(f"unknown stream format {fmt!r} (expected one of {', '.join(FORMATS)})")


def _stream_of(fmt: str, parsed: array | list[Sequence[int]], source: str) -> Stream:
    stream = Stream(fmt, parsed) if isinstance(parsed, array) else Stream.of_steps(fmt, parsed)
    if not stream.ids:
        raise InputError(f"no token ids in the stream (read as {fmt})", file=source)
    return stream


def _file_lines(path: Path, source: str, limit: int) -> Iterator[str]:
    """The lines of a large capture file, as ``str.splitlines`` gives them (a leading BOM dropped), read one
    at a time, at most ``limit`` bytes (a file still being written can grow); an invalid UTF-8 byte is an
    error naming its line and offset, as for a file read whole."""
    offset = number = 0
    with open_regular(path) as f:
        while raw := f.readline(min(limit - offset, MAX_LINE_BYTES) + 1):  # never more than a limit, even in one line
            number += 1
            if offset + len(raw) > limit:
                raise InputError(f"file is over the limit of {limit >> 20} MiB", file=source, line=number)
            if len(raw) > MAX_LINE_BYTES:
                raise InputError(f"a line longer than {MAX_LINE_BYTES >> 20} MiB (one response's ids fit in half of that)",
                                 file=source, line=number)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"not valid UTF-8 text (byte {offset + exc.start})", file=source, line=number) from None
            if number == 1 and line.startswith("\ufeff"):
                line = line[1:]
            offset += len(raw)
            yield from line.splitlines() or [""]


def detect_format(text: str) -> str:
    """Pick the format from the first meaningful line."""
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith(("data:", "event:", "id:", "retry:", ":")):
            return "sse"
        if line.startswith("{"):
            return "jsonl"
        if line.startswith("["):
            # One array spread over lines, or one array per line (JSONL steps).
            stripped = text.strip()
            if "\n" in stripped and line.endswith("]") and _is_json(line):
                return "jsonl"
            return "json"
        return "ids"
    return "ids"


def _is_json(line: str) -> bool:
    try:
        parse_json_text(line, "")
    except InputError:
        return False
    return True


def _check_id(value: Any, where: str, source: str, line: int | None) -> int:
    """Return ``value`` as a token id or raise an error naming where it was."""
    if isinstance(value, bool) or not isinstance(value, int):
        shown = shorten(json.dumps(value) if not isinstance(value, str) else repr(value))
        raise InputError(f"{where}: {shown} is not an integer token id", file=source, line=line)
    if value < 0:
        raise InputError(f"{where}: id {value} is negative", file=source, line=line)
    if value >= MAX_ID:
        raise InputError(f"{where}: id {value} is out of range (>= 2**32)", file=source, line=line)
    return value


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


# JSON scalars at their offsets, so that an error in a flat array can name its line.
_JSON_SCALAR = re.compile(r'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null')


def _within_budget(count: int, source: str, line: int | None) -> None:
    if count > MAX_STREAM_IDS:
        raise InputError(f"more than {MAX_STREAM_IDS} ids: not one response (the limit of a stream)", file=source, line=line)


def _parse_json(text: str, source: str) -> array:
    value = parse_json_text(text, source)
    if not isinstance(value, list):
        raise InputError(f"expected a JSON array of ids, got {type(value).__name__}", file=source)
    _within_budget(len(value), source, None)
    # the common case checked in C: only ints (not bools), all in range
    if set(map(type, value)) <= {int} and (not value or (min(value) >= 0 and max(value) < MAX_ID)):
        return array("q", value)
    offsets = None
    for k, item in enumerate(value):
        if isinstance(item, int) and not isinstance(item, bool) and 0 <= item < MAX_ID:
            continue
        if offsets is None:
            offsets = [m.start() for m in _JSON_SCALAR.finditer(text)]
        flat = all(not isinstance(v, (list, dict)) for v in value)
        line = _line_of(text, offsets[k]) if flat and k < len(offsets) else None
        _check_id(item, f"element {k}", source, line)
    raise AssertionError("unreachable: an element failed the bulk check but none failed alone")


_ID_TOKEN = re.compile(r"[^\s,]+")
_INT = re.compile(r"[+-]?[0-9]+")  # ASCII digits only: str.isdigit and \d also take '١٠٥'


def _parse_ids(lines: Callable[[], Iterable[str]], source: str) -> array:
    out = array("q")
    for lineno, line in enumerate(lines(), 1):
        for m in _ID_TOKEN.finditer(line):
            word = m.group()
            where = f"column {m.start() + 1}"
            if not _INT.fullmatch(word):
                raise InputError(f"{where}: {shorten(word)!r} is not an integer token id", file=source, line=lineno)
            if len(word) > 20:  # far beyond 2**32, and int() of a huge word is slow or refused
                raise InputError(f"{where}: id {shorten(word)} is out of range (>= 2**32)", file=source, line=lineno)
            out.append(_check_id(int(word), where, source, lineno))
            if len(out) > MAX_STREAM_IDS:
                _within_budget(len(out), source, lineno)
    return out


def _ids_of(value: Any, key: str, source: str, line: int) -> tuple[int, ...]:
    items = value if isinstance(value, list) else [value]
    if set(map(type, items)) <= {int} and (not items or (min(items) >= 0 and max(items) < MAX_ID)):
        return tuple(items)  # the common case, checked in C: only ints (not bools), all in range
    return tuple(_check_id(v, f"{key}[{k}]" if isinstance(value, list) else key, source, line)
                 for k, v in enumerate(items))


def _step_from_object(obj: dict[str, Any], source: str, line: int) -> tuple[int, ...] | None:
    """Ids of one step from an object, or None when it carries no ids."""
    for key in ID_KEYS:
        if key in obj and obj[key] is not None:
            return _ids_of(obj[key], key, source, line)
    return None


def _parse_jsonl(lines: Callable[[], Iterable[str]], source: str) -> list[Sequence[int]]:
    steps = _jsonl_in_bulk(lines())
    return steps if steps is not None else _jsonl_line_by_line(lines(), source)


def _jsonl_values(lines: Iterable[str]) -> Iterator[Any]:
    """The common case at C speed: every line an array of ids, or an object whose first ID_KEYS key holds one,
    every id an int in range, within the budget (see :func:`_in_bulk`; anything else yields None)."""
    for line in filter(str.strip, lines):
        if has_lone_surrogate_escape(line):
            yield None
            return
        value = STRICT_JSON.decode(line)  # each object is freed as the next line is read
        if isinstance(value, dict):
            value = next((value[key] for key in ID_KEYS if value.get(key) is not None), None)
        yield value  # not a list (a single id under a key, OpenAI choices, an error): the line parser


def _jsonl_in_bulk(lines: Iterable[str]) -> list[Sequence[int]] | None:
    return _in_bulk(_jsonl_values(lines))


def _in_bulk(values: Iterator[Any]) -> list[Sequence[int]] | None:
    """The steps a bulk reader yields, if each is a list, all of them within MAX_STREAM_IDS and every id an int in
    range (checked in C at the end). None otherwise: the line parser then reads the text, and names the line of
    any error."""
    steps: list[Sequence[int]] = []
    total = 0
    try:
        for value in values:
            if not isinstance(value, list):
                return None
            steps.append(value)
            total += len(value)
            if total > MAX_STREAM_IDS:
                return None
    except (ValueError, RecursionError):  # invalid JSON, NaN, a huge integer, deep nesting
        return None
    return steps if _all_token_ids(steps) else None


def _all_token_ids(steps: list[Sequence[Any]]) -> bool:
    """Every value of every step an int (not a bool) below MAX_ID and not negative, checked in C."""
    if not set(map(type, chain.from_iterable(steps))) <= {int}:
        return False
    filled = list(filter(None, steps))
    return not filled or (min(map(min, filled)) >= 0 and max(map(max, filled)) < MAX_ID)


def _jsonl_line_by_line(lines: Iterable[str], source: str) -> list[Sequence[int]]:
    out: list[Sequence[int]] = []
    total = 0
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        value = parse_json_text(line, source, lineno)
        if isinstance(value, list):
            out.append(_ids_of(value, "step", source, lineno))
            total += len(out[-1])
            if total > MAX_STREAM_IDS:
                _within_budget(total, source, lineno)
            continue
        if not isinstance(value, dict):
            raise InputError(
                f"expected an object with one of {', '.join(ID_KEYS)} or an array of ids",
                file=source, line=lineno,
            )
        step = _step_from_object(value, source, lineno)
        if step is None:
            step = _step_from_choices(value, source, lineno)
        if step is None:
            raise InputError(f"no {', '.join(ID_KEYS)} key in this step", file=source, line=lineno)
        out.append(step)
        total += len(step)
        if total > MAX_STREAM_IDS:
            _within_budget(total, source, lineno)
    return out


def _step_from_choices(event: dict[str, Any], source: str, line: int) -> tuple[int, ...] | None:
    """Ids of one OpenAI-compatible chunk: from ``choices[*]`` (or their ``delta``)."""
    choices = event.get("choices")
    if not isinstance(choices, list):
        return None
    indices = set()
    for k, c in enumerate(choices):
        if isinstance(c, dict):
            index = c.get("index", 0)
            if isinstance(index, bool) or not isinstance(index, int):
                raise InputError(f"choices[{k}].index: expected an integer, found {shorten(json.dumps(index))}",
                                 file=source, line=line)
            indices.add(index)
    if len(indices) > 1:
        raise InputError(
            f"chunk carries choices {sorted(indices)[:8]}: replay one choice (n=1) at a time",
            file=source, line=line,
        )
    found: tuple[int, ...] | None = None
    for choice in choices:
        if not isinstance(choice, dict):
            continue
        for holder in (choice, choice.get("delta")):
            if isinstance(holder, dict):
                step = _step_from_object(holder, source, line)
                if step is not None:
                    found = (found or ()) + step
                    break
    return found


def _parse_sse(lines: Callable[[], Iterable[str]], source: str) -> list[Sequence[int]]:
    steps = _sse_in_bulk(lines())
    return steps if steps is not None else _sse_line_by_line(lines(), source)


def _sse_in_bulk(lines: Iterable[str]) -> list[Sequence[int]] | None:
    return _in_bulk(_sse_values(lines))


def _sse_values(lines: Iterable[str]) -> Iterator[Any]:
    """The common capture with less work per event: ``data:`` lines of chunks with at most one choice,
    whose ids are a list under an ID_KEYS key of the choice, of its ``delta``, or of the chunk (see
    :func:`_in_bulk`; anything else yields None)."""
    done = False
    for line in lines:
        if not line.startswith("data:"):
            stripped = line.strip()
            if not stripped or stripped.startswith(":") or stripped.split(":", 1)[0] in ("event", "id", "retry"):
                continue
            yield None
            return
        payload = line[5:].strip()
        if payload == "[DONE]":
            done = True
            continue
        event = STRICT_JSON.decode(payload)
        if done or not isinstance(event, dict):
            yield None
            return
        choices = event.get("choices")
        holders: list[Any] = [event]
        if isinstance(choices, list) and choices:
            choice = choices[0]
            index = choice.get("index", 0) if isinstance(choice, dict) else None
            if len(choices) > 1 or type(index) is not int:
                yield None
                return
            holders = [choice, choice.get("delta"), event]
        ids = next((h[key] for h in holders if isinstance(h, dict) for key in ID_KEYS if h.get(key) is not None), None)
        if ids is not None:
            yield ids


def _sse_line_by_line(lines: Iterable[str], source: str) -> list[Sequence[int]]:
    out: list[Sequence[int]] = []
    total = 0
    done = False
    for lineno, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped or stripped.startswith(":") or stripped.split(":", 1)[0] in ("event", "id", "retry"):
            continue
        if not stripped.startswith("data:"):
            raise InputError("not a server-sent-events line (expected 'data: ...')", file=source, line=lineno)
        payload = stripped[5:].strip()
        if payload == "[DONE]":
            done = True
            continue
        if done:
            raise InputError("data after 'data: [DONE]'", file=source, line=lineno)
        try:
            event = STRICT_JSON.decode(payload)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"invalid JSON in data line: {exc.msg} (column {line.index(payload) + exc.colno})",
                file=source, line=lineno,
            ) from None
        except (ValueError, RecursionError):  # NaN, a huge integer, deep nesting: the shared parser names them
            event = parse_json_text(payload, source, lineno)
        if not isinstance(event, dict):
            raise InputError("data line is not a JSON object", file=source, line=lineno)
        step = _step_from_choices(event, source, lineno)
        if step is None:
            step = _step_from_object(event, source, lineno)
        if step is not None:
            out.append(step)
            total += len(step)
            if total > MAX_STREAM_IDS:
                _within_budget(total, source, lineno)
    return out


#: The line formats' parsers: each takes a callable giving the lines afresh (JSONL reads them twice to name an error).
_PARSERS: dict[str, Callable[[Callable[[], Iterable[str]], str], Any]] = {"ids": _parse_ids, "jsonl": _parse_jsonl, "sse": _parse_sse}
