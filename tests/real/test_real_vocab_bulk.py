"""The whole-vocabulary passes of tokenizer.json (issue 22) give exactly what a pass per token gives, on
every real tokenizer.json: token bytes (DeepSeek V3 has tokens outside GPT-2's alphabet, Gemma 3 its
<0xNN> byte tokens), the tokens that are not UTF-8 alone, and the lowest id of each token string."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real import realkit
from tokaudit.artifacts.token_bytes import TokenBytes, token_bytes, undecodable_ids
from tokaudit.artifacts.tokenizer_json import parse_tokenizer_json

pytestmark = pytest.mark.real

#: Each real tokenizer.json (a file whose name ends so: litellm's anthropic_tokenizer.json too) -> its file name.
JSON_FILES = {
    e["name"]: dest
    for e in realkit.lock_entries()
    if not e.get("derive")  # derived: the json is removed
    for dest in e["files"].values()
    if dest.endswith("tokenizer.json")
}
NAMES = sorted(JSON_FILES)


@pytest.mark.parametrize("name", NAMES)
def test_bulk_passes_equal_per_token_passes(name: str, real_dirs: dict[str, Path]) -> None:
    path = real_dirs[name] / JSON_FILES[name]
    tj = parse_tokenizer_json(path)
    assert list(tj.by_id.items()) == [(i, token_bytes(t, tj.scheme)) for i, t in tj.vocab.items()]
    lowest: dict[str, int] = {}
    for i, token in sorted(tj.vocab.items()):
        lowest.setdefault(token, i)
    assert tj.first_id_by_content == lowest


def _gpt2_byte_of() -> dict[str, int]:
    """GPT-2's byte <-> printable character table, as its encoder.py builds it (an oracle written apart from
    tokaudit's)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars = printable[:]
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + len(chars) - 188)
    return {chr(c): b for b, c in zip(printable, chars)}


@pytest.mark.parametrize("name", NAMES)
def test_undecodable_ids_equal_a_decode_per_token(name: str, real_dirs: dict[str, Path]) -> None:
    """TA401's ids: the bulk pass over the strings of a byte-level vocabulary, and the pass over built
    bytes, each equal the tokens whose bytes (from GPT-2's table; UTF-8 text outside it) fail to decode."""
    path = real_dirs[name] / JSON_FILES[name]
    tj = parse_tokenizer_json(path)
    byte_of = _gpt2_byte_of()
    expected = []
    for i, token in tj.vocab.items():
        if tj.scheme.value == "byte-level":
            data = bytes(byte_of[c] for c in token) if all(c in byte_of for c in token) else token.encode()
        else:
            data = token_bytes(token, tj.scheme)
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            expected.append(i)
    lazy = TokenBytes(tj.vocab, tj.scheme)
    assert undecodable_ids(lazy) == sorted(expected)
    assert not lazy.built or tj.scheme.value != "byte-level"  # the bulk pass built no table
    assert undecodable_ids(lazy.table) == sorted(expected)
