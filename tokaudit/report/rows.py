"""Rows that are computed while a report is written, not held in memory (replay's full timeline).

A command puts a :class:`LazyRows` into its result data; the JSON renderer writes its rows one by
one (:func:`write_json`), a rich renderer prints them in blocks. Iterating twice recomputes them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any, TextIO



class LazyRows:
    """An iterable of JSON-ready dicts, produced on demand."""

    def __iter__(self) -> Iterator[dict[str, Any]]:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError


def write_json(doc: Any, stream: TextIO) -> None:
    """``json.dumps(doc)`` + newline to ``stream``, each :class:`LazyRows` streamed row by row."""
    lazy: list[LazyRows] = []
    # a placeholder no data can contain by chance: a control character and a random nonce
    nonce = os.urandom(8).hex()

    def mark(value: Any) -> str:
        if isinstance(value, LazyRows):
            lazy.append(value)
            return f"\x00rows-{nonce}-{len(lazy) - 1}\x00"
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")

    text = json.dumps(doc, ensure_ascii=False, default=mark)
    if not lazy:
        stream.write(text + "\n")
        return
    dumps = json.JSONEncoder(ensure_ascii=False).encode
    for n, rows in enumerate(lazy):
        head, text = text.split(json.dumps(f"\x00rows-{nonce}-{n}\x00"), 1)
        stream.write(head)
        stream.write("[")
        for k, row in enumerate(rows):
            stream.write(("," if k else "") + dumps(row))
        stream.write("]")
    stream.write(text + "\n")
