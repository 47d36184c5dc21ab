"""The byte-level BPE tokaudit rebuilds from a real rank file (cl100k_base, as published): the merges are
exactly the definition's, and the rebuilt tokenizer encodes as tiktoken's own cl100k_base encoding."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real import realkit
from tests.backends.test_merge_recovery import TEXTS, definition
from tokaudit.backends.hf_backend import recover_merges
from tokaudit.backends.registry import load_backends
from tokaudit.backends.vocab import byte_vocab
from tokaudit.model.load import load_model

pytestmark = pytest.mark.real

NAME = "cl100k-tiktoken"


def test_cl100k_merges_equal_the_definition(real_dirs: dict[str, Path]) -> None:
    ranks = byte_vocab(load_model(str(real_dirs[NAME]))).ranks
    merges = recover_merges(ranks)
    assert len(merges) == 233378
    assert merges == definition(ranks)


def test_rebuilt_cl100k_encodes_as_tiktoken(real_dirs: dict[str, Path]) -> None:
    entry = next(e for e in realkit.lock_entries() if e["name"] == NAME)
    encode, _decode = realkit.library_codec(entry, real_dirs[NAME])  # tiktoken's own cl100k_base
    (hf,) = load_backends(load_model(str(real_dirs[NAME])), ["hf"])
    assert hf.detail == "rebuilt from cl100k_base.tiktoken ranks"
    texts = [*TEXTS, *realkit.CORPUS_LINES, realkit.STREAM_TEXT]
    assert hf.backend.encode_batch(texts) == [encode(t) for t in texts]


# every real BPE tokenizer.json (legacy "a b" merges and [a, b] pairs, added tokens inside and past the vocabulary)
PARSED = [
    "deepseek-v3",
    "gemma3",
    "gpt-3.5-turbo",
    "gpt-oss",
    "gpt2-json",
    "gpt4o",
    "llama3",
    "mistral-7b-json",
    "qwen3",
]


@pytest.mark.parametrize("name", PARSED)
def test_tokenizer_json_built_from_the_parsed_json_as_from_str(name: str, real_dirs: dict[str, Path]) -> None:
    from tokenizers import Tokenizer

    from tokaudit.artifacts.safe_files import read_text
    from tokaudit.backends.hf_backend import tokenizer_from_parsed

    tj = load_model(str(real_dirs[name])).artifacts.tokenizer_json
    built = tokenizer_from_parsed(tj)
    assert built is not None
    parsed = Tokenizer.from_str(read_text(tj.path))
    assert built.to_str() == parsed.to_str()
    texts = [*TEXTS, *realkit.CORPUS_LINES, realkit.STREAM_TEXT]
    for special in (True, False):
        assert [e.ids for e in built.encode_batch(texts, add_special_tokens=special)] == [
            e.ids for e in parsed.encode_batch(texts, add_special_tokens=special)
        ]
    added = sorted(parsed.get_added_tokens_decoder())
    assert built.decode(added, skip_special_tokens=True) == parsed.decode(added, skip_special_tokens=True)
