"""Stream readers: every format, auto-detection, and one clear error per malformed input."""

from __future__ import annotations

import io
import sys

import pytest

from tokaudit.errors import InputError
from tokaudit.stream.readers import detect_format, parse_stream, read_stream
from tokaudit.stream.steps import Stream


def test_json_array_is_one_id_per_step():
    s = parse_stream("[5, 17,\n 163600]", "s.json")
    assert s == Stream("json", [5, 17, 163600])
    assert list(s.ids) == [5, 17, 163600]


def test_ids_separated_by_whitespace_and_commas():
    s = parse_stream("1 2,3\n\n4 ,5\t6\n", "s.txt")
    assert s.format == "ids"
    assert list(s.ids) == [1, 2, 3, 4, 5, 6]
    assert len(s.steps) == 6


def test_jsonl_steps_keep_their_sizes_and_keys():
    text = '{"token_ids": [1, 2, 3]}\n\n{"ids": [4]}\n{"output_ids": [5, 6]}\n{"token_id": 7}\n[8, 9]\n'
    s = parse_stream(text, "s.jsonl")
    assert s.format == "jsonl"
    assert s.steps == ((1, 2, 3), (4,), (5, 6), (7,), (8, 9))


def test_sse_capture_takes_ids_from_choices_and_skips_events_without_ids():
    text = (
        ": keep-alive\n"
        'data: {"id": "c1", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}\n\n'
        'data: {"id": "c1", "choices": [{"index": 0, "delta": {"content": "Hi"}, "token_ids": [9906, 1070]}]}\n\n'
        'data: {"id": "c1", "choices": [{"index": 0, "delta": {"content": "!", "token_ids": [0]}}]}\n\n'
        'data: {"id": "c1", "choices": [], "usage": {"completion_tokens": 3}}\n\n'
        "data: [DONE]\n"
    )
    s = parse_stream(text, "cap.sse")
    assert s.format == "sse"
    assert s.steps == ((9906, 1070), (0,))


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        ("[1,2]", "json"),
        ("[1,\n2]", "json"),
        ("[1]\n[2, 3]\n", "jsonl"),
        ('{"ids": [1]}', "jsonl"),
        ("data: [DONE]", "sse"),
        ("1 2 3", "ids"),
        ("", "ids"),
    ],
)
def test_detection(text, fmt):
    assert detect_format(text) == fmt


def test_forced_format_overrides_detection():
    with pytest.raises(InputError) as exc:
        parse_stream("1 2 3", "s.txt", "json")
    assert str(exc.value) == "s.txt:1: invalid JSON: Extra data (column 3)"
    with pytest.raises(InputError) as exc:
        parse_stream('{"ids": [1]}', "s.json", "json")
    assert str(exc.value) == "s.json: expected a JSON array of ids, got dict"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1,\n2,\n-3]", "s:3: element 2: id -3 is negative"),
        ("[1, 2.5]", "s:1: element 1: 2.5 is not an integer token id"),
        ('[1, "2"]', "s:1: element 1: '2' is not an integer token id"),
        ("[1, 4294967296]", "s:1: element 1: id 4294967296 is out of range (>= 2**32)"),
        ('{"a": 1}', "s:1: no token_ids, ids, output_ids, token_id key in this step"),
        ("[1, 2", "s:1: invalid JSON: Expecting ',' delimiter (column 6)"),
        ("1 2\n3 x7", "s:2: column 3: 'x7' is not an integer token id"),
        ("1 4294967296", "s:1: column 3: id 4294967296 is out of range (>= 2**32)"),
        ("1 -2", "s:1: column 3: id -2 is negative"),
        ('{"token_ids": [1]}\n{"token_ids": [1, true]}', "s:2: token_ids[1]: true is not an integer token id"),
        ('{"token_ids": [1]}\n{"text": "hi"}', "s:2: no token_ids, ids, output_ids, token_id key in this step"),
        ('{"token_ids": [1]}\n{"token_ids": [1]', "s:2: invalid JSON: Expecting ',' delimiter (column 18)"),
        (
            '{"token_ids": [1]}\n"x"',
            "s:2: expected an object with one of token_ids, ids, output_ids, token_id or an array of ids",
        ),
        (
            'data: {"choices": [{"token_ids": [1]}]}\nHTTP/1.1 200 OK',
            "s:2: not a server-sent-events line (expected 'data: ...')",
        ),
        ('data: {"choices": [}', "s:1: invalid JSON in data line: Expecting value (column 20)"),
        ("data: [DONE]\ndata: {}", "s:2: data after 'data: [DONE]'"),
        (
            'data: {"choices": [{"index": 0, "token_ids": [1]}, {"index": 1, "token_ids": [2]}]}',
            "s:1: chunk carries choices [0, 1]: replay one choice (n=1) at a time",
        ),
        ('data: {"choices": [{"token_ids": [-1]}]}', "s:1: token_ids[0]: id -1 is negative"),
        ("   \n", "s: no token ids in the stream (read as ids)"),
    ],
)
def test_malformed_streams_name_the_line(text, message):
    with pytest.raises(InputError) as exc:
        parse_stream(text, "s")
    assert str(exc.value) == message


def test_unknown_format_name():
    with pytest.raises(InputError, match="unknown stream format 'csv'"):
        parse_stream("1", "s", "csv")


def test_read_stream_from_file_and_stdin(tmp_path, monkeypatch):
    p = tmp_path / "s.json"
    p.write_bytes(b"\xef\xbb\xbf[1, 2]")  # a UTF-8 BOM is accepted
    assert list(read_stream(str(p)).ids) == [1, 2]
    monkeypatch.setattr(sys, "stdin", io.StringIO('{"token_ids": [3, 4]}\n'))
    assert read_stream("-") == Stream.of_steps("jsonl", [(3, 4)])


def test_read_stream_errors_name_the_file(tmp_path):
    with pytest.raises(InputError) as exc:
        read_stream(str(tmp_path / "missing.json"))
    assert str(exc.value) == f"{tmp_path / 'missing.json'}: no such file"
    with pytest.raises(InputError) as exc:
        read_stream(str(tmp_path))
    assert str(exc.value) == f"{tmp_path}: is a directory, not a token stream"
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"1 2 \xff")
    with pytest.raises(InputError) as exc:
        read_stream(str(bad))
    assert str(exc.value) == f"{bad}:1: not valid UTF-8 text (byte 4)"


# -- large captures: read line by line ----------------------------------------------------------

LINE_CAPTURES = {
    "sse": (
        ": keep-alive\r\n"
        + "".join(
            f'data: {{"choices": [{{"index": 0, "delta": {{"content": "x"}}, "token_ids": [{k}, {k + 1}]}}]}}\r\n\r\n'
            for k in range(0, 400, 2)
        )
        + "data: [DONE]\r\n"
    ),
    "jsonl": "\ufeff"
    + "".join(f'{{"token_ids": [{k}, {k + 1}, {k + 2}]}}\n' for k in range(0, 600, 3))
    + "[7]\r[8, 9]\n\n",
    "jsonl-choices": "".join(f'{{"choices": [{{"index": 0, "token_ids": [{k}]}}]}}\n' for k in range(300)),
    "ids": "\n".join(" ".join(str(k) for k in range(j, j + 10)) for j in range(0, 1000, 10)) + "\n",
}


@pytest.mark.parametrize("name", sorted(LINE_CAPTURES))
def test_a_capture_over_the_in_memory_limit_is_read_line_by_line_with_the_same_result(tmp_path, monkeypatch, name):
    """Captures bigger than MAX_STREAM_BYTES (a 1M-token SSE capture is ~190 MB) are read a line at a time;
    the limit is lowered here so that a few KB stand for them."""
    from tokaudit.stream import readers

    path = tmp_path / "capture"
    path.write_bytes(LINE_CAPTURES[name].encode("utf-8"))
    whole = read_stream(str(path))
    monkeypatch.setattr(readers, "MAX_STREAM_BYTES", 1024)
    assert path.stat().st_size > 1024
    assert read_stream(str(path)) == whole and len(whole.ids) >= 200


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            b"".join(b'{"token_ids": [%d]}\n' % k for k in range(100)) + b'{"token_ids": [1, \xff]}\n',
            ":101: not valid UTF-8 text (byte 2008)",
        ),
        (
            b"".join(b'{"token_ids": [%d]}\n' % k for k in range(100)) + b'{"token_ids": [1, -2]}\n',
            "token_ids[1]: id -2 is negative",
        ),
        (
            b"".join(b'data: {"token_ids": [%d]}\n\n' % k for k in range(100)) + b"data: [DONE]\n\ndata: {}\n",
            "data after 'data: [DONE]'",
        ),
    ],
)
def test_errors_in_a_capture_read_line_by_line_name_the_same_line(tmp_path, monkeypatch, content, message):
    from tokaudit.stream import readers

    path = tmp_path / "capture"
    path.write_bytes(content)
    with pytest.raises(InputError) as whole:
        read_stream(str(path))
    monkeypatch.setattr(readers, "MAX_STREAM_BYTES", 1024)
    with pytest.raises(InputError) as by_line:
        read_stream(str(path))
    assert str(by_line.value) == str(whole.value) and message in str(whole.value)


def test_a_large_json_array_or_a_capture_over_the_line_limit_is_one_clear_error(tmp_path, monkeypatch):
    from tokaudit.stream import readers

    monkeypatch.setattr(readers, "MAX_STREAM_BYTES", 1024)
    monkeypatch.setattr(readers, "MAX_CAPTURE_BYTES", 4096)
    array_file = tmp_path / "ids.json"
    array_file.write_text("[" + ", ".join(map(str, range(500))) + "]")
    with pytest.raises(InputError) as err:
        read_stream(str(array_file))
    assert str(err.value) == (
        f"{array_file}: file is 0.0 MiB; the limit is 0 MiB for a JSON array (a line format, such as "
        "JSONL or SSE, is read line by line up to 0 MiB)"
    )
    capture = tmp_path / "big.jsonl"
    capture.write_text("".join(f"[{k}]\n" for k in range(2000)))
    with pytest.raises(InputError) as err:
        read_stream(str(capture))
    assert str(err.value) == f"{capture}: file is 0.0 MiB; the limit is 0 MiB"


def test_a_capture_read_line_by_line_stops_at_its_byte_budget_even_inside_one_line(tmp_path):
    """The size is checked before reading, but a capture still being written grows: the line reader counts
    what it reads, and never reads more than the budget, not even for one endless line."""
    from tokaudit.stream.readers import _file_lines

    path = tmp_path / "growing.sse"
    path.write_text("data: " + "x" * 5000)  # one line, no newline
    with pytest.raises(InputError) as err:
        list(_file_lines(path, "growing.sse", 1000))
    assert str(err.value) == "growing.sse:1: file is over the limit of 0 MiB"
    path.write_text("[1]\n" * 300)
    with pytest.raises(InputError) as err:
        list(_file_lines(path, "lines.jsonl", 1000))
    assert str(err.value) == "lines.jsonl:251: file is over the limit of 0 MiB"
    assert list(_file_lines(path, "lines.jsonl", 1200)) == ["[1]"] * 300


SSE_EVENTS = [
    '{"choices": [{"index": 0, "delta": {"content": "a"}, "token_ids": [1, 2]}]}',
    '{"choices": [{"delta": {"content": "b", "token_ids": [3]}}]}',
    '{"choices": [{"index": 0, "token_ids": null, "ids": [4, 5]}]}',
    '{"choices": [{"index": 0, "delta": {"role": "assistant"}}]}',
    '{"choices": [], "usage": {"completion_tokens": 3}}',
    '{"token_ids": [6], "choices": "not a list"}',
    '{"output_ids": [7, 8]}',
    '{"choices": [{"index": 0, "token_ids": []}], "token_ids": [9]}',
    '{"object": "ping"}',
]


@pytest.mark.parametrize("k", range(len(SSE_EVENTS)))
def test_sse_read_in_bulk_equals_the_line_parser(k):
    """Each chunk shape the bulk reader takes gives the steps the line parser gives (a capture of every
    shape rotated, so that each one comes first once)."""
    from tokaudit.stream.stream_formats import _sse_in_bulk, _sse_line_by_line

    events = SSE_EVENTS[k:] + SSE_EVENTS[:k]
    lines = (": comment\nevent: chunk\n" + "".join(f"data: {e}\n\n" for e in events) + "data: [DONE]\n").splitlines()
    bulk = _sse_in_bulk(lines)
    assert bulk is not None
    assert Stream.of_steps("sse", bulk) == Stream.of_steps("sse", _sse_line_by_line(lines, "s.sse"))
    # 9 is not taken: the choice's own (empty) token_ids come first
    assert sorted(Stream.of_steps("sse", bulk).ids) == [1, 2, 3, 4, 5, 6, 7, 8]


@pytest.mark.parametrize(
    "event",
    [
        # two choices: the line parser says so
        '{"choices": [{"index": 0, "token_ids": [1]}, {"index": 1, "token_ids": [2]}]}',
        '{"choices": [{"index": true, "token_ids": [1]}]}',
        '{"choices": [{"index": 0, "token_id": 5}]}',  # one id, not a list
        '{"token_ids": [1, -1]}',
        "[1, 2]",
    ],
)
def test_sse_shapes_the_bulk_reader_leaves_to_the_line_parser(event):
    from tokaudit.stream.stream_formats import _sse_in_bulk

    assert _sse_in_bulk([f"data: {event}", "", "data: [DONE]"]) is None
