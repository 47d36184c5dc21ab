r"""transformers-gguf (``AutoTokenizer.from_pretrained(dir, gguf_file=...)``, how vLLM serves a GGUF) against
llama.cpp's golden ids, on llama.cpp's vocab GGUFs. Needs torch (transformers 5 reads GGUF only with it)
and llama-cpp-python; checked with transformers 5.24.0 and torch 2.13.0 (CPU).

Every difference was checked by hand and is listed with its reason:

* ``llama-spm`` (Llama 2): transformers' GGUF Llama tokenizer does not add SentencePiece's dummy-prefix
  space where llama.cpp (and HF's own Llama 2 tokenizer) does: text starting with spaces loses one
  (" Hello" -> [15043] instead of [29871, 15043]; "  " -> [259] instead of [1678]): 15 of 46 cases.
* ``llama-bpe`` (Llama 3): "Cửa Việt" (case 44, which llama.cpp's converter comments "llama-bpe fails on
  this"): transformers merges " Việt" as [11655, 26298, 83] where the file's ids are [101798]: llama.cpp
  applies ``ignore_merges`` for llama-bpe (a pre-token that is itself a token is taken whole), the
  tokenizer transformers rebuilds from the GGUF does not.
* ``deepseek-coder``, ``deepseek-llm``, ``starcoder``: "ied 4 ½ months" (case 1): the space before "½" (a
  number, \p{N}) is split off alone by llama.cpp's pre-tokenizer for these names and kept with "½" by
  transformers' (deepseek-coder [207, 19192] vs [2688, 121]).
* ``falcon``: 9 cases (31, 33, 38-43, 46): falcon's pre-tokenizer groups digits by three ("3333" ->
  "333" "3", [22287, 30]) and splits "\n =" as "\n " "="; transformers' groups digits by two
  ([3138, 3138]) and splits "\n" " " "=".
* ``gpt-2``, ``phi-3``, ``qwen2``: no difference.
* Not loadable by transformers 5.24 (``GGUF model with architecture X is not supported yet``): bert-bge,
  command-r, refact, mpt, gpt-neox, baichuan, nomic-bert-moe; gemma-4 fails validating its config.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.real,
    pytest.mark.skipif(
        find_spec("torch") is None, reason="torch is not installed: transformers reads GGUF only with torch"
    ),
    pytest.mark.skipif(find_spec("transformers") is None, reason="the transformers extra is not installed"),
]

#: golden cases transformers-gguf encodes differently from llama.cpp's .out, per vocab GGUF
EXPECTED = {
    "gpt-2": [],
    "phi-3": [],
    "qwen2": [],
    "deepseek-llm": [1],
    "deepseek-coder": [1],
    "starcoder": [1],
    "falcon": [31, 33, 38, 39, 40, 41, 42, 43, 46],
    "llama-bpe": [44],
    "llama-spm": [4, 5, 6, 13, 15, 16, 18, 19, 25, 26, 27, 28, 29, 30, 45],
}
UNSUPPORTED = ["bert-bge", "command-r", "refact", "mpt", "gpt-neox", "baichuan", "nomic-bert-moe"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_transformers_gguf_on_llamacpp_golden_ids(vocab_files: dict[str, Path], name: str) -> None:
    from tokaudit.backends.transformers_backend import TransformersBackend
    from tokaudit.compare.golden import read_golden

    path = vocab_files[name]
    backend = TransformersBackend.load_gguf(path)
    golden = read_golden(path.with_name(path.name + ".inp"))
    wrong = [k for k, case in enumerate(golden.cases, start=1) if tuple(backend.encode(case.text)) != case.ids]
    assert wrong == EXPECTED[name]


@pytest.mark.parametrize("name", UNSUPPORTED)
def test_transformers_gguf_unsupported_architectures_are_unavailable_with_the_reason(
    vocab_files: dict[str, Path], name: str
) -> None:
    from tokaudit.backends.base import BackendUnavailable
    from tokaudit.backends.transformers_backend import TransformersBackend

    with pytest.raises(
        BackendUnavailable,
        match=r"AutoTokenizer\(gguf_file=ggml-vocab-.*\.gguf\) failed: ValueError: GGUF model with architecture",
    ):
        TransformersBackend.load_gguf(vocab_files[name])
