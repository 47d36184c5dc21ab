"""Parsers: each file kind parsed from real files, with provenance; bad input is one clear InputError."""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokaudit.artifacts.kinds import FILE_KINDS, FileKind, names_of_rank_files
from tokaudit.artifacts.load import Artifacts, load_artifacts, sniff_vocabulary
from tokaudit.artifacts.model_config import parse_generation_config, parse_model_config
from tokaudit.artifacts.remote_code import parse_remote_code
from tokaudit.artifacts.safetensors_header import parse_safetensors, parse_safetensors_index
from tokaudit.artifacts.tekken import parse_tekken
from tokaudit.artifacts.text_files import parse_merges, parse_vocab_json, parse_vocab_txt
from tokaudit.artifacts.tiktoken_ranks import parse_tiktoken_ranks
from tokaudit.artifacts.tokenizer_config import parse_special_tokens_map, parse_tokenizer_config
from tokaudit.artifacts.token_bytes import (
    Scheme,
    TokenBytes,
    byte_decoder,
    token_bytes,
    token_bytes_table,
    undecodable_ids,
)
from tokaudit.artifacts.tokenizer_json import parse_tokenizer_json
from tokaudit.errors import InputError


def b64(token: bytes) -> str:
    return base64.b64encode(token).decode()


def write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_tiktoken_ranks_accept_crlf_and_blank_lines(tmp_path: Path) -> None:
    lines = [f"{b64(b'a')} 0", "", f"{b64(b'b')} 1", "   ", f"{b64(b'ab')} 2", ""]
    ranks = parse_tiktoken_ranks(write(tmp_path / "tiktoken.model", "\r\n".join(lines)))
    assert ranks.by_id == {0: b"a", 1: b"b", 2: b"ab"}
    assert ranks.lines == {0: 1, 1: 3, 2: 5}
    assert str(ranks.source(2)) == "tiktoken.model:5"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            f"{b64(b'a')} 0\n{b64(b'b')} 1\n!!!notbase64 2\n",
            "tiktoken.model:3: token is not valid base64: '!!!notbase64'",
        ),
        (f"{b64(b'a')} 0\n{b64(b'b')} x1\n", "tiktoken.model:2: rank is not a non-negative integer: 'x1'"),
        (
            f"{b64(b'a')} 0\n{b64(b'b')} 1\n{b64(b'c')} 2\n{b64(b'd')} 1\n",
            "tiktoken.model:4: duplicate rank 1 (first on line 2)",
        ),
        (f"{b64(b'a')} 0 extra\n", "tiktoken.model:1: expected '<base64 token> <rank>'"),
        (f"{b64(b'a')} -1\n", "tiktoken.model:1: rank is not a non-negative integer: '-1'"),
        ("\n\n", "tiktoken.model: no ranks found: not a tiktoken rank file"),
    ],
)
def test_tiktoken_ranks_errors_name_the_line(tmp_path: Path, content: str, message: str) -> None:
    path = write(tmp_path / "tiktoken.model", content)
    with pytest.raises(InputError) as err:
        parse_tiktoken_ranks(path)
    assert str(err.value) == f"{tmp_path}/{message}"


@pytest.mark.parametrize(
    ("content", "message"),
    [  # well-formed columns that the bulk parser must still refuse line by line, as the line parser does
        (f"{b64(b'a')} 0\n{b64(b'b')} +1\n", "tiktoken.model:2: rank is not a non-negative integer: '+1'"),
        (f"{b64(b'a')} 0\nYQ==YQ== 1\n", "tiktoken.model:2: token is not valid base64: 'YQ==YQ=='"),
        (f"i1h== 0\n{b64(b'b')} 1\n", "tiktoken.model:1: token is not valid base64: 'i1h=='"),
        (
            f"{b64(b'a')} 0\n{b64(b'b')} 00000000000000000001\n",
            "tiktoken.model:2: rank is not a non-negative integer: '00000000000000000001'",
        ),
        # a third column on one line and a lone token on the next: the counts of a two-column file
        (f"{b64(b'a')} 0 {b64(b'b')}\n1\n", "tiktoken.model:1: expected '<base64 token> <rank>'"),
    ],
)
def test_tiktoken_ranks_bulk_parse_is_as_strict_as_the_lines(tmp_path: Path, content: str, message: str) -> None:
    path = write(tmp_path / "tiktoken.model", content)
    with pytest.raises(InputError) as err:
        parse_tiktoken_ranks(path)
    assert str(err.value) == f"{tmp_path}/{message}"


def test_tiktoken_ranks_lone_pad_is_the_empty_token(tmp_path: Path) -> None:
    """whisper's multilingual.tiktoken writes its empty token (rank 50256) as '=': tiktoken reads b'', so do
    both the bulk and the line parser (a blank line sends this file to the line parser)."""
    assert parse_tiktoken_ranks(write(tmp_path / "a.tiktoken", f"{b64(b'a')} 0\n= 1\n")).by_id == {0: b"a", 1: b""}
    assert parse_tiktoken_ranks(write(tmp_path / "b.tiktoken", f"{b64(b'a')} 0\n\n= 1\n")).by_id == {0: b"a", 1: b""}


_B64_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.binary(max_size=7), st.integers(0, 40)), min_size=1, max_size=6),
    st.lists(
        st.tuples(st.integers(0, 200), st.sampled_from([*_B64_CHARS, " ", "\n", "\r", "  ", "==", "-"])), max_size=2
    ),
    st.booleans(),
)
def test_tiktoken_ranks_bulk_parse_agrees_with_the_line_parser(
    tmp_path_factory: pytest.TempPathFactory,
    lines: list[tuple[bytes, int]],
    edits: list[tuple[int, str]],
    final_newline: bool,
) -> None:
    """Rank files with random tokens, ranks and a few one-character edits: the bulk (column) parser
    returns exactly the line parser's ranks, or declines (None) and leaves the file to it."""
    from tokaudit.artifacts.tiktoken_ranks import _parse_carefully, _parse_columns

    text = "\n".join(f"{b64(token)} {rank}" for token, rank in lines) + ("\n" if final_newline else "")
    for position, insert in edits:
        position %= len(text) + 1
        text = text[:position] + insert + text[position:]
    data = text.encode()
    bulk = _parse_columns(data)
    try:
        careful = _parse_carefully(data, tmp_path_factory.mktemp("r") / "tiktoken.model")
    except InputError:
        assert bulk is None
        return
    assert bulk is None or bulk == careful


def test_tokenizer_config_added_tokens_and_special_fields(tmp_path: Path) -> None:
    data = {
        "added_tokens_decoder": {
            "7": {
                "content": "<|eot|>",
                "special": True,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "single_word": False,
            },
            "5": {"content": "<tool>", "special": False},
        },
        "bos_token": {"content": "<s>", "special": True},
        "eos_token": "<|eot|>",
        "pad_token": None,
        "additional_special_tokens": ["<tool>"],
        "chat_template": [{"name": "default", "template": "{{ x }}"}, {"name": "tool_use", "template": "t"}],
        "tokenizer_class": "TikTokenTokenizer",
        "auto_map": {"AutoTokenizer": ["tokenization_x.T", None]},
    }
    cfg = parse_tokenizer_config(write(tmp_path / "tokenizer_config.json", json.dumps(data)))
    assert [(t.id, t.content, t.special) for t in cfg.added_tokens_decoder] == [
        (5, "<tool>", False),
        (7, "<|eot|>", True),
    ]
    assert str(cfg.added_tokens_decoder[1].source) == "tokenizer_config.json (added_tokens_decoder.7)"
    assert cfg.special["bos_token"].content == "<s>" and cfg.special["eos_token"].content == "<|eot|>"
    assert "pad_token" not in cfg.special
    assert cfg.chat_template == "{{ x }}"
    assert cfg.auto_map == {"AutoTokenizer": ["tokenization_x.T", None]}


def test_tokenizer_config_non_integer_key(tmp_path: Path) -> None:
    path = write(tmp_path / "tokenizer_config.json", json.dumps({"added_tokens_decoder": {"abc": {"content": "x"}}}))
    with pytest.raises(InputError) as err:
        parse_tokenizer_config(path)
    assert str(err.value) == f"{path} (key added_tokens_decoder.abc): id 'abc' is not a non-negative integer"


def test_truncated_json_names_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path / "tokenizer.json", '{\n  "model": {\n    "type": "BPE",\n    "vocab": {"a": ')
    with pytest.raises(InputError) as err:
        parse_tokenizer_json(path)
    assert str(err.value).startswith(f"{path}:4: invalid JSON: Expecting value")


@pytest.mark.parametrize("shift", [-19, -10, -1, 0, 1])
def test_an_integer_past_64_bits_keeps_its_exact_value_across_the_digit_scan_pieces(tmp_path: Path, shift: int) -> None:
    """orjson would read 2**64 as a float; the digit scan sends such a file to json, which reads it exactly and
    names it, wherever the number sits against the scan's pieces."""
    from tokaudit.artifacts.strict_json import _DIGIT_SCAN_PIECE
    from tokaudit.artifacts.model_config import parse_model_config

    head = '{"pad": "'
    tail = '", "vocab_size": 18446744073709551616}'
    number_at = tail.index("1844")
    fill = "x" * (_DIGIT_SCAN_PIECE + shift - len(head) - number_at)
    path = write(tmp_path / "config.json", head + fill + tail)
    assert path.read_bytes().index(b"1844") == _DIGIT_SCAN_PIECE + shift
    with pytest.raises(InputError) as err:
        parse_model_config(path)
    assert str(err.value) == f"{path} (key vocab_size): integer 18446744073709551616 out of range"


@pytest.mark.parametrize("offset", range(9))
def test_an_integer_past_64_bits_is_found_at_any_offset_against_the_digit_sample(tmp_path: Path, offset: int) -> None:
    """The digit scan looks at every 9th byte first: a 20-digit number is found wherever it starts."""
    from tokaudit.artifacts.model_config import parse_model_config

    path = write(tmp_path / "config.json", '{"pad": "' + "x" * offset + '", "vocab_size": 18446744073709551616}')
    with pytest.raises(InputError) as err:
        parse_model_config(path)
    assert str(err.value) == f"{path} (key vocab_size): integer 18446744073709551616 out of range"


@pytest.mark.parametrize("last", ["123456789012345678", "18446744073709551616"])
def test_a_file_dense_with_long_numbers_is_scanned_whole(tmp_path: Path, last: str) -> None:
    """10,000 numbers of 18 digits (more places to look at than the sample allows): the whole file is scanned,
    so a 20-digit number after them still goes to json, and 18-digit ones alone keep orjson's exact value."""
    from tokaudit.artifacts.strict_json import _MAX_CANDIDATES
    from tokaudit.artifacts.model_config import parse_model_config

    numbers = [123456789012345678 + i for i in range(10_000)]
    assert len(numbers) > _MAX_CANDIDATES
    path = write(tmp_path / "config.json", '{"pad": ' + json.dumps(numbers) + ', "vocab_size": ' + last + "}")
    if len(last) < 19:
        assert parse_model_config(path).vocab_size == int(last)
        return
    with pytest.raises(InputError) as err:
        parse_model_config(path)
    assert str(err.value) == f"{path} (key vocab_size): integer 18446744073709551616 out of range"


def test_special_tokens_map(tmp_path: Path) -> None:
    data = {"eos_token": {"content": "</s>", "special": True}, "unk_token": "<unk>"}
    stm = parse_special_tokens_map(write(tmp_path / "special_tokens_map.json", json.dumps(data)))
    assert {k: v.content for k, v in stm.special.items()} == {"eos_token": "</s>", "unk_token": "<unk>"}


@pytest.mark.parametrize(
    ("data", "size", "key"),
    [
        ({"vocab_size": 32000}, 32000, "vocab_size"),
        ({"text_config": {"vocab_size": 163840}}, 163840, "text_config.vocab_size"),
        ({"llm_config": {"vocab_size": 151674}}, 151674, "llm_config.vocab_size"),
        ({"thinker_config": {"text_config": {"vocab_size": 152064}}}, 152064, "thinker_config.text_config.vocab_size"),
        ({"architectures": ["X"]}, None, None),
    ],
)
def test_config_vocab_size_top_level_or_nested(tmp_path: Path, data: dict, size: int | None, key: str | None) -> None:
    cfg = parse_model_config(write(tmp_path / "config.json", json.dumps(data)))
    assert (cfg.vocab_size, cfg.vocab_size_key) == (size, key)


def test_config_token_ids_int_or_list(tmp_path: Path) -> None:
    data = {"text_config": {"vocab_size": 10, "eos_token_id": [3, 4], "bos_token_id": 1}, "pad_token_id": 0}
    cfg = parse_model_config(write(tmp_path / "config.json", json.dumps(data)))
    assert (cfg.ids.bos, cfg.ids.eos, cfg.ids.pad) == ((1,), (3, 4), (0,))
    assert cfg.ids.keys == {"bos": "text_config.bos_token_id", "eos": "text_config.eos_token_id", "pad": "pad_token_id"}
    gen = parse_generation_config(write(tmp_path / "generation_config.json", json.dumps({"eos_token_id": [7, 8]})))
    assert gen.ids.eos == (7, 8)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"vocab_size": "lots"}, '(key vocab_size): expected an integer, found "lots"'),
        ({"vocab_size": True}, "(key vocab_size): expected an integer, found true"),
        ({"vocab_size": -5}, "(key vocab_size): integer -5 out of range"),
        ({"eos_token_id": [1, "x"]}, '(key eos_token_id[1]): expected an integer, found "x"'),
    ],
)
def test_config_bad_values(tmp_path: Path, data: dict, message: str) -> None:
    path = write(tmp_path / "config.json", json.dumps(data))
    with pytest.raises(InputError) as err:
        parse_model_config(path)
    assert str(err.value) == f"{path} {message}"


def test_tokenizer_json_bpe_unigram_wordpiece(tmp_path: Path) -> None:
    bpe = {
        "added_tokens": [
            {
                "id": 3,
                "content": "<|eot|>",
                "special": True,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "single_word": False,
            }
        ],
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "decoder": {"type": "ByteLevel"},
        "model": {"type": "BPE", "vocab": {"a": 0, "Ġ": 1, "Ġa": 2}, "merges": ["Ġ a"]},
    }
    tj = parse_tokenizer_json(write(tmp_path / "tokenizer.json", json.dumps(bpe)))
    assert tj.model_type == "BPE" and tj.vocab == {0: "a", 1: "Ġ", 2: "Ġa"}
    assert tj.token_bytes(2) == b" a"
    assert [(t.id, t.content, t.special) for t in tj.added_tokens] == [(3, "<|eot|>", True)]
    assert len(tj.patterns) == 1

    unigram = {
        "model": {"type": "Unigram", "vocab": [["<unk>", 0.0], ["▁hi", -1.0], ["<0x0A>", -2.0]]},
        "decoder": {"type": "Metaspace"},
    }
    tu = parse_tokenizer_json(write(tmp_path / "u.json", json.dumps(unigram)))
    assert tu.vocab == {0: "<unk>", 1: "▁hi", 2: "<0x0A>"}
    assert (tu.token_bytes(1), tu.token_bytes(2)) == (b" hi", b"\n")

    wordpiece = {"model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "play": 1, "##ing": 2}}}
    tw = parse_tokenizer_json(write(tmp_path / "w.json", json.dumps(wordpiece)))
    assert tw.token_bytes(2) == b"ing"


def test_tokenizer_json_not_a_tokenizer(tmp_path: Path) -> None:
    path = write(tmp_path / "tokenizer.json", json.dumps({"hello": 1}))
    with pytest.raises(InputError) as err:
        parse_tokenizer_json(path)
    assert str(err.value) == f"{path} (key model): missing 'model' object: not a tokenizers tokenizer.json"


def test_vocab_json_merges_vocab_txt(tmp_path: Path) -> None:
    vj = parse_vocab_json(write(tmp_path / "vocab.json", json.dumps({"a": 0, "Ġb": 1})))
    assert vj.token_bytes(1) == b" b"
    merges = parse_merges(write(tmp_path / "merges.txt", "#version: 0.2\nĠ b\na b\n"))
    assert merges.merges == (("Ġ", "b"), ("a", "b"))
    vt = parse_vocab_txt(write(tmp_path / "vocab.txt", "[PAD]\n[UNK]\nplay\n##ing\n"))
    assert vt.vocab == {0: "[PAD]", 1: "[UNK]", 2: "play", 3: "##ing"} and str(vt.source(3)) == "vocab.txt:4"
    with pytest.raises(InputError, match=r"merges.txt:2: expected two space-separated tokens"):
        parse_merges(write(tmp_path / "merges.txt", "#version: 0.2\nabc\n"))


def test_tekken_shifts_ids_by_the_special_block(tmp_path: Path) -> None:
    data = {
        "config": {"pattern": r"\S+|\s+", "default_vocab_size": 6, "default_num_special_tokens": 3},
        "vocab": [
            {"rank": i, "token_bytes": b64(t), "token_str": t.decode()} for i, t in enumerate([b"a", b"b", b"c", b"d"])
        ],
        "special_tokens": [
            {"rank": 0, "token_str": "<unk>", "is_control": True},
            {"rank": 1, "token_str": "<s>", "is_control": True},
        ],
    }
    tk = parse_tekken(write(tmp_path / "tekken.json", json.dumps(data)))
    assert tk.by_id == {3: b"a", 4: b"b", 5: b"c"}  # only default_vocab_size - num_special ranks are used
    # mistral-common fills the rest of the block with <SPECIAL_n>
    assert [(t.id, t.content) for t in tk.specials] == [(0, "<unk>"), (1, "<s>"), (2, "<SPECIAL_2>")]
    assert tk.default_vocab_size == 6 and tk.pattern == r"\S+|\s+"


def _safetensors(path: Path, tensors: dict[str, list[int]]) -> Path:
    header, offset = {}, 0
    for name, shape in tensors.items():
        size = 2 * shape[0] * shape[1]
        header[name] = {"dtype": "F16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * offset)
    return path


def test_safetensors_header_rows(tmp_path: Path) -> None:
    path = _safetensors(
        tmp_path / "model.safetensors",
        {"model.embed_tokens.weight": [300, 2], "lm_head.weight": [300, 2], "vision_tower.embeddings.weight": [9, 2]},
    )
    shapes = parse_safetensors(path)
    assert (shapes.embedding.tensor, shapes.embedding.rows) == ("model.embed_tokens.weight", 300)
    assert shapes.lm_head.rows == 300


def test_safetensors_index_reads_only_the_shard_header(tmp_path: Path) -> None:
    _safetensors(tmp_path / "model-00002-of-00002.safetensors", {"lm_head.weight": [320, 2]})
    index = {
        "weight_map": {
            "model.embed_tokens.weight": "model-00001-of-00002.safetensors",
            "lm_head.weight": "model-00002-of-00002.safetensors",
        }
    }
    shapes = parse_safetensors_index(write(tmp_path / "model.safetensors.index.json", json.dumps(index)))
    assert shapes.embedding is None and shapes.lm_head.rows == 320
    assert shapes.missing_shards == ("model-00001-of-00002.safetensors",)


def test_safetensors_garbage_is_a_clear_error(tmp_path: Path) -> None:
    path = write(tmp_path / "model.safetensors", b"\xff" * 16)
    with pytest.raises(InputError, match="implausible: not a safetensors file"):
        parse_safetensors(path)


KIMI_STYLE = '''
import tiktoken
class TikTokenTokenizer(PreTrainedTokenizer):
    num_reserved_special_tokens = 256
    pat_str = "|".join(
        [
            r"""[\\p{Han}]+""",
            r"""\\p{N}{1,3}""",
            r"""\\s+""",
        ]
    )
    def __init__(self, vocab_file):
        self.special_tokens = {f"<|reserved_token_{i}|>": i for i in range(10)}
'''

QWEN_STYLE = '''
PAT_STR = r"""(?i:'s|'t)|\\p{L}+|\\s+"""
ENDOFTEXT = "<|endoftext|>"
IMSTART = "<|im_start|>"
IMEND = "<|im_end|>"
EXTRAS = tuple((f"<|extra_{i}|>" for i in range(3)))
SPECIAL_START_ID = 500
SPECIAL_TOKENS = tuple(enumerate(((ENDOFTEXT, IMSTART, IMEND,) + EXTRAS), start=SPECIAL_START_ID))
SPECIAL_TOKENS_SET = set(t for i, t in SPECIAL_TOKENS)
'''


def test_remote_code_kimi_join_form(tmp_path: Path) -> None:
    rc = parse_remote_code(write(tmp_path / "tokenization_kimi.py", KIMI_STYLE))
    assert rc.pat_str == r"[\p{Han}]+|\p{N}{1,3}|\s+"
    assert rc.num_reserved_special_tokens == 256
    assert str(rc.num_reserved_source) == "tokenization_kimi.py:4"
    assert rc.reserved_templates == ("<|reserved_token_{}|>",)
    assert rc.classes == ("TikTokenTokenizer",)


def test_remote_code_qwen_enumerate_form(tmp_path: Path) -> None:
    rc = parse_remote_code(write(tmp_path / "tokenization_qwen.py", QWEN_STYLE))
    assert rc.pat_str == r"(?i:'s|'t)|\p{L}+|\s+"
    lists = {lst.name: lst for lst in rc.special_token_lists}
    specials = lists["SPECIAL_TOKENS"]
    assert specials.ids == (500, 501, 502, 503, 504, 505)
    assert specials.tokens == (
        "<|endoftext|>",
        "<|im_start|>",
        "<|im_end|>",
        "<|extra_0|>",
        "<|extra_1|>",
        "<|extra_2|>",
    )


def test_remote_code_syntax_error_is_recorded(tmp_path: Path) -> None:
    rc = parse_remote_code(write(tmp_path / "tokenization_bad.py", "def broken(:\n"))
    assert rc.syntax_error is not None and rc.syntax_error.startswith("line 1: SyntaxError")
    assert rc.pat_str is None


def test_remote_code_odd_constants_are_ignored(tmp_path: Path) -> None:
    src = 'SPECIAL_MIXED = {1, "<a>"}\nSPECIAL_NESTED = [[1], [2]]\nX = open("f").read()\nY = 2 ** 10000\n'
    rc = parse_remote_code(write(tmp_path / "tokenization_odd.py", src))
    assert rc.special_token_lists == () and rc.pat_str is None


def test_chat_template_list_with_odd_names(tmp_path: Path) -> None:
    data = {"chat_template": [{"name": ["x"], "template": "a"}, {"name": "default", "template": "b"}]}
    assert parse_tokenizer_config(write(tmp_path / "tokenizer_config.json", json.dumps(data))).chat_template == "b"


@pytest.mark.parametrize("scheme", list(Scheme))
def test_token_bytes_table_equals_a_call_per_token(scheme: Scheme) -> None:
    """The whole-vocabulary pass (issue 22) on the cases its shortcuts must hand back: GPT-2's 256
    characters and the neighbours just outside (U+0144, space, NUL, U+00AD), non-BMP text, empty tokens,
    a token holding NUL, byte tokens and near misses."""
    alphabet = "".join(byte_decoder())
    tokens = [
        alphabet,
        "Ġhello",
        "ĠĠ",
        "",
        "\u0144",
        "a b",
        "\x00",
        "x\x00y",
        "\u00ad",
        "🙂",
        "\u2581hi",
        "▁▁",
        "<0x0A>",
        "<0xzz>",
        "<0x0A",
        "##ing",
        "Ā",
        "Ń",
        "ÿ",
        "\u0100\u0143",
    ]
    for n in range(len(tokens) + 1):  # every prefix: the shortcuts (and their hand-backs) at every position
        vocab = {i * 3 + 1: t for i, t in enumerate(tokens[:n])}
        assert list(token_bytes_table(vocab, scheme).items()) == [(i, token_bytes(t, scheme)) for i, t in vocab.items()]
    for vocab in ({5: "Ġa", 2: "Ċ", 9: "ĠĠ"}, {0: "hello", 1: "Ġworld"}):  # ids in any order; all inside the alphabet
        assert list(token_bytes_table(vocab, scheme).items()) == [(i, token_bytes(t, scheme)) for i, t in vocab.items()]


_VOCAB_CHARS = st.sampled_from([*byte_decoder(), "\u0144", " ", "\x00", "\u2581", "<", "0", "x", "A", "🙂", "é"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(_VOCAB_CHARS, max_size=8), max_size=40), st.sampled_from(list(Scheme)))
def test_token_bytes_table_property(tokens: list[str], scheme: Scheme) -> None:
    vocab = dict(enumerate(tokens))
    assert list(token_bytes_table(vocab, scheme).items()) == [(i, token_bytes(t, scheme)) for i, t in vocab.items()]


def _undecodable_one_by_one(vocab: dict[int, str], scheme: Scheme) -> list[int]:
    out = []
    for i, token in vocab.items():
        try:
            token_bytes(token, scheme).decode("utf-8")
        except UnicodeDecodeError:
            out.append(i)
    return sorted(out)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(_VOCAB_CHARS, max_size=6), max_size=40), st.sampled_from(list(Scheme)))
def test_undecodable_ids_property(tokens: list[str], scheme: Scheme) -> None:
    """The bulk pass (a byte-level table not built: byte 0's character, characters outside the alphabet, empty
    tokens) and the pass over built bytes both equal a decode per token."""
    vocab = {i * 7 % 101: t for i, t in enumerate(tokens)}
    lazy = TokenBytes(vocab, scheme)
    assert undecodable_ids(lazy) == _undecodable_one_by_one(vocab, scheme)
    assert undecodable_ids(lazy.table) == _undecodable_one_by_one(vocab, scheme)


def test_undecodable_ids_of_byte_level_strings_names_each_token() -> None:
    # 'Ã' is byte 0xC3 (a lead byte alone), 'Ā' byte 0x00, '一' outside GPT-2's alphabet (UTF-8 text)
    vocab = {0: "Ã", 1: "Ā", 2: "ÃĀ", 3: "Ã©", 4: "一", 5: "ĠÃ", 6: "", 7: "hi"}
    lazy = TokenBytes(vocab, Scheme.BYTE_LEVEL)
    assert undecodable_ids(lazy) == [0, 2, 5]
    assert not lazy.built


def test_token_bytes_is_built_when_needed_whole() -> None:
    vocab = {i: chr(0x21 + i % 90) * (1 + i % 3) for i in range(3000)}
    lazy = TokenBytes(vocab, Scheme.BYTE_LEVEL)
    assert len(lazy) == 3000 and 5 in lazy and 3000 not in lazy and list(lazy)[:3] == [0, 1, 2]
    assert lazy.keys() - {0} == set(range(1, 3000))
    assert [lazy[i] for i in range(TokenBytes.LOOKUPS_ALONE)] == [
        token_bytes(vocab[i], Scheme.BYTE_LEVEL) for i in range(TokenBytes.LOOKUPS_ALONE)
    ]
    assert not lazy.built  # lookups one by one so far, keys from the strings
    assert lazy[2999] == vocab[2999].encode() and lazy.built  # one lookup more: built whole
    assert dict(lazy.items()) == token_bytes_table(vocab, Scheme.BYTE_LEVEL) and lazy.get(4000) is None


def _bpe_file(tmp_path: Path, vocab: dict[str, object]) -> Path:
    return write(tmp_path / "tokenizer.json", json.dumps({"model": {"type": "BPE", "vocab": vocab, "merges": []}}))


@pytest.mark.parametrize(
    "vocab",
    [
        {"a": 0, "b": 1, "c": 2, "ab": 3},  # ids 0 .. n-1 in file order: a list, no dict built
        {"b": 1, "a": 0, "c": 2, "ab": 3},  # the same ids in another order
        {"a": 0, "b": 1, "c": 5, "ab": 3},  # a gap
    ],
)
def test_the_vocabulary_reads_like_the_dict_of_its_ids(tmp_path: Path, vocab: dict[str, object]) -> None:
    """Whatever its representation, tokenizer.json's id -> token answers as the inverted object would."""
    tj = parse_tokenizer_json(_bpe_file(tmp_path, vocab))
    expected = {i: t for t, i in vocab.items()}
    dense = list(vocab.values()) == list(range(len(vocab)))
    assert type(tj.vocab).__name__ == ("DenseVocab" if dense else "dict")
    assert tj.vocab == expected and expected == tj.vocab
    assert len(tj.vocab) == 4
    assert sorted(tj.vocab) == sorted(expected) and sorted(tj.vocab.items()) == sorted(expected.items())
    assert tj.vocab.keys() == expected.keys() and sorted(tj.vocab.keys()) == sorted(expected)
    assert sorted(tj.vocab.values()) == sorted(expected.values()) and dict(tj.vocab.items()) == expected
    for key in (0, 3, 4, 5, -1, True, "a", None, 2**70):
        assert (key in tj.vocab) == (key in expected)
        assert tj.vocab.get(key) == expected.get(key)  # type: ignore[call-overload]
        if key in expected:
            assert tj.vocab[key] == expected[key]  # type: ignore[index]
        else:
            with pytest.raises(KeyError):
                tj.vocab[key]  # type: ignore[index]
    if dense:
        assert list(reversed(tj.vocab.values())) == ["ab", "c", "b", "a"]
        assert list(tj.vocab.items()) == [(0, "a"), (1, "b"), (2, "c"), (3, "ab")]
        assert tj.first_id_by_content == {"a": 0, "b": 1, "c": 2, "ab": 3}


@pytest.mark.parametrize("bad, key", [(True, "model.vocab.b"), (1.0, "model.vocab.b"), (-1, "model.vocab.b")])
def test_an_id_that_only_equals_its_position_is_still_an_error(tmp_path: Path, bad: object, key: str) -> None:
    """true == 1 and 1.0 == 1 in Python: the dense check compares types first, so the entry is named as before."""
    path = _bpe_file(tmp_path, {"a": 0, "b": bad, "c": 2})
    with pytest.raises(InputError) as err:
        parse_tokenizer_json(path)
    assert f"(key {key})" in str(err.value)


def _vocab_dir(tmp_path: Path, config: dict | None = None, added: str | None = None) -> Path:
    """A GPT-2-shaped slow vocabulary (vocab.json + merges.txt) of two tokens, with optional config and
    added_tokens.json."""
    write(tmp_path / "vocab.json", json.dumps({"a": 0, "b": 1}))
    write(tmp_path / "merges.txt", "#version: 0.2\n")
    if config is not None:
        write(tmp_path / "tokenizer_config.json", json.dumps(config))
    if added is not None:
        write(tmp_path / "added_tokens.json", added)
    return tmp_path


def test_added_tokens_json_is_read_with_special_by_name(tmp_path: Path) -> None:
    """transformers 5 (_from_pretrained): added_tokens.json entries are added tokens, special when their text is a
    named special token, normalized when not."""
    from tokaudit.model.config_added import config_added_tokens
    from tokaudit.artifacts.load import load_artifacts

    directory = _vocab_dir(tmp_path, {"eos_token": "<|eot|>"}, json.dumps({"<|eot|>": 2, "<x>": 3}))
    found = config_added_tokens(load_artifacts(directory))
    assert (found.rule, found.artifact) == ("added_tokens.json", "added_tokens.json")
    assert [(t.id, t.content, t.special, t.normalized, str(t.source)) for t in found.tokens] == [
        (2, "<|eot|>", True, False, "added_tokens.json (<|eot|>)"),
        (3, "<x>", False, True, "added_tokens.json (<x>)"),
    ]


def test_added_tokens_json_is_ignored_when_the_config_has_added_tokens_decoder(tmp_path: Path) -> None:
    from tokaudit.model.config_added import config_added_tokens
    from tokaudit.artifacts.load import load_artifacts

    decoder = {"2": {"content": "<y>", "special": True}}
    directory = _vocab_dir(tmp_path, {"added_tokens_decoder": decoder}, json.dumps({"<x>": 3}))
    found = config_added_tokens(load_artifacts(directory))
    assert [(t.id, t.content) for t in found.tokens] == [(2, "<y>")] and found.rule == "added_tokens_decoder"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"<x>": "3"}', 'added_tokens.json (key <x>): expected an integer, found "3"'),
        ('["<x>"]', "added_tokens.json: expected a JSON object, found list"),
    ],
)
def test_added_tokens_json_errors_name_the_key(tmp_path: Path, content: str, message: str) -> None:
    from tokaudit.artifacts.added_tokens import parse_added_tokens_json

    with pytest.raises(InputError) as info:
        parse_added_tokens_json(write(tmp_path / "added_tokens.json", content))
    assert str(info.value).endswith(message)


@pytest.mark.parametrize(
    ("name", "content", "kind"),
    [
        ("9b5ad71b2ce5302211f9c61530b329a4922fc6a4", f"{b64(b'a')} 0\n{b64(b'b')} 1\n", "tiktoken"),
        ("ranks.txt", "= 0\nYQ== 1\n", "tiktoken"),
        (
            "anthropic_tokenizer.json",
            '{"version": "1.0", "truncation": null, "padding": null, "added_tokens": []}',
            "tokenizer_json",
        ),
        ("settings.json", '{"model": "x"}', None),
        ("notes.txt", "hello 1\n", None),
    ],
)
def test_vocabulary_kind_by_content(tmp_path: Path, name: str, content: str, kind: str | None) -> None:
    from tokaudit.artifacts.load import sniff_vocabulary

    assert sniff_vocabulary(write(tmp_path / name, content)) == kind


def _files_of_kind(globs: tuple[str, ...]) -> list[Path]:
    """The fixture files (in path order) named by one of ``globs``."""
    import fnmatch

    from conftest import ROOT

    return [
        p
        for glob in globs
        for p in sorted(p for p in (ROOT / "fixtures").rglob("*") if p.is_file() and fnmatch.fnmatchcase(p.name, glob))
    ]


def _load_kind(kind: FileKind, source: Path, target: Path) -> Artifacts:
    """``source`` as the only file of its kind in ``target``: beside a GPT-2 vocabulary unless it is one."""
    import shutil

    from conftest import ROOT

    target.mkdir()
    if not kind.vocabulary:
        for f in (ROOT / "fixtures" / "gpt2-files").iterdir():
            shutil.copy(f, target)
    shutil.copy(source, target / source.name)
    return load_artifacts(target / source.name if kind.name == "gguf" else target)


def test_every_file_kind_of_the_table_loads_into_its_field(tmp_path: Path) -> None:
    """Each row of FILE_KINDS, from a real file: found by its name beside a GPT-2 vocabulary (or alone, for a
    vocabulary; as the target, for a GGUF), parsed by the row's parser into the Artifacts field named like the row,
    recognised by content where the row says so; Artifacts has no field without a row."""
    import dataclasses

    assert {f.name for f in dataclasses.fields(Artifacts)} == {"root"} | {kind.name for kind in FILE_KINDS}
    assert names_of_rank_files() == "tiktoken.model, *.tiktoken, tekken.json"
    entries = {}
    for kind in FILE_KINDS:
        sources = _files_of_kind(kind.globs or ("*.gguf",))
        if kind.name == "added_tokens_json":  # no fixture ships one: the slow tokenizers' file as they write it
            sources = [write(tmp_path / "added_tokens.json", '{"<|extra|>": 1000}')]
        # the first fixture of the kind that is one (fixtures/spm-fake-model's tokenizer.model holds tiktoken ranks)
        for n, source in enumerate(sources[:3]):
            artifacts = _load_kind(kind, source, tmp_path / f"{kind.name}-{n}")
            record = getattr(artifacts, kind.name)
            if kind.name == "remote_code":
                assert [type(r).__module__ for r in record] == ["tokaudit.artifacts.remote_code"], source
                record = record[0]
            if record is not None:
                break
        assert record is not None, (kind.name, sources[:3])
        assert type(record).__module__ == f"tokaudit.artifacts.{kind.parser[0]}", (kind.name, source)
        assert (kind.name, record) in artifacts.present()
        if kind.sniff is not None:
            assert sniff_vocabulary(source) == kind.name
        entries[kind.name] = artifacts.entries(kind.name, record)
    assert len(entries) == len(FILE_KINDS) == 17
    assert (entries["tekken"], entries["added_tokens_json"], entries["merges"], entries["config"]) == (
        600,
        1,
        741,
        None,
    )
