"""decode / encode: token boundaries, per-token ids, the gateway's default backend, id input from
arguments, files and stdin through the stream readers, and bad input."""

from __future__ import annotations

import io
import json

from rich.console import Console

from tests.conftest import FIXTURES, run_cli, tree_snapshot
from tokaudit.model.load import load_model
from tokaudit.oncall.codec import CodecError, DecodeResult, gateway_backend

TINY = FIXTURES / "tiny-tiktoken"
CLEAN = FIXTURES / "clean-bpe"


def test_default_backend_is_the_files_only_gateways():
    for encode in (True, False):
        assert gateway_backend(load_model(str(TINY)), encode) == "tiktoken"
        assert gateway_backend(load_model(str(CLEAN)), encode) == "hf"
        assert gateway_backend(load_model(str(FIXTURES / "mistral-tekken")), encode) == "tiktoken"
    # a GGUF alone: llama.cpp encodes, strict decodes as llama_detokenize does
    gguf = load_model(str(FIXTURES / "gguf" / "clean.gguf"))
    assert (gateway_backend(gguf, True), gateway_backend(gguf, False)) == ("llama.cpp", "strict")


def test_decode_json_pieces_and_ids():
    r = run_cli("decode", TINY, "1000", "300", "131", "1002", "--keep-special-tokens", "--format", "json")
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    assert (doc["backend"], doc["source"], doc["ids"]) == ("tiktoken", "<arguments>", [1000, 300, 131, 1002])
    assert doc["text"] == "[BOS]。\ufffd<|im_end|>"
    assert [(t["id"], t["bytes_hex"], t["special"], t["partial_utf8"]) for t in doc["tokens"]] == [
        (1000, b"[BOS]".hex(), True, False),
        (300, "。".encode().hex(), False, False),
        (131, "83", False, True),
        (1002, b"<|im_end|>".hex(), True, False),
    ]


def test_decode_plain_text_separates_pieces_with_bars():
    r = run_cli("decode", TINY, "1000,300,131,1002", "--keep-special-tokens")
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    assert "  tokens       [BOS]|。|<83>|<|im_end|>" in lines
    assert "  text         [BOS]。\ufffd<|im_end|>" in lines
    assert any(line.split() == ["2", "131", "<83>", "partial", "UTF-8"] for line in lines)


def test_terminal_shows_boundaries_as_alternating_colours():
    model = load_model(str(TINY))
    from tokaudit.backends.registry import load_backends
    from tokaudit.oncall.codec import decode_ids

    result, _ = decode_ids(model, load_backends(model, ["tiktoken"])[0], [72, 435, 111], False, "<arguments>")
    out = io.StringIO()
    result.rich(Console(file=out, force_terminal=True, color_system="standard", width=120, markup=False))
    tokens_line = next(line for line in out.getvalue().splitlines() if "tokens" in line)
    assert "|" not in tokens_line
    assert tokens_line.count("\x1b[30;106m") == 2 and tokens_line.count("\x1b[30;103m") == 1  # cyan, yellow, cyan


def test_skip_special_tokens():
    r = run_cli("decode", TINY, "1000", "300", "1002", "--skip-special-tokens", "--format", "json")
    doc = json.loads(r.stdout)
    assert doc["text"] == "。"
    assert [t["skipped"] for t in doc["tokens"]] == [True, False, True]
    # the default, as in replay and in servers
    assert json.loads(run_cli("decode", TINY, "1000", "300", "1002", "--format", "json").stdout) == doc
    kept = json.loads(
        run_cli("decode", TINY, "1000", "300", "1002", "--keep-special-tokens", "--format", "json").stdout
    )
    assert (kept["text"], kept["skip_special_tokens"]) == ("[BOS]。<|im_end|>", False)


def test_ids_from_a_file_and_from_stdin(tmp_path):
    path = tmp_path / "ids.json"
    path.write_text("[1000, 300]\n")
    r = run_cli("decode", TINY, path, "--keep-special-tokens", "--format", "json")
    assert r.exit_code == 0
    assert (json.loads(r.stdout)["source"], json.loads(r.stdout)["text"]) == (str(path), "[BOS]。")
    r = run_cli(
        "decode",
        TINY,
        "-",
        "--keep-special-tokens",
        "--format",
        "json",
        input='data: {"choices": [{"token_ids": [300, 1002]}]}\ndata: [DONE]\n',
    )
    assert r.exit_code == 0
    assert json.loads(r.stdout)["text"] == "。<|im_end|>"


def test_decoding_a_gap_id_is_a_backend_crash():
    r = run_cli("decode", TINY, "300", "1003", "--format", "json")
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert doc["text"] is None
    assert doc["error"] == {"exception": "KeyError", "message": "'Invalid token for decoding: 1003'", "panic": False}
    [f] = doc["findings"]
    assert (f["code"], f["name"], f["severity"], f["ids"]) == ("TA605", "backend-crash", "error", [[1003, 1003]])


def test_hf_default_for_tokenizer_json_drops_unknown_ids():
    r = run_cli("decode", CLEAN, "200", "5000", "--format", "json")
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    assert doc["backend"] == "hf"
    assert [t["mapped"] for t in doc["tokens"]] == [True, False]


def test_encode_shows_ids_and_pieces():
    before = tree_snapshot(TINY)
    r = run_cli("encode", TINY, "Hello wörld<|im_end|>", "--format", "json")
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    assert doc["ids"] == [72, 435, 111, 270, 195, 182, 114, 410, 1002]
    assert b"".join(bytes.fromhex(t["bytes_hex"]) for t in doc["tokens"]) == "Hello wörld<|im_end|>".encode()
    plain = run_cli("encode", TINY, "Hello wörld<|im_end|>", "--backend", "reference")
    assert "  tokens       H|ell|o| w|<C3>|<B6>|r|ld|<|im_end|>" in plain.stdout.splitlines()
    assert tree_snapshot(TINY) == before


def test_encode_text_from_stdin():
    r = run_cli("encode", TINY, "-", "--format", "json", input="Hello")
    assert json.loads(r.stdout)["ids"] == [72, 435, 111]


def test_bad_ids_are_one_line_exit_2():
    r = run_cli("decode", TINY, "1", "x")
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == "tokaudit: error: <arguments>:1: column 3: 'x' is not an integer token id\n"


def test_missing_ids_file_is_one_line_exit_2(tmp_path):
    r = run_cli("decode", TINY, tmp_path / "ids.txt")
    assert r.exit_code == 2
    assert r.stderr == f"tokaudit: error: {tmp_path / 'ids.txt'}: no such file\n"


def test_encode_with_a_decode_only_backend_is_exit_2():
    r = run_cli("encode", TINY, "hi", "--backend", "strict")
    assert r.exit_code == 2
    assert r.stderr == "tokaudit: error: key --backend: backend strict only decodes\n"


def test_unavailable_backend_is_exit_2():
    r = run_cli("encode", FIXTURES / "bert-wordpiece", "hi", "--backend", "tiktoken")
    assert r.exit_code == 2
    assert r.stderr.startswith(
        "tokaudit: error: key --backend: backend tiktoken is unavailable for this model: needs byte-level ranks"
    )
    assert r.stderr.count("\n") == 1


def test_section_renders_an_error_result():
    out = io.StringIO()
    result = DecodeResult(
        "t",
        None,
        backend="strict",
        backend_detail=None,
        backend_subset=None,
        ids_source="<arguments>",
        skip_special_tokens=False,
        ids=(),
        text=None,
        error=CodecError("UnknownId", "m", False),
        tokens=(),
    )
    result.rich(Console(file=out, width=120, markup=False))
    assert "  error        UnknownId: m" in out.getvalue().splitlines()
