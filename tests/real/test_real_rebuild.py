"""The byte-level BPE tokaudit rebuilds from a real rank file (cl100k_base, as published): the merges are
exactly the definition's, and the rebuilt tokenizer encodes as tiktoken's own cl100k_base encoding."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real import realkit
from tests.test_merge_recovery import TEXTS, definition
from tokaudit.backends.hf_backend import recover_merges
from tokaudit.backends.registry import load_backends
from tokaudit.backends.vocab import byte_vocab
from tokaudit.scan import load_model

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
