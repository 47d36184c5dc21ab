"""The byte-level BPE rebuilt from ranks (compare's hf backend for rank-file models): its merges are
exactly the definition's (every split of a token into two tokens, ordered by the token's rank, then the
left half's), and it encodes as tiktoken does on the same ranks and pattern."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES
from tokaudit.backends.hf_backend import merge_ids, recover_merges, tokenizer_from_ranks
from tokaudit.backends.pattern import find_pattern
from tokaudit.backends.registry import load_backends
from tokaudit.backends.vocab import byte_vocab
from tokaudit.model.load import load_model

TEXTS = [
    "Hello world, it's 2024!",
    "中文 and カタカナ, 한국어 — café naïve",
    "def add(a, b):\n    return a + b  # 1314151",
    "  \n\t x 👍🏽 👨‍👩‍👧",
    '{"name": "get_weather", "arguments": {"city": "東京"}}',
    "",
    "ab" * 40,
    "\u00ad\ufeff\U0001f600",
]


def definition(ranks: dict[bytes, int]) -> list[tuple[bytes, bytes]]:
    """The merges as defined, the slow way: every cut of every token, sorted by (token rank, left rank)."""
    found = []
    for token, rank in ranks.items():
        for cut in range(1, len(token)):
            left, right = token[:cut], token[cut:]
            if left in ranks and right in ranks:
                found.append((rank, ranks[left], left, right))
    return [(left, right) for _, _, left, right in sorted(found)]


def test_merges_of_a_small_vocabulary_in_rank_then_left_order() -> None:
    ranks = {bytes([i]): i for i in range(256)} | {b"ab": 256, b"bc": 257, b"abc": 258, b"": 259}
    assert recover_merges(ranks) == [(b"a", b"b"), (b"b", b"c"), (b"a", b"bc"), (b"ab", b"c")]
    assert merge_ids(ranks) == ([97, 98, 97, 256], [98, 99, 257, 99])


def test_ranks_must_be_distinct() -> None:
    with pytest.raises(ValueError, match="ranks are not distinct"):
        merge_ids({b"a": 0, b"b": 0})


@pytest.mark.parametrize(("fixture", "count"), [("kimi-k2.5", 294817), ("tiny-tiktoken", 837), ("mistral-tekken", 380)])
def test_merges_equal_the_definition(fixture: str, count: int) -> None:
    ranks = byte_vocab(load_model(str(FIXTURES / fixture))).ranks
    merges = recover_merges(ranks)
    assert len(merges) == count
    assert merges == definition(ranks)


@pytest.fixture(scope="module")
def kimi_backends() -> dict:
    model = load_model(str(FIXTURES / "kimi-k2.5"))
    return {lb.name: lb for lb in load_backends(model, ["tiktoken", "hf"])}


def test_rebuilt_kimi_encodes_as_tiktoken(kimi_backends: dict) -> None:
    hf, tk = kimi_backends["hf"], kimi_backends["tiktoken"]
    assert hf.detail == "rebuilt from tiktoken.model ranks"
    assert hf.backend.encode_batch(TEXTS) == tk.backend.encode_batch(TEXTS)
    assert hf.backend.encode("<|im_end|>") == tk.backend.encode("<|im_end|>") == [163586]


def test_rebuilt_kimi_keeps_every_rank_at_its_id(kimi_backends: dict) -> None:
    """Every rank is in the BPE vocabulary at its own id (no renumbering): each valid UTF-8 token decodes alone to its
    text."""
    tok = kimi_backends["hf"].backend.tokenizer
    vocab = byte_vocab(load_model(str(FIXTURES / "kimi-k2.5")))
    assert tok.get_vocab_size(with_added_tokens=False) == len(vocab.ranks) + len(vocab.specials) == 163584 + 23
    texts = {}
    for token, i in vocab.ranks.items():
        try:
            texts[i] = token.decode("utf-8")
        except UnicodeDecodeError:
            pass
    ids = sorted(texts)
    assert len(ids) > 150_000
    assert tok.decode_batch([[i] for i in ids]) == [texts[i] for i in ids]


def test_rebuilt_with_shifted_ranks_encodes_as_tiktoken() -> None:
    """Tekken ranks start after the special block (ids 100..699): the rank -> spelling table is a dict, not the list."""
    model = load_model(str(FIXTURES / "mistral-tekken"))
    vocab = byte_vocab(model)
    assert min(vocab.ranks.values()) == 100
    rebuilt = tokenizer_from_ranks(vocab, find_pattern(model))
    tiktoken = load_backends(model, ["tiktoken"])[0].backend
    assert [e.ids for e in rebuilt.encode_batch(TEXTS, add_special_tokens=False)] == tiktoken.encode_batch(TEXTS)
