"""llama.cpp's vocab GGUFs (from llama-cpp-python's sdist, in the real cache): the llama.cpp backend on
llama.cpp's own golden ids, and hf × llama.cpp parity on the HF ↔ GGUF pairs of the same model.

Every difference found was checked by hand and is listed here with its reason:

* decode: llama.cpp's ``llama_detokenize`` applies HF's ``clean_up_tokenization_spaces`` rules to BPE
  vocabularies (llama-bpe and gpt-2 among them) and HF ``tokenizers`` does not: 16 of 1,283 cases for
  Llama 3 (built-in corpus + ``.inp`` texts) and 16 of 518 for GPT-2, every one of them equal to
  hf's text with the rules applied (``clean_spaces``, a port checked against llama.cpp).
* encode: none.

Llama 2 (``ggml-vocab-llama-spm``) has no HF counterpart in the real suite (the @lenml "llama2"
package ships Mistral's tokenizer.json), so that pair is not run.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

import pytest

from realkit import fetch_module, gguf_keys

pytestmark = [
    pytest.mark.real,
    pytest.mark.skipif(
        find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed (pip install 'tokaudit[llamacpp]')"
    ),
]

#: The 19 vocab GGUFs by name (``gguf-NAME`` in the lock file), known at collection: a test per file spreads them
#: over the xdist workers (held to the files there are by test_the_vocab_files_and_the_ones_with_golden_ids).
VOCAB_NAMES = sorted(
    e["name"][len("gguf-") :] for e in fetch_module().load_lock()["tokenizers"] if e["name"].startswith("gguf-")
)
#: The vocab GGUFs that ship llama.cpp's .inp/.out, and their case counts.
GOLDEN_CASES = {
    "bert-bge": 46,
    "command-r": 46,
    "deepseek-coder": 46,
    "deepseek-llm": 46,
    "falcon": 46,
    "gemma-4": 46,
    "gpt-2": 46,
    "llama-bpe": 46,
    "llama-spm": 46,
    "mpt": 46,
    "phi-3": 46,
    "qwen2": 46,
    "qwen35": 50,
    "refact": 46,
    "starcoder": 46,
}


def test_the_vocab_files_and_the_ones_with_golden_ids(vocab_files: dict[str, Path]) -> None:
    """The per-file tests below are parametrized at collection (one test per file spreads over the xdist workers):
    their lists are the files there are."""
    assert sorted(vocab_files) == VOCAB_NAMES and len(VOCAB_NAMES) == 19
    assert sorted(n for n, p in vocab_files.items() if p.with_name(p.name + ".inp").is_file()) == sorted(GOLDEN_CASES)
    assert set(CONTROL_OVERRIDE) <= set(VOCAB_NAMES)


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_llamacpp_backend_equals_llamacpp_golden_ids_on_every_case(vocab_files: dict[str, Path], name: str) -> None:
    from tokaudit.backends.llamacpp_backend import LlamaCppBackend
    from tokaudit.compare.golden import read_golden

    path = vocab_files[name]
    golden = read_golden(path.with_name(path.name + ".inp"))
    assert len(golden.cases) == GOLDEN_CASES[name]
    backend = LlamaCppBackend.load(path)
    wrong = [case.where for case in golden.cases if tuple(backend.encode(case.text)) != case.ids]
    assert wrong == [], name


@pytest.mark.parametrize(
    ("hf_dir", "vocab", "cases", "decode_differences"),
    [
        ("llama3", "llama-bpe", 1283, 16),
        ("gpt2-json", "gpt-2", 518, 16),
    ],
)
def test_hf_and_llamacpp_parity_on_the_same_model(
    vocab_files: dict[str, Path], hf_dir: str, vocab: str, cases: int, decode_differences: int
) -> None:
    from tokaudit.model.llamacpp_vocab import clean_spaces
    from tokaudit.backends.registry import load_backends
    from tokaudit.compare.corpus import builtin_corpus
    from tokaudit.compare.golden import read_golden
    from tokaudit.compare.run import special_strings
    from tokaudit.model.load import load_model

    gguf = vocab_files[vocab]
    model = load_model(str(fetch_module().default_cache() / "models" / hf_dir), None)
    hf, llama = (lb.backend for lb in load_backends(model, ["hf", "llama.cpp"], gguf=gguf))
    texts = [c.text for c in builtin_corpus(special_strings(model))]
    texts += [c.text for c in read_golden(gguf.with_name(gguf.name + ".inp")).cases]
    assert len(texts) == cases
    differ = 0
    for text in texts:
        ids = hf.encode(text)
        assert llama.encode(text) == ids, text[:80]
        ours, theirs = hf.decode(ids), llama.decode(ids)
        if ours != theirs:
            differ += 1
            assert clean_spaces(ours) == theirs, text[:80]
    assert differ == decode_differences


# -- llama.cpp-server pieces, emulated from the GGUF --------------------------------------------------

#: Ids llama.cpp types CONTROL at load although the GGUF does not ("control-looking" tokens it finds by
#: name: it logs "this is probably a bug in the model"); the emulation is given them, as the GGUF rules compute them.
CONTROL_OVERRIDE = {"aquila": 1, "deepseek-coder": 3, "gemma-4": 1, "phi-3": 1, "qwen2": 1, "qwen35": 1}


@pytest.mark.parametrize("name", VOCAB_NAMES)
def test_server_pieces_emulated_from_the_gguf_equal_llamacpp_on_every_id(
    vocab_files: dict[str, Path], name: str
) -> None:
    from tokaudit.backends.llamacpp_backend import LlamaCppBackend
    from tokaudit.model.llamacpp_vocab import ATTR_CONTROL, PieceRules, token_piece

    path = vocab_files[name]
    keys = gguf_keys(path)
    real = LlamaCppBackend.load(path)
    tokens, types = keys["tokenizer.ggml.tokens"], keys.get("tokenizer.ggml.token_type")
    ids = list(range(len(tokens)))  # asked of llama.cpp in batches: one worker round trip per id took ~7 min
    attrs = real.attrs(ids)
    control = {i for i in ids if attrs[i] & ATTR_CONTROL and (types is None or types[i] != 3)}
    assert len(control) == CONTROL_OVERRIDE.get(name, 0), name
    rules = PieceRules.from_gguf(
        tokens,
        types,
        keys["tokenizer.ggml.model"].decode(),
        keys["tokenizer.ggml.pre"].decode() if "tokenizer.ggml.pre" in keys else None,
        control,
    )
    for special in (True, False):
        pieces = real.pieces(ids, special)
        wrong = [i for i in ids if token_piece(rules, i, special) != pieces[i]]
        assert wrong == [], (name, special, wrong[:5])


def test_encode_with_llamacpp_shows_the_servers_prompt_ids(vocab_files: dict[str, Path], tmp_path: Path) -> None:
    """Llama 3's GGUF forces add_bos (llama.cpp's llama-bpe pre-tokenizer): the server's prompt starts with BOS."""
    import json
    import shutil

    from conftest import run_cli

    root = tmp_path / "llama3"
    shutil.copytree(fetch_module().default_cache() / "models" / "llama3", root)
    shutil.copyfile(vocab_files["llama-bpe"], root / "ggml-vocab-llama-bpe.gguf")
    doc = json.loads(
        run_cli("encode", str(root), "Hello <|eot_id|>", "--backend", "llama.cpp", "--format", "json").stdout
    )
    assert (doc["ids"], doc["server_prompt_ids"]) == ([9906, 220, 128009], [128000, 9906, 220, 128009])
