"""Rows that are computed while a report is written, not held in memory (replay's full timeline).

A command puts a :class:`LazyRows` into its result data; the JSON renderer writes its rows one by
one (:func:`write_json`), a rich renderer prints them in blocks. Iterating twice recomputes them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, TextIO


class LazyRows:
    """An iterable of JSON-ready dicts, produced on demand."""

    def __iter__(self) -> Iterator[dict[str, Any]]:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError


def write_json(doc: Any, stream: TextIO) -> None:
    """``json.dumps(doc, ensure_ascii=False)`` + newline to ``stream``, byte for byte, written piece
    by piece: containers near the top are opened and each entry dumped on its own (by the C
    encoder), so the largest string held at once is one value (a replay's 4 MB text), not the whole
    document; each :class:`LazyRows` is streamed row by row."""
    _write(doc, stream, 0)
    stream.write("\n")


#: Containers this deep are written entry by entry; deeper values are dumped whole.
_STREAM_DEPTH = 4


def _write(value: Any, stream: TextIO, depth: int) -> None:
    if isinstance(value, LazyRows):
        stream.write("[")
        for k, row in enumerate(value):
            stream.write((", " if k else "") + _dumps(row))
        stream.write("]")
    elif depth < _STREAM_DEPTH and isinstance(value, dict) and value:
        stream.write("{")
        for k, (key, item) in enumerate(value.items()):
            stream.write((", " if k else "") + _dumps(key if isinstance(key, str) else str(key)) + ": ")
            _write(item, stream, depth + 1)
        stream.write("}")
    elif depth < _STREAM_DEPTH and isinstance(value, (list, tuple)) and value:
        stream.write("[")
        for k, item in enumerate(value):
            if k:
                stream.write(", ")
            _write(item, stream, depth + 1)
        stream.write("]")
    else:
        stream.write(_dumps(value))


_dumps = json.JSONEncoder(ensure_ascii=False).encode
