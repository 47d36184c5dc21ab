"""Rule precision on real-shaped files (issue 9, section 5): TA203 and HTML vocabulary, TA603 triage
of normalizer effects and unknown tokens, TA604 only about the libraries that serve the model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import FIXTURES, run_cli
from tokaudit.compare.triage import NORMALIZER, REAL, UNKNOWN, triage_for
from tokaudit.model.load import load_model

DEC = FIXTURES / "decoders"


def _findings(*args: object) -> tuple[int, list[tuple[str, str, str]], dict]:
    r = run_cli(*args, "--format", "json")
    doc = json.loads(r.stdout)
    return r.exit_code, [(f["code"], f["severity"], f["message"]) for f in doc["findings"]], doc


def test_html_vocabulary_is_not_a_control_token() -> None:
    """Gemma 3 adds <table>, <h1>, <b>, <code>, ... as plain tokens: markup vocabulary, no TA203."""
    code, found, _ = _findings("scan", DEC / "gemma-like", "--select", "TA203")
    assert (code, found) == (0, [])


def test_a_lone_html_named_token_is_still_checked(tmp_path: Path) -> None:
    d = tmp_path / "few-tags"
    shutil.copytree(DEC / "gemma-like", d)
    data = json.loads((d / "tokenizer.json").read_text(encoding="utf-8"))
    drop = {"<table>", "</table>", "<h1>", "</h1>", "<b>", "</b>"}
    data["added_tokens"] = [t for t in data["added_tokens"] if t["content"] not in drop]
    (d / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    (d / "tokenizer_config.json").unlink()
    code, found, _ = _findings("scan", d, "--select", "TA203")
    assert [(c, s) for c, s, _ in found] == [("TA203", "note")]
    assert "<code> (449), </code> (450)" in found[0][2]


def test_roundtrip_triage_classes() -> None:
    bert = triage_for(load_model(str(DEC / "bert-json")))
    assert bert.normalizer == "BertNormalizer (lower-casing, accent stripping, control characters removed)"
    assert bert.classify("Héllo, World!", "hello , world !") == NORMALIZER
    assert bert.classify("the 🙂", "the [UNK]") == UNKNOWN
    assert bert.classify("the fox", "the dog") == REAL
    gemma = triage_for(load_model(str(DEC / "gemma-like")))
    assert gemma.normalizer == "Replace(' ' → '▁')" and gemma.whitespace is None
    assert gemma.classify("a▁b", "a b") == NORMALIZER  # the normalizer makes "▁" and " " one
    assert gemma.classify("a  b", "a b") == REAL  # whitespace is kept by this model: losing it is real


def test_bert_vocab_without_config_is_one_note_not_hundreds_of_errors() -> None:
    code, found, doc = _findings("compare", DEC / "bert-vocab-only", "--backends", "hf,strict")
    assert code == 0
    assert [(c, s) for c, s, _ in found] == [("TA603", "note"), ("TA603", "note")]
    normalizer, unknown = (f for f in doc["findings"])
    assert normalizer["details"]["subject"] == "normalizer" and unknown["details"]["subject"] == "unknown-token"
    assert normalizer["message"].startswith(
        "decode(encode(text)) differs from the text in 82 of 405 cases only by what the model's normalizer does "
        "(BertNormalizer: lower-casing, accent stripping, CJK characters split; BERT's pre-tokenizer splits on "
        "whitespace "
        "and punctuation), the same for every backend. BertTokenizer's defaults are assumed for do_lower_case, "
        "strip_accents, tokenize_chinese_chars (there is no tokenizer_config.json). Per backend: hf 82."
    )
    assert "BertTokenizer's defaults" not in unknown["message"]  # said once
    assert unknown["details"]["unk_token"] == "[UNK]" and unknown["details"]["backends"] == {"hf": 321}


def test_dummy_prefix_after_special_tokens_is_the_normalizer() -> None:
    """Llama 2 / Mistral: the Prepend('▁') normalizer runs on each segment between special tokens, so
    "x</s>world" decodes as "x</s> world" in tokenizers and sentencepiece alike: one note, not an error."""
    triage = triage_for(load_model(str(DEC / "mistral-like")))
    assert triage.segment_prefix == "the Prepend('▁') normalizer runs on every segment between special tokens"
    assert triage.specials == ("<unk>", "</s>", "<s>")
    assert triage.classify("Hello</s>world </s> x", "Hello</s> world </s>  x") == NORMALIZER
    assert triage.classify("Hello</s>world", "Hello</s> word") == REAL
    code, found, _ = _findings("compare", DEC / "mistral-like", "--backends", "hf,strict")
    assert [(c, s) for c, s, _ in found] == [("TA603", "note")]
    assert "runs on every segment between special tokens, so decode shows a space after each" in found[0][2]


def test_unknown_id_disagreement_of_tokaudit_backends_only_is_not_a_finding() -> None:
    code, found, doc = _findings("compare", DEC / "gemma-like", "--backends", "hf,strict")
    assert code == 0
    assert [(c, s) for c, s, _ in found] == [("TA603", "note")]
    table = doc["unknown_ids"]
    assert table["differing"] == []
    assert table["differing_only_tokaudit_backends"] == ["declared size"]  # hf drops 451, strict raises
    assert [a["kind"] for a in table["backends"]["strict"]] == ["text", "error", "error", "error"]
