"""Rows that are computed while a report is written, not held in memory (replay's full timeline).

A command puts a :class:`LazyRows` into its result data; the JSON renderer writes its rows in
batches (:func:`write_json`), a rich renderer prints them in blocks. Iterating twice recomputes them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import chain, islice
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
    document; each :class:`LazyRows` is streamed in batches of rows."""
    _write(doc, stream, 0)
    stream.write("\n")


#: Containers this deep are written entry by entry; deeper values are dumped whole.
_STREAM_DEPTH = 4


def _write(value: Any, stream: TextIO, depth: int) -> None:
    if isinstance(value, LazyRows):
        stream.write("[")
        rows = iter(value)
        separator = ""
        while batch := list(islice(rows, _ROWS)):  # one encoder call and one write per batch of rows
            stream.write(separator + _dumps(batch)[1:-1])
            separator = ", "
        stream.write("]")
    elif depth < _STREAM_DEPTH and isinstance(value, dict) and value:
        stream.write("{")
        for k, (key, item) in enumerate(value.items()):
            stream.write((", " if k else "") + _dumps(key if isinstance(key, str) else str(key)) + ": ")
            _write(item, stream, depth + 1)
        stream.write("}")
    elif depth < _STREAM_DEPTH and isinstance(value, (list, tuple)) and value and _plain(value):
        # ids and id ranges (a --deep scan lists 35k ranges): dumped in slices, not one _write per item
        stream.write("[")
        for k in range(0, len(value), _SLICE):
            stream.write((", " if k else "") + _dumps(value[k : k + _SLICE])[1:-1])
        stream.write("]")
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

#: Lazy rows dumped at once (a replay timeline row is a few hundred bytes).
_ROWS = 512
#: Items of a plain list dumped at once (numbers: a slice is at most a few hundred KB).
_SLICE = 4096
_NUMBERS = frozenset({int, float, bool, type(None)})


def _plain(items: list[Any] | tuple[Any, ...]) -> bool:
    """Numbers only, or lists of numbers only (id ranges): nothing inside to stream (checked at C speed).
    Strings are left to the item-by-item path: one can be a 4 MB text."""
    types = set(map(type, items))
    if types <= _NUMBERS:
        return True
    return types <= {list, tuple} and set(map(type, chain.from_iterable(items))) <= _NUMBERS
