"""Token text follows the tokenizer's own decoder chain (issue 9, section 2): the chain emulation
against the tokenizers library, the strict backend, replay's ``bytes`` detokenizer, the token tables
and id-collision, on the Gemma-, Mistral- and BERT-shaped fixtures of make_decoder_fixtures.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, decoders

from tests.conftest import FIXTURES, run_cli
from tokaudit.artifacts.decoder_chain import parse_decoder
from tokaudit.model.decoding import PieceStream, decode
from tokaudit.backends.registry import load_backends
from tokaudit.model.text import TokenText
from tokaudit.model.load import load_model

DEC = FIXTURES / "decoders"
GEMMA, MISTRAL, BERT_JSON = DEC / "gemma-like", DEC / "mistral-like", DEC / "bert-json"
BERT_VOCAB, BERT_CASED = DEC / "bert-vocab-only", DEC / "bert-cased"
TEXT = "Hello  world 🙂 the quick brown fox. naïve\n  code"

CHAINS = {
    "mistral": decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    ),
    "gemma": decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]),
    "metaspace-always": decoders.Metaspace(prepend_scheme="always"),
    "metaspace-never": decoders.Metaspace(prepend_scheme="never"),
    "byte-level": decoders.ByteLevel(),
    "wordpiece": decoders.WordPiece(),
    "bpe-suffix": decoders.BPEDecoder(),
    "strip-per-token": decoders.Strip(" ", 1, 0),
}
PIECES = [
    "▁",
    "▁▁",
    "a",
    "##c",
    "<0x20>",
    "<0xE4>",
    "<0xBD>",
    "<0xA0>",
    "<0x0a>",
    " ",
    "Ġhi",
    "你",
    " .",
    "n't",
    "'",
    "x</w>",
    "ĊĠ",
]


def _chain(d: object):
    return parse_decoder(json.loads(d.__getstate__()), "test")  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", sorted(CHAINS))
@settings(max_examples=300, deadline=None)
@given(tokens=st.lists(st.sampled_from(PIECES), max_size=7))
def test_chain_decodes_like_tokenizers(name: str, tokens: list[str]) -> None:
    lib = CHAINS[name]
    chain = _chain(lib)
    assert decode(chain, list(tokens)) == lib.decode(list(tokens))
    if chain.not_concatenative is None and not {"<0xE4>", "<0xBD>", "<0xA0>"} & set(tokens):
        stream = PieceStream(chain)
        assert b"".join(stream.piece(t) for t in tokens).decode("utf-8", "replace") == lib.decode(list(tokens))


def test_chain_descriptions_and_applicability() -> None:
    assert _chain(CHAINS["mistral"]).describe() == "Replace('▁' → ' ') → ByteFallback → Fuse → Strip(' ', 1, 0)"
    assert _chain(CHAINS["mistral"]).not_concatenative is None
    assert _chain(CHAINS["wordpiece"]).not_concatenative == (
        "WordPiece puts a space before every token that does not start with '##': token bytes do not concatenate to "
        "the text"
    )
    assert decode(parse_decoder(None, "t"), ["a", "b"]) == "a b"  # no decoder: tokenizers joins with spaces
    assert parse_decoder({"type": "CTC"}, "t").not_concatenative == "the decoder CTC is not emulated"


@pytest.mark.parametrize("target", [GEMMA, MISTRAL, BERT_JSON], ids=lambda p: p.name)
@pytest.mark.parametrize("skip", [False, True])
def test_strict_and_pieces_equal_the_library_decode(target: Path, skip: bool) -> None:
    tok = Tokenizer.from_file(str(target / "tokenizer.json"))
    model = load_model(str(target))
    strict = load_backends(model, ["strict"])[0].backend
    text = TokenText(model)
    for sample in (TEXT, "  leading spaces", "The quick brown fox. Hello, world! 你 don't", "<b>bold</b> <table>"):
        ids = tok.encode(sample).ids
        ids = [tok.token_to_id(t) for t in ("<bos>", "<s>", "[CLS]") if tok.token_to_id(t) is not None][:1] + ids
        want = tok.decode(ids, skip_special_tokens=skip)
        assert strict.decode(ids, skip) == want
        if text.not_concatenative is None:
            assert b"".join(text.pieces(ids, skip)).decode("utf-8", "replace") == want  # type: ignore[arg-type]


def test_strict_follows_the_strip_decoder() -> None:
    """Mistral-7B shape: the Strip decoder removes the leading space; the old strict kept it."""
    tok = Tokenizer.from_file(str(MISTRAL / "tokenizer.json"))
    strict = load_backends(load_model(str(MISTRAL)), ["strict"])[0]
    ids = tok.encode("Hello world").ids
    assert tok.id_to_token(ids[0]).startswith("▁")
    assert strict.backend.decode(ids) == "Hello world"
    assert strict.detail == "files profile, decoder: Replace('▁' → ' ') → ByteFallback → Fuse → Strip(' ', 1, 0)"


@pytest.mark.parametrize("target", [BERT_VOCAB, BERT_CASED, FIXTURES / "bert-wordpiece"], ids=lambda p: p.name)
def test_wordpiece_strict_spaces_words_and_drops_unk_like_hf(target: Path) -> None:
    model = load_model(str(target))
    hf, strict = (lb.backend for lb in load_backends(model, ["hf", "strict"]))
    ids = hf.encode("The quick brown fox. [UNK] Hello")
    assert 1 in ids  # [UNK]
    for skip in (False, True):
        assert strict.decode(ids, skip) == hf.decode(ids, skip)
    expected = "The quick brown fox. Hello" if target == BERT_CASED else "the quick brown fox. hello"
    assert strict.decode(ids, True) == expected


def test_wordpiece_settings_come_from_tokenizer_config_else_bert_defaults() -> None:
    cased = load_backends(load_model(str(BERT_CASED)), ["hf"])[0]
    assert cased.backend.encode("Hello")[0] == 214  # the cased vocabulary line, not "hello"
    assert cased.detail == (
        "built from vocab.txt (BERT WordPiece, BertNormalizer: no lower-casing, accents kept, CJK characters "
        "split; BertTokenizer defaults for strip_accents, tokenize_chinese_chars)"
    )
    bare = load_backends(load_model(str(BERT_VOCAB)), ["hf"])[0]
    assert bare.backend.decode(bare.backend.encode("Héllo [CLS]"), True) == "hello"
    assert bare.detail.endswith("BertTokenizer defaults for do_lower_case, strip_accents, tokenize_chinese_chars)")


def test_gemma_whitespace_added_tokens_are_not_an_id_collision() -> None:
    """Gemma 3 registers "▁▁" as an added token at the id of its vocabulary entry "▁▁": one token."""
    r = run_cli("scan", GEMMA, "--select", "TA102", "--format", "json")
    assert (r.exit_code, json.loads(r.stdout)["findings"]) == (0, [])
    model = load_model(str(GEMMA))
    text = TokenText(model)
    assert text.piece(299) == b"  " and text.spelling(299) == "▁▁"


def test_id_collision_still_found_where_tokens_differ() -> None:
    r = run_cli("scan", FIXTURES / "rules" / "id-collision", "--select", "TA102", "--format", "json")
    assert [f["name"] for f in json.loads(r.stdout)["findings"]] == ["id-collision"]


def _replay(target: Path, ids: list[int], tmp_path: Path, *extra: str) -> dict:
    stream = tmp_path / "ids.json"
    stream.write_text(json.dumps(ids), encoding="utf-8")
    r = run_cli("replay", target, stream, "--format", "json", *extra)
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("target", [GEMMA, MISTRAL], ids=lambda p: p.name)
def test_replay_bytes_equals_the_library_decode(target: Path, tmp_path: Path) -> None:
    tok = Tokenizer.from_file(str(target / "tokenizer.json"))
    ids = tok.encode(TEXT).ids
    doc = _replay(target, ids, tmp_path)
    texts = {d["name"]: d["text"] for d in doc["detokenizers"]}
    assert doc["text"] == tok.decode(ids, skip_special_tokens=True) == TEXT
    assert texts["bytes"] == texts["offsets"] == texts["decodestream"] == TEXT
    assert {(f["code"], f["details"]["detokenizer"]) for f in doc["findings"]} <= {
        ("TA503", "naive"),
        ("TA505", "naive"),
    }


def test_replay_bytes_is_not_applicable_to_wordpiece(tmp_path: Path) -> None:
    tok = Tokenizer.from_file(str(BERT_JSON / "tokenizer.json"))
    ids = [2] + tok.encode("The quick brown fox. 你 don't").ids + [3]  # [CLS] ... [UNK] ... [SEP]
    assert 1 in ids
    doc = _replay(BERT_JSON, ids, tmp_path)
    assert doc["text"] == tok.decode(ids, skip_special_tokens=True) == "the quick brown fox. don ' t"
    by_name = {d["name"]: d for d in doc["detokenizers"]}
    assert by_name["bytes"]["applicable"] is False
    assert by_name["bytes"]["reason"].startswith("WordPiece puts a space before every token")
    assert by_name["offsets"]["text"] == by_name["decodestream"]["text"] == doc["text"]
    assert [f["code"] for f in doc["findings"] if f["severity"] != "note"] == []
    rich = run_cli("replay", BERT_JSON, tmp_path / "ids.json")
    assert "bytes         not applicable: WordPiece puts a space" in rich.stdout


def test_replay_vocab_txt_drops_unk_under_skip_special(tmp_path: Path) -> None:
    model = load_model(str(BERT_VOCAB))
    hf = load_backends(model, ["hf"])[0].backend
    ids = hf.encode("the fox [UNK] and the dog")
    doc = _replay(BERT_VOCAB, ids, tmp_path)
    assert doc["text"] == "the fox and the dog"
    kept = _replay(BERT_VOCAB, ids, tmp_path, "--keep-special-tokens")
    assert kept["text"] == "the fox [UNK] and the dog"


def test_token_tables_show_decoder_text(tmp_path: Path) -> None:
    tok = Tokenizer.from_file(str(MISTRAL / "tokenizer.json"))
    ids = tok.encode("Hello world").ids
    r = run_cli("decode", MISTRAL, ",".join(map(str, ids)), "--format", "json")
    doc = json.loads(r.stdout)
    assert "".join(t["text"] for t in doc["tokens"]) == doc["text"] == "Hello world"
    r = run_cli("explain", GEMMA, "299", "--format", "json")
    entry = json.loads(r.stdout)["ids"][0]
    assert (entry["text"], entry["bytes_hex"]) == ("  ", "2020")
    r = run_cli("encode", BERT_VOCAB, "The [UNK] fox", "--format", "json")
    rows = [(t["id"], t["text"], t["special"]) for t in json.loads(r.stdout)["tokens"]]
    assert rows == [
        (77, "the", False),
        (1, " [UNK]", True),
        (30, " f", False),
        (65, "o", False),
        (74, "x", False),
    ]  # "##o", "##x"


def test_strict_invalid_byte_fallback_run_is_one_replacement_per_byte() -> None:
    """tokenizers' ByteFallback turns an invalid <0xNN> run into one U+FFFD per byte (UTF-8 decoding
    would give one for the whole run): strict leaves its fast path for the exact chain there."""
    tok = Tokenizer.from_file(str(GEMMA / "tokenizer.json"))
    strict = load_backends(load_model(str(GEMMA)), ["strict"])[0].backend
    ids = [tok.token_to_id("<0xE4>"), tok.token_to_id("<0xBD>"), tok.token_to_id("a")]
    assert ids == [232, 193, tok.token_to_id("a")]
    assert strict.decode(ids) == tok.decode(ids) == "\ufffd\ufffda"
