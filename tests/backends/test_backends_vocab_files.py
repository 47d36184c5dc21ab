"""hf backend built from the slow vocabulary files (vocab.json + merges.txt, vocab.txt), as transformers does."""

from __future__ import annotations

import json

from tests.conftest import FIXTURES, run_cli
from tokaudit.backends.registry import load_backends
from tokaudit.model.load import load_model

TEXTS = ["Hello world, 世界", "def f(x):\n    return x  # done", "  spaces   and\ttabs", "<|endoftext|> after"]


def _hf(target: str):
    (loaded,) = load_backends(load_model(target), ["hf"])
    assert loaded.backend is not None, loaded.unavailable
    return loaded.backend


def test_gpt2_files_encode_like_the_tokenizer_json_they_came_from() -> None:
    gpt2, clean = _hf(str(FIXTURES / "gpt2-files")), _hf(str(FIXTURES / "clean-bpe"))
    assert gpt2.origin == "built from vocab.json + merges.txt (GPT-2 byte-level BPE)"
    for text in TEXTS:
        assert gpt2.encode(text) == clean.encode(text), text
        assert gpt2.decode(gpt2.encode(text)) == text


def test_bert_vocab_txt_wordpiece() -> None:
    bert = _hf(str(FIXTURES / "bert-wordpiece"))
    vocab = (FIXTURES / "bert-wordpiece" / "vocab.txt").read_text(encoding="utf-8").splitlines()
    # tokenizer_config.json sets do_lower_case only; the other two settings are BertTokenizer's defaults
    assert bert.origin == (
        "built from vocab.txt (BERT WordPiece, BertNormalizer: lower-casing, accent stripping, CJK characters "
        "split; BertTokenizer defaults for strip_accents, tokenize_chinese_chars)"
    )
    assert bert.encode("Playing") == [vocab.index("play"), vocab.index("##ing")]  # lower-cased, then split
    assert bert.decode([vocab.index("play"), vocab.index("##ing")]) == "playing"


def test_replay_and_decode_work_on_gpt2_files() -> None:
    ids = _hf(str(FIXTURES / "gpt2-files")).encode("Hello world, 世界")
    result = run_cli(
        "replay",
        FIXTURES / "gpt2-files",
        "-",
        "--format",
        "json",
        "--detokenizers",
        "full,offsets,bytes",
        input=json.dumps(ids),
    )
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["text"] == "Hello world, 世界"
    assert {d["name"]: d["text"] for d in doc["detokenizers"]} == {
        n: "Hello world, 世界" for n in ("full", "offsets", "bytes")
    }
