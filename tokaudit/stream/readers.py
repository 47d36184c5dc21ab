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

import sys
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path

from tokaudit.artifacts.safe_files import decode_text, open_regular, read_bytes, read_bytes_head, regular_file_error
from tokaudit.artifacts.strict_json import parse_json_text
from tokaudit.errors import InputError
from tokaudit.stream.steps import Stream
from tokaudit.stream.stream_formats import PARSERS, parse_json_array

FORMATS = ("json", "ids", "jsonl", "sse")
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


def read_stream(arg: str, fmt: str | None = None) -> Stream:
    """Read a stream from a path, or from stdin when ``arg`` is ``-``."""
    if arg == "-":
        raw = getattr(sys.stdin, "buffer", None)  # a text-only stdin (tests, embedding) has none
        data = (
            raw.read(MAX_STREAM_BYTES + 1)
            if raw is not None
            else sys.stdin.read(MAX_STREAM_BYTES + 1).encode("utf-8", "surrogateescape")
        )
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
        raise InputError(
            f"file is {size / 2**20:.1f} MiB; the limit is {limit >> 20} MiB"
            + (
                " for a JSON array (a line format, such as JSONL or SSE, is read line by line up to "
                f"{MAX_CAPTURE_BYTES >> 20} MiB)"
                if fmt == "json"
                else ""
            ),
            file=arg,
        )
    return _stream_of(fmt, PARSERS[fmt](lambda: _file_lines(path, arg, MAX_CAPTURE_BYTES), arg), arg)


def parse_stream(text: str, source: str, fmt: str | None = None) -> Stream:
    """Parse ``text`` in format ``fmt`` (auto-detected when None)."""
    _check_format(fmt)
    fmt = fmt or detect_format(text)
    if fmt == "json":
        return _stream_of(fmt, parse_json_array(text, source), source)
    lines = text.splitlines()
    return _stream_of(fmt, PARSERS[fmt](lambda: lines, source), source)


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
                raise InputError(
                    f"a line longer than {MAX_LINE_BYTES >> 20} MiB (one response's ids fit in half of that)",
                    file=source,
                    line=number,
                )
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"not valid UTF-8 text (byte {offset + exc.start})", file=source, line=number
                ) from None
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
