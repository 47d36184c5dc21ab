"""The ids of each capture format (:mod:`tokaudit.stream.readers` reads the file and picks the format): a JSON
array, whitespace/comma-separated ids, JSON Lines and server-sent events, each checked in bulk at C speed where it
can be and line by line otherwise, every error an :class:`InputError` naming the source and the line (and column
or element), every count within the stream's id budget."""

from __future__ import annotations

import json
import re
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain
from typing import Any

from tokaudit.artifacts.strict_json import STRICT_JSON, has_lone_surrogate_escape, parse_json_text
from tokaudit.errors import InputError, shorten

ID_KEYS = ("token_ids", "ids", "output_ids", "token_id")
MAX_ID = 2**32  # ids are u32 in every gateway; anything at or above is not a token id
#: Ids in one stream: replay is linear in time and memory (issue 11: a 1M-token agent transcript
#: replays in seconds), so the cap is twice that, not one response's length.
MAX_STREAM_IDS = 2_000_000


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
        raise InputError(
            f"more than {MAX_STREAM_IDS} ids: not one response (the limit of a stream)", file=source, line=line
        )


def parse_json_array(text: str, source: str) -> array:
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
    return tuple(
        _check_id(v, f"{key}[{k}]" if isinstance(value, list) else key, source, line) for k, v in enumerate(items)
    )


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
                file=source,
                line=lineno,
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
                raise InputError(
                    f"choices[{k}].index: expected an integer, found {shorten(json.dumps(index))}",
                    file=source,
                    line=line,
                )
            indices.add(index)
    if len(indices) > 1:
        raise InputError(
            f"chunk carries choices {sorted(indices)[:8]}: replay one choice (n=1) at a time",
            file=source,
            line=line,
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
                file=source,
                line=lineno,
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
PARSERS: dict[str, Callable[[Callable[[], Iterable[str]], str], Any]] = {
    "ids": _parse_ids,
    "jsonl": _parse_jsonl,
    "sse": _parse_sse,
}
