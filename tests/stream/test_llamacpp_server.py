"""replay's llama.cpp-server detokenizer: the server's per-token streaming (UTF-8 hold, stop strings with
its partial-match hold-back, nothing sent after the end in stream mode), its pieces emulated from the
GGUF's tokens and types and checked against llama-cpp-python's real ``llama_token_to_piece``."""

from __future__ import annotations

import importlib.util
import json
from importlib.util import find_spec
from pathlib import Path

import pytest

from conftest import FIXTURES, run_cli
from tokaudit.model.llamacpp_vocab import PieceRules, decode_text, token_piece
from tokaudit.stream.llamacpp_server import ServerStream, find_partial_stop, stop_outcome, validate_utf8

CLEAN = FIXTURES / "clean-bpe"
GGUF = FIXTURES / "llamacpp" / "clean-bpe.gguf"

needs_llamacpp = pytest.mark.skipif(
    find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed (pip install 'tokaudit[llamacpp]')"
)


def test_validate_utf8_holds_only_a_cut_character() -> None:
    assert validate_utf8("ab👋".encode()) == 6
    assert validate_utf8("ab👋".encode()[:-1]) == 2  # the 4-byte lead is 3 bytes from the end
    assert validate_utf8(b"ab\xe4\xbd") == 2
    assert validate_utf8(b"ab\x80") == 3  # a stray continuation byte is not held: it is sent (and replaced)
    assert validate_utf8(b"") == 0


def test_partial_stop_is_the_longest_prefix_ending_the_text() -> None:
    assert find_partial_stop(b"Hello Obs", b"Observation") == 6
    assert find_partial_stop(b"Hello O", b"Observation") == 6
    assert find_partial_stop(b"Hello", b"Observation") == -1
    assert find_partial_stop(b"", b"x") == -1


def _stream(pieces: dict[int, bytes], stops: list[bytes], eog: set[int] = frozenset()) -> ServerStream:  # type: ignore[assignment]
    return ServerStream(pieces.__getitem__, eog.__contains__, stops)


def test_server_holds_all_unsent_text_on_a_partial_stop_and_sends_nothing_held_at_the_end() -> None:
    pieces = {1: b"Hello", 2: b" Ob", 3: b"s", 4: b"x", 5: b"!", 9: b""}
    s = _stream(pieces, [b"Observation"])
    # " Ob" ends with "Ob", a prefix of the stop: the whole unsent " Ob" is held, not only "Ob"
    assert [s.step(i) for i in (1, 2, 3, 4)] == [b"Hello", b"", b"", b" Obsx"]
    s = _stream(pieces, [b"Observation"])
    assert [s.step(i) for i in (1, 2, 3)] == [b"Hello", b"", b""]
    assert s.held() == b" Obs"  # the stream ends here: the final response has no content, the client never gets it
    s = _stream(pieces, [b"Observation"], {9})
    assert [s.step(i) for i in (1, 2, 9)] == [b"Hello", b"", b" Ob"]  # an EOG id releases what was held


def test_server_cuts_at_a_full_stop_and_stops() -> None:
    pieces = {1: b"Hello", 2: b" Obser", 3: b"vation: x", 4: b"more"}
    s = _stream(pieces, [b"Observation"])
    assert [s.step(i) for i in (1, 2, 3, 4)] == [b"Hello", b"", b" ", b""]
    assert s.stopped == (2, b"Observation")


def test_server_holds_a_cut_character_and_sends_invalid_bytes() -> None:
    emoji = "👋".encode()
    s = _stream({1: emoji[:2], 2: emoji[2:3], 3: emoji[3:], 4: b"\x80"}, [])
    assert [s.step(i) for i in (1, 2, 3, 4)] == [b"", b"", emoji, b"\x80"]


def test_stop_outcome_as_the_server_reports_it() -> None:
    pieces = {1: b"Hello", 2: b" Ob", 3: b"s", 9: b""}.__getitem__
    held = stop_outcome(pieces, [1, 2, 3], ["Observation"], set())
    assert (held.position, held.matched, held.text, held.held) == (None, None, "Hello", [0, 3, 4])
    eog = stop_outcome(pieces, [1, 2, 9, 3], ["Observation"], {9})
    assert (eog.position, eog.matched, eog.text) == (2, 9, "Hello Ob")


def test_decode_text_as_llama_decode_text() -> None:
    assert decode_text("Ġhello".encode()) == b" hello"
    assert decode_text("ĊĠ".encode()) == b"\n "
    # a character outside GPT-2's byte alphabet: llama.cpp writes [UNK_BYTE_0x<hex><the whole token>]
    assert decode_text("a€".encode()) == b"a[UNK_BYTE_0xe282aca\xe2\x82\xac]"


def _fixture_rules() -> PieceRules:
    spec = importlib.util.spec_from_file_location("make_llamacpp_fixtures", FIXTURES / "make_llamacpp_fixtures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tokens, types, _merges, _specials = module.converted(
        json.loads((CLEAN / "tokenizer.json").read_text(encoding="utf-8"))
    )
    return PieceRules.from_gguf([t.encode() for t in tokens], types, "gpt2", "gpt-2")


def test_emulated_pieces_of_the_fixture() -> None:
    rules = _fixture_rules()
    assert (token_piece(rules, 999, True), token_piece(rules, 999, False)) == (b"<|im_end|>", b"")
    assert token_piece(rules, 220, False) == b" "


@needs_llamacpp
def test_emulated_pieces_equal_llamacpp_on_every_id_of_the_fixture() -> None:
    from tokaudit.backends.llamacpp_backend import LlamaCppBackend

    rules, real = _fixture_rules(), LlamaCppBackend.load(GGUF)
    assert len(rules.tokens) == real.n_vocab == 1000
    for special in (True, False):
        assert [token_piece(rules, i, special) for i in range(1000)] == [real.piece(i, special) for i in range(1000)]


@needs_llamacpp
def test_replay_with_gguf_streams_as_the_server(tmp_path: Path) -> None:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(CLEAN / "tokenizer.json"))
    ids = tok.encode("Hello, world! Obs", add_special_tokens=False).ids
    stream = tmp_path / "ids.txt"
    stream.write_text(" ".join(map(str, ids)), encoding="utf-8")
    result = run_cli(
        "replay", str(CLEAN), str(stream), "--gguf", str(GGUF), "--stop", "Observation", "--format", "json"
    )
    doc = json.loads(result.stdout)
    server = next(d for d in doc["detokenizers"] if d["name"] == "llama.cpp-server")
    assert server == {
        "name": "llama.cpp-server",
        "text": "Hello, world! Obs",
        "held_bytes": 0,
        "errors": [],
        "flush": "",
    }
    assert doc["llama_cpp_server"]["pieces"].startswith("llama_token_to_piece (llama-cpp-python ")
    stops = doc["stops"]["detokenizers"]
    # " Obs" ends with a prefix of the stop: the server holds it, and in stream mode never sends it
    assert stops["llama.cpp-server"] == {"position": None, "matched": None, "text": "Hello, world!", "max_held": 4}
    assert stops["offsets"]["text"] == doc["stops"]["expected"]["text"] == "Hello, world! Obs"
    found = [f for f in doc["findings"] if f["details"].get("detokenizer") == "llama.cpp-server"]
    assert [(f["code"], f["message"]) for f in found] == [
        (
            "TA506",
            "llama.cpp-server: no stop completes, but the text sent differs; sent …'Hello, world!'… "
            "instead of …'Hello, world! Obs'…",
        ),
    ]


def test_replay_llamacpp_server_without_a_gguf(tmp_path: Path) -> None:
    stream = tmp_path / "ids.txt"
    stream.write_text("39 485 78", encoding="utf-8")
    default = json.loads(run_cli("replay", str(CLEAN), str(stream), "--format", "json").stdout)
    assert "llama.cpp-server" not in [d["name"] for d in default["detokenizers"]]
    asked = json.loads(
        run_cli("replay", str(CLEAN), str(stream), "--detokenizers", "full,llama.cpp-server", "--format", "json").stdout
    )
    assert asked["detokenizers"][-1] == {
        "name": "llama.cpp-server",
        "applicable": False,
        "reason": "needs a GGUF file (a .gguf target, a directory holding one, or --gguf FILE)",
        "text": None,
        "held_bytes": 0,
        "errors": [],
        "flush": "",
    }


@needs_llamacpp
def test_replay_with_an_id_outside_the_vocabulary_never_reaches_llamacpp(tmp_path: Path) -> None:
    stream = tmp_path / "ids.txt"
    stream.write_text("39 485 5000 78", encoding="utf-8")
    result = run_cli("replay", str(CLEAN), str(stream), "--gguf", str(GGUF), "--stop", "xx", "--format", "json")
    assert result.exit_code == 1  # TA501 for id 5000; llama.cpp would have aborted the process
    doc = json.loads(result.stdout)
    server = next(d for d in doc["detokenizers"] if d["name"] == "llama.cpp-server")
    assert server["text"] == "Hello"
    assert server["errors"] == [
        {
            "position": 2,
            "id": 5000,
            "kind": "error",
            "message": "id 5000 is outside the vocabulary (0..999): llama.cpp aborts on it",
        }
    ]
    assert doc["stops"]["detokenizers"]["llama.cpp-server"]["text"] == "Hello"
