"""explain's default backends leave transformers out (``--all-backends`` or ``--backends`` bring it in),
and backends rebuilt from ranks for explain, decode and replay are decode-only builds that decode
exactly as the full build does."""

from __future__ import annotations

import json
import random

from tests.conftest import FIXTURES, run_cli
from tokaudit.backends.hf_backend import tokenizer_from_ranks
from tokaudit.backends.pattern import find_pattern
from tokaudit.backends.vocab import byte_vocab
from tokaudit.oncall.explain import backend_names

KIMI = FIXTURES / "kimi-k2.5"


def test_default_backends_leave_transformers_and_fastokens_out():
    # llama.cpp stays in the default list; load_backends keeps it only for a model with a GGUF
    assert backend_names(None, False) == ["tiktoken", "hf", "sentencepiece", "reference", "strict", "llama.cpp"]
    assert backend_names(None, True) == [
        "tiktoken",
        "hf",
        "sentencepiece",
        "fastokens",
        "reference",
        "strict",
        "transformers-fast",
        "transformers-slow",
        "llama.cpp",
        "transformers-gguf",
    ]
    assert backend_names("hf,transformers-fast,fastokens", False) == ["hf", "transformers-fast", "fastokens"]


def test_explain_on_a_tokenizer_json_model_loads_fastokens_only_when_asked():
    llama = FIXTURES / "spm-llama-like"
    default = json.loads(run_cli("explain", llama, "3", "--format", "json", "--quiet").stdout)
    assert [b["name"] for b in default["backends"]] == ["tiktoken", "hf", "sentencepiece", "reference", "strict"]
    named = json.loads(
        run_cli("explain", llama, "3", "--backends", "hf,fastokens", "--format", "json", "--quiet").stdout
    )
    assert [b["name"] for b in named["backends"]] == ["hf", "fastokens"]
    # fastokens decodes with HF tokenizers from the same tokenizer.json: the hf row's answer
    assert named["ids"][0]["backends"]["fastokens"] == named["ids"][0]["backends"]["hf"]


def test_explain_on_kimi_by_default():
    out = run_cli("explain", KIMI, "163600", "--format", "json", "--quiet")
    assert out.exit_code == 0, out.stderr
    doc = json.loads(out.stdout)
    assert [(b["name"], b["available"]) for b in doc["backends"]] == [
        ("tiktoken", True),
        ("hf", True),
        ("reference", True),
        ("strict", True),
    ]
    assert [b["detail"] for b in doc["backends"]][1] == "rebuilt from tiktoken.model ranks"
    (entry,) = doc["ids"]
    assert entry["backends"]["hf"]["dropped"] is True
    assert entry["backends"]["tiktoken"]["exception"] == "KeyError"


def test_backends_and_all_backends_together_is_exit_2():
    out = run_cli("explain", KIMI, "5", "--backends", "hf", "--all-backends")
    assert out.exit_code == 2
    assert out.stderr == "tokaudit: error: key --all-backends: give --backends or --all-backends, not both\n"


def test_decode_only_build_from_ranks_decodes_as_the_full_build(kimi):
    model, _ = kimi
    vocab, pattern = byte_vocab(model), find_pattern(model, None)
    full = tokenizer_from_ranks(vocab, pattern)
    lean = tokenizer_from_ranks(vocab, None)  # what decode, explain and replay build: no merges, no pre-tokenizer
    assert lean.get_vocab() == full.get_vocab()
    rnd = random.Random(7)
    for _ in range(300):
        ids = [rnd.randrange(0, 163_840) for _ in range(rnd.randrange(1, 9))]
        for skip in (True, False):
            assert lean.decode(ids, skip_special_tokens=skip) == full.decode(ids, skip_special_tokens=skip), ids
    assert lean.decode([163586, 19180, 163600, 19180]) == full.decode([163586, 19180, 163600, 19180])


def test_a_pattern_oniguruma_rejects_does_not_stop_the_decode_only_hf_build():
    """explain only decodes, so hf rebuilt from ranks has no pre-tokenizer: a pattern Oniguruma rejects
    (``(?P<name>...)`` is fancy-regex and Python syntax, an undefined group option in Ruby syntax) leaves it
    available. It said 'tokenizers (Oniguruma) rejects the pattern' before."""
    out = run_cli(
        "explain",
        FIXTURES / "tiny-tiktoken",
        "72",
        "--backends",
        "hf,tiktoken",
        "--pat-str",
        r"(?P<w>\w+)|\s+|.",
        "--format",
        "json",
    )
    assert out.exit_code == 0, out.stderr
    (entry,) = json.loads(out.stdout)["ids"]
    assert entry["backends"]["hf"]["text"] == entry["backends"]["tiktoken"]["text"] == "H"
