"""A BPE tokenizer.json is built from the JSON tokaudit already parsed (tokenizers would parse the file a
second time): the result serializes exactly as ``Tokenizer.from_str`` of the file and encodes the same;
whatever could differ (other models, added tokens that do not land on their declared ids, merges that split
ambiguously) is left to tokenizers' own parser."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from tests.conftest import FIXTURES, run_cli
from tokaudit.artifacts.safe_files import read_text
from tokaudit.backends.hf_backend import HFBackend, tokenizer_from_parsed
from tokaudit.model.load import load_model

TEXTS = [
    "Hello world, it's 2024!",
    "中文 and カタカナ, 한국어 — café naïve",
    "def add(a, b):\n    return a + b  # 1314151",
    "  \n\t x 👍🏽",
    "<|im_start|>user\nhi<|im_end|><|endoftext|> <s></s>",
    "",
    "\u00ad\ufeff\U0001f600",
]


def same_as_from_str(directory: Path) -> Tokenizer:
    tj = load_model(str(directory)).artifacts.tokenizer_json
    assert tj is not None
    built = tokenizer_from_parsed(tj)
    assert built is not None, directory
    parsed = Tokenizer.from_str(read_text(tj.path))
    assert built.to_str() == parsed.to_str()
    for special in (True, False):
        assert [e.ids for e in built.encode_batch(TEXTS, add_special_tokens=special)] == [
            e.ids for e in parsed.encode_batch(TEXTS, add_special_tokens=special)
        ]
    added = sorted(parsed.get_added_tokens_decoder())
    for skip in (True, False):
        assert built.decode(added + [0, 1, 2], skip_special_tokens=skip) == parsed.decode(
            added + [0, 1, 2], skip_special_tokens=skip
        )
    return built


@pytest.mark.parametrize(
    "fixture",
    [
        "clean-bpe",
        "compare/same",
        "templates/chatml",
        "templates/llama3-double-bos",
        "decoders/gemma-like",
        "streams/byte-fallback",
        "spm-llama-like",
    ],
)
def test_built_from_the_parsed_json_as_from_str(fixture: str) -> None:
    same_as_from_str(FIXTURES / fixture)


def test_legacy_merge_strings(tmp_path: Path) -> None:
    """Merges written "a b" (older files, Llama 3's) are split as tokenizers splits them."""
    data = json.loads((FIXTURES / "compare" / "same" / "tokenizer.json").read_text(encoding="utf-8"))
    data["model"]["merges"] = [" ".join(pair) for pair in data["model"]["merges"]]
    (tmp_path / "tokenizer.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    assert isinstance(data["model"]["merges"][0], str)
    same_as_from_str(tmp_path)


def _file_with(tmp_path: Path, change) -> Path:  # type: ignore[no-untyped-def]
    data = json.loads((FIXTURES / "compare" / "same" / "tokenizer.json").read_text(encoding="utf-8"))
    change(data)
    (tmp_path / "tokenizer.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return tmp_path


def _merge_with_two_spaces(data: dict) -> None:
    data["model"]["merges"] = [" ".join(pair) for pair in data["model"]["merges"]] + ["a b c"]


@pytest.mark.parametrize(
    ("case", "change"),
    [
        ("an added token without its flags", lambda d: d["added_tokens"][0].pop("lstrip")),
        ("an added token tokenizers would renumber", lambda d: d["added_tokens"][0].update(id=5000)),
        ("a merge string with two spaces", _merge_with_two_spaces),
        ("a model key this build does not know", lambda d: d["model"].update(cache_capacity=10)),
    ],
)
def test_left_to_tokenizers_when_it_could_differ(tmp_path: Path, case: str, change) -> None:  # type: ignore[no-untyped-def]
    tj = load_model(str(_file_with(tmp_path, change))).artifacts.tokenizer_json
    assert tokenizer_from_parsed(tj) is None, case


@pytest.mark.parametrize("fixture", ["rules/id-collision", "decoders/bert-json"])
def test_other_models_and_colliding_ids_go_through_from_str(fixture: str) -> None:
    model = load_model(str(FIXTURES / fixture))
    tj = model.artifacts.tokenizer_json
    assert tokenizer_from_parsed(tj) is None
    backend = HFBackend.from_model(model, None, None)  # still loads: tokenizers parses the file itself
    assert backend.tokenizer.to_str() == Tokenizer.from_str(read_text(tj.path)).to_str()


def test_template_with_a_bom_in_tokenizer_json_still_reports_that_tokenizers_refuses_it(tmp_path: Path) -> None:
    """The serving stacks load tokenizer.json with from_file, which refuses a BOM: template says so, as before."""
    target = tmp_path / "bom"
    shutil.copytree(FIXTURES / "templates" / "chatml", target)
    path = target / "tokenizer.json"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    r = run_cli("template", target, "--format", "json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (
        doc["tokenizer"]["error"]
        == "tokenizers cannot load tokenizer.json: Exception: expected value at line 1 column 1"
    )
    assert {r["ids"] is None for c in doc["conversations"] for r in c["renders"]} == {True}


def test_template_ids_are_the_files_own(tmp_path: Path) -> None:
    """template tokenizes each render with the tokenizer built from the parsed JSON: the ids from_file gives."""
    r = run_cli("template", FIXTURES / "templates" / "chatml", "--format", "json", "--stack", "transformers")
    doc = json.loads(r.stdout)
    tok = Tokenizer.from_file(str(FIXTURES / "templates" / "chatml" / "tokenizer.json"))
    renders = [x for c in doc["conversations"] for x in c["renders"] if x["text"] is not None]
    assert renders and doc["tokenizer"]["name"] == "hf (tokenizer.json, add_special_tokens)"
    assert [x["ids"] for x in renders] == [tok.encode(x["text"], add_special_tokens=True).ids for x in renders]
