"""Where a JSON key path is in a file's text: the 1-based line and column of the member's key (or of an array
element's first character), so that a finding about ``text_config.vocab_size`` can say ``config.json:17:5``.

Paths are written as tokaudit writes them (``text_config.vocab_size``, ``added_tokens[3].content``,
``added_tokens_decoder.163590``); a member name may itself hold dots. The lookup walks down the path and
passes over the values it does not enter with the stdlib's C scanner, so it costs what parsing the members
before the wanted one costs, never a Python step per character; :func:`walk` says when a prefix of a file was
too short, so a caller can read the start of a large file first (a tokenizer.json's ``added_tokens`` are in
its first kilobytes, its 9-35 MB vocabulary after them). When the path goes further than the file
(``model.vocab[260]``, where the vocabulary is an object keyed by token), the deepest member it reached is
the answer.
"""

from __future__ import annotations

import re
from json import JSONDecoder
from json.decoder import scanstring  # type: ignore[attr-defined]  # json's own string scanner: public, not in the stubs

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_INDEX = re.compile(r"\[(\d+)\]")
_SCAN = JSONDecoder().scan_once  # type: ignore[attr-defined]  # set by JSONDecoder.__init__, not in the stubs
#: Members and elements passed over in one lookup: a path into a 262k-entry vocabulary stays bounded.
MAX_STEPS = 1_000_000


def key_position(text: str, path: str) -> tuple[int, int] | None:
    """1-based (line, column) of ``path`` in ``text`` (columns count characters), or None when not even
    its first step is there."""
    offset = key_offset(text, path)
    if offset is None:
        return None
    return text.count("\n", 0, offset) + 1, offset - text.rfind("\n", 0, offset)


def key_offset(text: str, path: str) -> int | None:
    """Character offset of the deepest member or element along ``path`` that ``text`` holds."""
    return walk(text, path)[0]


def walk(text: str, path: str) -> tuple[int | None, bool]:
    """(:func:`key_offset`, whether the walk ran into the end of ``text`` before the path ended): with a prefix of
    a file, True means a longer prefix may go deeper."""
    found: int | None = None
    pos = _skip(text, 1 if text.startswith("\ufeff") else 0)
    rest = path
    steps = 0
    end = len(text)
    try:
        while rest:
            index = _INDEX.match(rest)
            if index is not None:
                if text[pos : pos + 1] != "[":
                    return found, pos >= end
                pos = _skip(text, pos + 1)
                if text[pos : pos + 1] == "]":
                    return found, False
                for _ in range(int(index.group(1))):
                    pos = _skip(text, _SCAN(text, pos)[1])
                    steps += 1
                    if text[pos : pos + 1] != "," or steps > MAX_STEPS:
                        return found, pos >= end
                    pos = _skip(text, pos + 1)
                found, rest = pos, rest[index.end() :].removeprefix(".")
                continue
            if text[pos : pos + 1] != "{":
                return found, pos >= end
            pos = _skip(text, pos + 1)
            while True:
                if text[pos : pos + 1] != '"':
                    return found, pos >= end
                name, after = scanstring(text, pos + 1)
                colon = _skip(text, after)
                if text[colon : colon + 1] != ":":
                    return found, colon >= end
                value = _skip(text, colon + 1)
                if rest.startswith(name) and (len(rest) == len(name) or rest[len(name)] in ".["):
                    found, rest, pos = pos, rest[len(name) :].removeprefix("."), value
                    break
                pos = _skip(text, _SCAN(text, value)[1])
                steps += 1
                if text[pos : pos + 1] != "," or steps > MAX_STEPS:
                    return found, pos >= end
                pos = _skip(text, pos + 1)
    except (ValueError, RecursionError, StopIteration):  # not JSON past this point (or the text ends there)
        return found, True
    return found, False


def _skip(text: str, pos: int) -> int:
    return _WHITESPACE.match(text, pos).end()  # type: ignore[union-attr]  # always matches (possibly empty)
