"""Random bytes and random JSON through every parser: the only outcomes are a record or an InputError."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokaudit.artifacts.load import _PARSERS
from tokaudit.artifacts.remote_code import parse_remote_code
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
PARSERS = {**_PARSERS, "remote_code": parse_remote_code}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
# JSON objects shaped like the real files, so fuzzing reaches past the first type check.
shaped = st.fixed_dictionaries(
    {},
    optional={
        "model": st.fixed_dictionaries({"type": st.sampled_from(["BPE", "Unigram", "WordPiece", "X"]), "vocab": json_values}),
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
