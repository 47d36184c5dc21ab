"""Random bytes and random JSON through every parser: the only outcomes are a record or an InputError."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokaudit.artifacts.load import _parser
from tokaudit.errors import InputError

FILE_NAMES = {
    "tokenizer_json": "tokenizer.json",
    "tiktoken": "tiktoken.model",
    "tekken": "tekken.json",
    "tokenizer_config": "tokenizer_config.json",
    "special_tokens_map": "special_tokens_map.json",
    "config": "config.json",
    "generation_config": "generation_config.json",
    "chat_template": "chat_template.jinja",
    "vocab_json": "vocab.json",
    "merges": "merges.txt",
    "vocab_txt": "vocab.txt",
    "safetensors": "model.safetensors",
    "safetensors_index": "model.safetensors.index.json",
    "remote_code": "tokenization_fuzz.py",
}
PARSERS = {kind: _parser(kind) for kind in FILE_NAMES}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
# JSON objects shaped like the real files, so fuzzing reaches past the first type check.
shaped = st.fixed_dictionaries(
    {},
    optional={
        "model": st.fixed_dictionaries(
            {"type": st.sampled_from(["BPE", "Unigram", "WordPiece", "X"]), "vocab": json_values}
        ),
        "added_tokens": json_values,
        "added_tokens_decoder": st.dictionaries(st.text(max_size=4), json_values, max_size=3),
        "vocab_size": json_values,
        "text_config": st.fixed_dictionaries({}, optional={"vocab_size": json_values, "eos_token_id": json_values}),
        "eos_token_id": json_values,
        "eos_token": json_values,
        "chat_template": json_values,
        "config": json_values,
        "vocab": json_values,
        "special_tokens": json_values,
        "weight_map": json_values,
        "auto_map": json_values,
    },
)


def _check_all(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for kind, parser in PARSERS.items():
            path = Path(tmp) / FILE_NAMES[kind]
            path.write_bytes(data)
            try:
                parser(path)
            except InputError as exc:
                assert str(exc).startswith(str(path)), str(exc)
                assert "\n" not in str(exc)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_random_bytes(data: bytes) -> None:
    _check_all(data)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values | shaped)
def test_random_json(value: object) -> None:
    _check_all(json.dumps(value).encode())


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.binary(max_size=6), st.text(alphabet="0123456789x- ", max_size=5)), max_size=8))
def test_random_rank_lines(lines: list[tuple[bytes, str]]) -> None:
    import base64

    text = "\n".join(f"{base64.b64encode(b).decode()} {r}" for b, r in lines).encode()
    _check_all(text)


# ---- stream readers and [tool.tokaudit] (issue 13): a Stream/Config or one InputError line, within a budget


PARSE_BUDGET_SECONDS = 2.0

# JSON text of values that broke the readers: huge integers, NaN, lone surrogates, unhashable choice
# indices, 100k-deep nesting (written as text: Python's json would not produce most of them).
hostile_scalars = st.integers(min_value=-(2**40), max_value=2**40).map(str) | st.sampled_from(
    ["NaN", "-Infinity", '"\\ud800"', "9" * 5000, "[0]", "{}", '"0"', "true", "1.5", "1e400", "null"]
)
deep = st.integers(min_value=1, max_value=100_000).map(lambda n: "[" * n + "1" + "]" * n)
hostile_json = st.one_of(
    hostile_scalars, st.lists(hostile_scalars, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"), deep
)


def _parse_stream_bounded(text: str, fmt: str | None) -> None:
    import time

    from tokaudit.stream.readers import parse_stream

    start = time.monotonic()
    try:
        stream = parse_stream(text, "s.txt", fmt)
    except InputError as exc:
        message = str(exc)
        assert message.startswith("s.txt") or fmt is None or "stream format" in message, message
        assert "\n" not in message and len(message) <= 400
    else:
        assert stream.steps and all(isinstance(i, int) and 0 <= i < 2**32 for step in stream.steps for i in step)
    assert time.monotonic() - start < PARSE_BUDGET_SECONDS


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200), st.sampled_from([None, "json", "ids", "jsonl", "sse"]))
def test_stream_random_text(text: str, fmt: str | None) -> None:
    _parse_stream_bounded(text, fmt)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["token_ids", "ids", "token_id", "output_ids", "index", "other"]),
            hostile_json,
        ),
        min_size=1,
        max_size=4,
    ),
    st.sampled_from(["jsonl", "sse", "json"]),
)
def test_stream_hostile_events(fields: list[tuple[str, str]], fmt: str) -> None:
    body = ", ".join(f'"{key}": {value}' for key, value in fields)
    if fmt == "sse":
        text = f'data: {{"choices": [{{{body}}}]}}\n\ndata: [DONE]\n'
    elif fmt == "jsonl":
        text = "{" + body + "}\n" + "{" + body + "}\n"
    else:
        text = "[" + ", ".join(v for _, v in fields) + "]"
    _parse_stream_bounded(text, fmt)


toml_values = st.one_of(
    st.sampled_from(
        ['"TA1"', '["TA101", "vocab-gap"]', "nan", "inf", "1" * 5000, "[]", "{}", '"\\ud800"', "true", "'x'"]
    ),
    deep.map(lambda s: s.replace("1", '"TA1"', 1)),
    st.text(alphabet='[]{}"=,. \n#abcTA019_-', max_size=40),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.sampled_from(["select", "ignore", "baseline", "per-target-ignores", "unknown"]), toml_values),
        max_size=3,
    ),
    st.binary(max_size=8),
)
def test_pyproject_config(entries: list[tuple[str, str]], junk: bytes) -> None:
    import time

    from tokaudit.config import Config, load_config

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pyproject.toml"
        path.write_bytes(("[tool.tokaudit]\n" + "".join(f"{k} = {v}\n" for k, v in entries)).encode() + junk)
        start = time.monotonic()
        try:
            config = load_config(Path(tmp))
        except InputError as exc:
            assert str(exc).startswith(str(path)), str(exc)
            assert "\n" not in str(exc) and len(str(exc)) <= 400
        else:
            assert isinstance(config, Config) and config.path == path
        assert time.monotonic() - start < PARSE_BUDGET_SECONDS
