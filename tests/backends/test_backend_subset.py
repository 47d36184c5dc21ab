"""Backends built from the rank entries one question reads (explain's ids, decode's ids, encode's text;
tokaudit/backends/subset.py) answer exactly as the full builds do, on the fixtures and on real rank
files: every id kind (mapped, gap, special, the declared end, beyond it, u32 edges, negative) one at a
time and as one sequence, and texts with special tokens, CJK, emoji, whitespace runs and lone surrogates.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli
from tokaudit.backends.base import call
from tokaudit.backends.registry import LoadedBackend, load_backends
from tokaudit.backends.vocab import byte_vocab
from tokaudit.compare.unknown_ids import answer
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.model.load import load_model

KIMI = FIXTURES / "kimi-k2.5"
#: Rank-file fixtures (tiktoken.model, tekken.json), and one without ranks (nothing to cut down).
FIXTURE_DIRS = [
    "kimi-k2.5",
    "tiny-tiktoken",
    "mistral-tekken",
    "qwen-remote",
    "oncall/tiny-changed-rank",
    "rules/id-collision",
    "clean-bpe",
]
#: Real rank files, and two tokenizer.json models (hf loads the json whole: no subset is claimed).
REAL_DIRS = [
    "cl100k-tiktoken",
    "r50k-whisper-gpt2-tiktoken",
    "whisper-multilingual-tiktoken",
    "tekken-v3",
    "tekken-v7",
    "qwen3",
    "llama3",
]
NAMES = ["tiktoken", "hf", "reference", "strict"]
EDGE_IDS = [-1, -(2**31), 2**31 - 1, 2**32 - 1, 2**32, 2**63]
TEXTS = [
    "",
    "Hello, world!",
    "  leading and  double  spaces\t\ttabs\n\n\nnewlines ",
    "检查 CDP 依赖环境",
    "日本語のテキスト、句読点。",
    "emoji 👨‍👩‍👧 🇫🇷 family",
    "é\u0301 combining",
    "def add(a, b):\n    return a + b  # 1314151",
    "lone \ud800 surrogate",
    "supercalifragilisticexpialidocious" * 3,
    "x" * 300,
    "0123456789" * 20,
]


@cache
def _model(path: str) -> TokenizerModel:
    return load_model(path)


@cache
def _full(path: str, decode_only: bool) -> list[LoadedBackend]:
    return load_backends(_model(path), NAMES, decode_only=decode_only)


def probe_ids(model: TokenizerModel) -> list[int]:
    """Mapped ids spread over the vocabulary, both ends of the first gaps, every special, the declared end."""
    size = model.checked_size
    ids = list(range(0, size, max(1, size // 150))) + [1, 2, 255, 256, 257]
    for first, last in model.files.mapped.complement(size).ranges[:20]:
        ids += [first, last]
    try:
        ids += list(byte_vocab(model).specials.values())[:300]
    except Exception:  # noqa: BLE001 - no ranks: the specials come from the id tables below
        pass
    for table in model.profiles.values():
        for layer in table.layers:
            if layer.special:
                ids += list(layer.tokens)[:50]
    ids += [size - 2, size - 1, size, size + 1, *EDGE_IDS]
    return list(dict.fromkeys(ids))


def texts_for(model: TokenizerModel) -> list[str]:
    """TEXTS, special tokens inside text, and some tokens' own text."""
    out = list(TEXTS)
    try:
        vocab = byte_vocab(model)
    except Exception:  # noqa: BLE001 - a model without byte tokens keeps the plain texts
        return out
    specials = list(vocab.specials)[:5]
    out += [f"before{s}after {s}{s}" for s in specials]
    by_id = vocab.by_id
    sample = [by_id[i] for i in sorted(by_id)[:: max(1, len(by_id) // 40)]]
    out.append(" ".join(t.decode("utf-8", "replace") for t in sample))
    return out


def assert_decodes_alike(path: str) -> None:
    model = _model(path)
    full = _full(path, True)
    ids = probe_ids(model)
    sub = load_backends(model, NAMES, decode_only=True, for_ids=ids)
    for f, s in zip(full, sub):
        assert (f.name, f.available, f.unavailable, f.detail) == (s.name, s.available, s.unavailable, s.detail)
        if f.backend is None:
            continue
        claimed = s.subset is not None
        assert claimed == (
            f.name in ("tiktoken", "reference") or str(getattr(f.backend, "origin", "")).startswith("rebuilt from")
        )
        for i in ids:
            assert answer(f.backend, i) == answer(s.backend, i), (path, f.name, i)
        for skip in (False, True):  # one sequence, as decode does
            assert call(f.backend.decode, ids, skip) == call(s.backend.decode, ids, skip), (path, f.name, skip)
            ok = [i for i in ids if call(f.backend.decode, [i]).ok]
            assert call(f.backend.decode, ok, skip) == call(s.backend.decode, ok, skip), (path, f.name, skip)


def assert_encodes_alike(path: str) -> None:
    model = _model(path)
    full = _full(path, False)
    for text in texts_for(model):
        sub = load_backends(model, NAMES, for_text=text)
        for f, s in zip(full, sub):
            assert (f.available, f.unavailable) == (s.available, s.unavailable)
            if f.backend is None or not getattr(f.backend, "can_encode", True):
                continue
            assert call(f.backend.encode, text) == call(s.backend.encode, text), (path, f.name, text)


@pytest.mark.parametrize("name", FIXTURE_DIRS)
def test_fixture_subsets_decode_like_the_full_build(name: str) -> None:
    assert_decodes_alike(str(FIXTURES / name))


@pytest.mark.parametrize("name", FIXTURE_DIRS)
def test_fixture_subsets_encode_like_the_full_build(name: str) -> None:
    assert_encodes_alike(str(FIXTURES / name))


@pytest.mark.real
@pytest.mark.parametrize("name", REAL_DIRS)
def test_real_subsets_decode_and_encode_like_the_full_build(name: str, real_dirs: dict[str, Path]) -> None:
    assert_decodes_alike(str(real_dirs[name]))
    assert_encodes_alike(str(real_dirs[name]))


def tricky_ranks(tmp_path: Path) -> Path:
    """tiny-tiktoken with a token repeated at a later id (998's " there" again at 1010: the later id is the
    rank, 998 decodes in no rank backend) and a rank spelling a special token's text (1011 = "[EOS]",
    special 1001: tokenizers gives the special the rank's id, so 1001 decodes to nothing in hf)."""
    import base64
    import shutil

    target = tmp_path / "tricky"
    shutil.copytree(FIXTURES / "tiny-tiktoken", target)
    with (target / "tiktoken.model").open("ab") as f:
        for token, rank in ((b" there", 1010), (b"[EOS]", 1011)):
            f.write(base64.b64encode(token) + f" {rank}\n".encode())
    return target


def test_repeated_tokens_and_ranks_spelling_specials_decode_like_the_full_build(tmp_path: Path) -> None:
    path = str(tricky_ranks(tmp_path))
    model = _model(path)
    full = {lb.name: lb.backend for lb in _full(path, True)}
    assert (answer(full["tiktoken"], 998).kind, answer(full["tiktoken"], 1010).value) == ("error", " there")
    assert (answer(full["hf"], 1001).kind, answer(full["hf"], 1011).value) == ("dropped", "[EOS]")
    for ids in ([998], [1001], [1010, 1011], probe_ids(model) + [998, 1001, 1010, 1011]):
        sub = {lb.name: lb.backend for lb in load_backends(model, NAMES, decode_only=True, for_ids=ids)}
        for name in NAMES:
            assert [answer(full[name], i) for i in ids] == [answer(sub[name], i) for i in ids], (name, ids)
    assert_decodes_alike(path)
    assert_encodes_alike(path)


def test_kimi_subset_holds_the_asked_ids_and_says_so() -> None:
    model = _model(str(KIMI))
    [tk, hf, ref, strict] = load_backends(model, NAMES, decode_only=True, for_ids=[163600, 19180, 19180, -1])
    # 256 single bytes + id 19180 (163600 is a gap: no rank); every special token
    assert len(tk.backend.encoding._mergeable_ranks) == 257
    assert len(tk.backend.encoding._special_tokens) == 23
    expected = (
        "built from 257 of 163584 ranks (those decoding the asked ids reads, and the 256 single bytes) and all 23 "
        "special tokens: its answers for decoding the asked ids are the full build's; load_seconds is this build's"
    )
    assert (tk.subset, hf.subset, ref.subset, strict.subset) == (expected, expected, expected, None)
    assert "subset" not in strict.to_json() and tk.to_json()["subset"] == expected


def test_text_beyond_the_lookup_budget_builds_the_full_vocabulary() -> None:
    model = _model(str(KIMI))
    text = "abcdefgh " * 6000  # 54 kB: 54k start positions x the longest token
    [tk] = load_backends(model, ["tiktoken"], for_text=text)
    assert tk.subset is None and len(tk.backend.encoding._mergeable_ranks) == 163584
    [short] = load_backends(model, ["tiktoken"], for_text=text[:900])
    assert short.subset is not None
    assert short.backend.encode(text[:900]) == tk.backend.encode(text[:900])


def test_cli_explain_decode_encode_on_kimi_name_the_subset() -> None:
    r = run_cli("explain", KIMI, "163600", "19180", "--format", "json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    subsets = {b["name"]: b.get("subset") for b in doc["backends"]}
    assert subsets["strict"] is None and all(
        subsets[n].startswith("built from 257 of 163584 ranks") for n in ("tiktoken", "hf", "reference")
    )
    gap, mapped = doc["ids"]
    assert gap["backends"]["tiktoken"]["message"] == "'Invalid token for decoding: 163600'"
    assert (gap["backends"]["hf"]["kind"], mapped["backends"]["hf"]["text"]) == ("dropped", "oneor")
    dec = json.loads(run_cli("decode", KIMI, "19180 2804 163600", "--format", "json").stdout)
    assert dec["backend_subset"].startswith("built from 258 of 163584 ranks")
    assert dec["error"]["message"] == "'Invalid token for decoding: 163600'"
    enc = json.loads(run_cli("encode", KIMI, "hello <|im_end|>", "--format", "json").stdout)
    assert enc["backend_subset"].startswith("built from ") and enc["ids"][-1] == 163586
