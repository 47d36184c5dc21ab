"""The JSON source map: the line and column of a key path in a file's text, as findings name it."""

from __future__ import annotations

import json

from tests.conftest import FIXTURES
from tokaudit.artifacts.json_positions import key_offset, key_position

TEXT = """{
  "version": "1.0",
  "added_tokens": [
    {"id": 0, "content": "<s>"},
    {"id": 1,
     "content": "</s>"}
  ],
  "a.b": {"c": [1, [2, 3], {"d": null}]},
  "model": {"type": "BPE", "vocab": {"x": 0, "y": 1}}
}
"""


def test_members_and_elements() -> None:
    assert key_position(TEXT, "version") == (2, 3)
    assert key_position(TEXT, "added_tokens") == (3, 3)
    assert key_position(TEXT, "added_tokens[0]") == (4, 5)
    assert key_position(TEXT, "added_tokens[1].content") == (6, 6)
    assert key_position(TEXT, "a.b.c[2].d") == (8, 29)  # a member name with a dot in it
    assert key_position(TEXT, "model.vocab.y") == (9, 46)


def test_a_path_beyond_the_file_gives_the_deepest_member_found() -> None:
    assert key_position(TEXT, "model.vocab[260]") == key_position(TEXT, "model.vocab")  # vocab is an object
    assert key_position(TEXT, "added_tokens[7]") == key_position(TEXT, "added_tokens")  # only 2 elements
    assert key_position(TEXT, "model.merges") == key_position(TEXT, "model")
    assert key_position(TEXT, "nothing") is None and key_position("[1, 2]", "a") is None


def test_not_json_past_a_point_and_a_bom() -> None:
    assert key_position('{"a": {"b": 1, "c": ', "a.c") == (1, 16)
    assert key_position('{"a": {"b": tru', "a.c") == (1, 2)  # the bad value stops the walk inside "a"
    assert key_offset("\ufeff" + '{"k": 1}', "k") == 2
    assert key_position("", "k") is None


def test_escaped_names_and_strings_that_look_like_keys() -> None:
    text = json.dumps({"say": 'he said "k": 1', "k\u00e9": {"x": 2}, "k": 3})
    assert text[key_offset(text, "k") :].startswith('"k": 3')
    assert text[key_offset(text, "k\u00e9.x") :].startswith('"x": 2')


def test_real_fixture_lines() -> None:
    text = (FIXTURES / "kimi-k2.5" / "config.json").read_text()
    line, column = key_position(text, "text_config.vocab_size")
    assert (line, column) == (17, 5) and text.splitlines()[16][column - 1 :].startswith('"vocab_size": 163840')
    config = (FIXTURES / "kimi-k2.5" / "tokenizer_config.json").read_text()
    assert key_position(config, "added_tokens_decoder.163590") == (43, 5)
    assert key_position(config, "auto_map.AutoTokenizer") == (206, 5)
