"""Pure pieces of replay: UTF-8 tails, stop holdback and matching, tool-call extraction."""

from __future__ import annotations

import pytest

from tokaudit.stream.stops import apply_stops, held_suffix
from tokaudit.stream.toolcalls import find_tool_calls
from tokaudit.stream.utf8 import char_range, describe_partial, incomplete_tail


def test_incomplete_tail_is_a_valid_unfinished_character_only():
    assert incomplete_tail("ab环".encode()[:-1]) == b"\xe7\x8e"
    assert incomplete_tail("🌶".encode()[:3]) == b"\xf0\x9f\x8c"
    assert incomplete_tail("ab环".encode()) == b""
    assert incomplete_tail(b"ab\x84") == b""  # a stray continuation byte is invalid, not incomplete
    assert incomplete_tail(b"\xc0") == b""  # never a valid lead


def test_char_range_and_description():
    assert char_range(b"\xe7\x8e") == (0x7380, 0x73BF)  # 环 is U+73AF
    assert char_range(b"\xe0") == (0x0800, 0x0FFF)
    assert char_range(b"\xf4") == (0x100000, 0x10FFFF)
    assert describe_partial(b"\xe7\x8e") == "2 of 3 bytes (E7 8E) of a character in U+7380..U+73BF"


@pytest.mark.parametrize(
    ("text", "stops", "held"),
    [
        ("Hello <", ["<|im_end|>"], 1),
        ("Hello <|im", ["<|im_end|>"], 4),
        ("Hello", ["<|im_end|>"], 0),
        ("ab", ["abc", "bx"], 2),
        ("xb", ["abc", "bx"], 1),
        ("abc", ["abc"], 0),
    ],
)
def test_holdback_is_the_longest_proper_prefix_suffix(text, stops, held):
    assert held_suffix(text, stops) == held


def test_stop_string_across_tokens_is_cut_where_it_begins():
    chunks = ["The", " user", " is", " a", " cat"]
    ends = [3, 8, 11, 13, 17]
    out = apply_stops(chunks, [(1,), (2,), (3,), (4,), (5,)], ends, ["is a"], frozenset())
    assert (out.position, out.matched, out.text) == (3, "is a", "The user ")
    assert out.held == [0, 0, 2]  # " is" ends with "is", a proper prefix of "is a"


def test_earliest_completing_stop_wins_inside_a_multi_token_step():
    # vLLM's case: " The user is a" with stops ["a", "is"] -> "is" completes first
    chunks = [" The user is a"]
    ends = [4, 9, 12, 14]
    out = apply_stops(chunks, [(1, 2, 3, 4)], ends, ["a", "is"], frozenset())
    assert (out.position, out.matched, out.text) == (2, "is", " The user ")
    # a stop id earlier in the same step wins over the string
    out = apply_stops(chunks, [(1, 99, 3, 4)], ends, ["a", "is"], frozenset({99}))
    assert (out.position, out.matched, out.text) == (1, 99, " The")


def test_no_stop_releases_everything_at_the_end():
    out = apply_stops(["ab", "c<"], [(1,), (2,)], [2, 4], ["<|x|>"], frozenset())
    assert (out.position, out.text, out.held) == (None, "abc<", [0, 1])


def test_tool_calls_in_each_format():
    kimi = '<|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{"a": "北京"}<|tool_call_end|>'
    (call,) = find_tool_calls(kimi)
    assert (call.format, call.text, call.closed, call.error) == ("kimi", '{"a": "北京"}', True, None)

    cut = kimi[: kimi.index("京")]
    (call,) = find_tool_calls(cut)
    assert (call.closed, call.error) == (False, "Unterminated string starting at: line 1 column 7 (char 6)")

    hermes = 'ok <tool_call>\n{"name": "f", "arguments": {"x": 1}}\n</tool_call>'
    assert [(c.format, c.error) for c in find_tool_calls(hermes)] == [("hermes", None)]

    deepseek = '<｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{"x": [1, 2}\n```<｜tool▁call▁end｜>'
    (call,) = find_tool_calls(deepseek)
    assert (call.format, call.text, call.error) == (
        "deepseek",
        '{"x": [1, 2}',
        "Expecting ',' delimiter: line 1 column 12 (char 11)",
    )

    assert [(c.format, c.error) for c in find_tool_calls(' {"x": 1}')] == [("json", None)]
    assert find_tool_calls("plain text") == []
