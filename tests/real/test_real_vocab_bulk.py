"""The whole-vocabulary passes of tokenizer.json (issue 22) give exactly what a pass per token gives, on
every real tokenizer.json: token bytes (DeepSeek V3 has tokens outside GPT-2's alphabet, Gemma 3 its
<0xNN> byte tokens) and the lowest id of each token string."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real import realkit
from tokaudit.artifacts.token_bytes import token_bytes
from tokaudit.artifacts.tokenizer_json import parse_tokenizer_json

pytestmark = pytest.mark.real

NAMES = sorted(e["name"] for e in realkit.lock_entries())


@pytest.mark.parametrize("name", NAMES)
def test_bulk_passes_equal_per_token_passes(name: str, real_dirs: dict[str, Path]) -> None:
    path = real_dirs[name] / "tokenizer.json"
    if not path.is_file():
        pytest.skip("no tokenizer.json")
    tj = parse_tokenizer_json(path)
    assert list(tj.by_id.items()) == [(i, token_bytes(t, tj.scheme)) for i, t in tj.vocab.items()]
    lowest: dict[str, int] = {}
    for i, token in sorted(tj.vocab.items()):
        lowest.setdefault(token, i)
    assert tj.first_id_by_content == lowest
