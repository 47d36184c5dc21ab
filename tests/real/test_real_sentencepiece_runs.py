"""Long whitespace runs on Mistral's SentencePiece models (issue 31 §3): the BPE tokaudit converts from the
pieces encodes as sentencepiece itself and as transformers' own converter do.

Mistral's whitespace pieces (runs of 1 to 16 ``▁``) all score -1e9; sentencepiece merges equal-score pieces in
id order. tokaudit ordered those merges by the ids of the two halves instead, so runs of 17 or more spaces
split into other pieces (94 of the 240 texts below, on each of v1, v2, v3 and v7; a --corpus with 20-space
Python indentation got a false TA601)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tokaudit.backends.sentencepiece_backend import tokenizer_from_sentencepiece
from tokaudit.model.load import load_model

pytestmark = pytest.mark.real

MISTRAL_SP = ["mistral-spm-v1", "mistral-spm-v2", "mistral-spm-v3", "mistral-spm-v7"]


def _texts() -> list[str]:
    texts = []
    for n in range(1, 41):
        texts += [
            " " * n + "x",
            "a" + " " * n + "b",
            "\t" * n + "x",
            " \t" * n + "y",
            "def f():\n" + " " * n + "return 1",
            "x" + " " * n,
        ]
    return texts


@pytest.mark.parametrize("name", MISTRAL_SP)
def test_converted_bpe_encodes_whitespace_runs_as_sentencepiece(real_dirs: dict[str, Path], name: str) -> None:
    import sentencepiece

    sp = sentencepiece.SentencePieceProcessor(model_file=str(real_dirs[name] / "tokenizer.model"))
    ours, _ = tokenizer_from_sentencepiece(load_model(str(real_dirs[name])))
    texts = _texts()
    assert [ours.encode(t, add_special_tokens=False).ids for t in texts] == [list(sp.encode(t)) for t in texts]


def test_seventeen_spaces_on_mistral_v2(real_dirs: dict[str, Path]) -> None:
    """17 spaces then x: sentencepiece gives '▁'*16, '▁', 'x' ([1127, 29473, 2086]); the old order gave [2185, 3055,
    2086]."""
    ours, _ = tokenizer_from_sentencepiece(load_model(str(real_dirs["mistral-spm-v2"])))
    assert ours.encode(" " * 17 + "x", add_special_tokens=False).ids == [1127, 29473, 2086]


def test_python_indentation_corpus_compares_clean(real_dirs: dict[str, Path], tmp_path: Path) -> None:
    """A user corpus of deeply indented Python: hf (converted), sentencepiece and transformers-fast agree."""
    corpus = tmp_path / "code.py"
    corpus.write_text(
        "".join(" " * (4 * d) + f"if x{d}:\n" for d in range(1, 9)) + " " * 20 + "return 1\n", encoding="utf-8"
    )
    result = run_cli(
        "compare", str(real_dirs["mistral-spm-v2"]), "--no-builtin-corpus", "--corpus", str(corpus), "--format", "json"
    )
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert not [f for f in doc["findings"] if f["code"] in ("TA601", "TA602", "TA603")]
    assert {b["name"] for b in doc["backends"] if b["available"]} >= {"hf", "sentencepiece", "transformers-fast"}
