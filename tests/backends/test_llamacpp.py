"""The llama.cpp backend (llama-cpp-python's low-level API), ``compare --gguf`` and ``compare --golden``.

The GGUFs are ``fixtures/llamacpp/`` (clean-bpe converted as convert_hf_to_gguf converts it, with and
without ``tokenizer.ggml.pre``). Without the ``llamacpp`` extra the llama.cpp tests skip and say why;
the golden-file parsing tests run everywhere (the hf backend checks the ids).
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version
from importlib.util import find_spec
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from conftest import FIXTURES, run_cli, tree_snapshot
from tokaudit.model.llamacpp_vocab import clean_spaces

CLEAN = FIXTURES / "clean-bpe"
GGUF = FIXTURES / "llamacpp" / "clean-bpe.gguf"
NO_PRE = FIXTURES / "llamacpp" / "clean-bpe-no-pre.gguf"

needs_llamacpp = pytest.mark.skipif(
    find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed (pip install 'tokaudit[llamacpp]')"
)


def _compare(*args: str) -> tuple[int, dict, str]:
    result = run_cli("compare", *args, "--format", "json")
    return result.exit_code, json.loads(result.stdout), result.stderr


def _corpus(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


CORPUS = ["you've heard they'll say", "Hello, world!", "x = 12345", "The fox <|im_end|> ok"]


@needs_llamacpp
def test_backend_encodes_decodes_and_pieces_with_the_low_level_api() -> None:
    from tokaudit.backends.llamacpp_backend import LlamaCppBackend

    b = LlamaCppBackend.load(GGUF)
    assert (b.n_vocab, b.add_bos, b.add_eos) == (1000, False, False)
    assert (
        b.describe()
        == f"llama-cpp-python {version('llama_cpp_python')}, vocab-only load of clean-bpe.gguf (1000 tokens, BPE)"
    )
    # special strings in the text become their ids (parse_special), nothing is added (add_special=False)
    assert b.encode("The fox <|im_end|> ok") == [871, 284, 897, 220, 999, 220, 287]
    assert b.encode_prompt("The fox") == b.encode("The fox")  # add_bos_token false: the server adds nothing
    assert b.decode([871, 284, 897, 220, 999]) == "The fox <|im_end|>"
    assert b.decode([871, 284, 897, 220, 999], skip_special_tokens=True) == "The fox "
    assert (b.piece(999), b.piece(999, special=False), b.piece(220)) == (b"<|im_end|>", b"", b" ")
    assert b.warnings() == []


@needs_llamacpp
def test_out_of_range_ids_are_refused_because_llamacpp_aborts_on_them(tmp_path: Path) -> None:
    from tokaudit.backends.llamacpp_backend import LlamaCppAbort, LlamaCppBackend

    b = LlamaCppBackend.load(GGUF)
    for bad in (1000, -1, 2**32):
        with pytest.raises(
            LlamaCppAbort, match=rf"^id {bad} is outside llama.cpp's vocabulary \(0..999\): llama.cpp aborts"
        ):
            b.decode([5, bad])
    # what llama.cpp itself does with id 1000, in a child process: std::out_of_range, then abort
    script = (
        "import ctypes, sys\nfrom llama_cpp import llama_cpp as C\n"
        "cb = C.llama_log_callback(lambda *a: None); C.llama_log_set(cb, ctypes.c_void_p(0))\n"
        "p = C.llama_model_default_params(); p.vocab_only = True\n"
        f"m = C.llama_model_load_from_file({str(GGUF)!r}.encode(), p); v = C.llama_model_get_vocab(m)\n"
        "buf = ctypes.create_string_buffer(64); C.llama_token_to_piece(v, 1000, buf, 64, 0, True)\n"
    )
    child = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={"GGML_NO_BACKTRACE": "1", "PATH": "/usr/bin:/bin"},
    )
    assert child.returncode == -6  # SIGABRT
    assert "std::out_of_range" in child.stderr


@needs_llamacpp
def test_faithful_conversion_encodes_as_hf_and_decodes_apart_only_by_clean_spaces() -> None:
    from tokaudit.backends.registry import load_backends
    from tokaudit.compare.corpus import builtin_corpus
    from tokaudit.compare.run import special_strings
    from tokaudit.model.load import load_model

    model = load_model(str(CLEAN), None)
    hf, llama = (lb.backend for lb in load_backends(model, ["hf", "llama.cpp"], gguf=GGUF))
    cases = builtin_corpus(special_strings(model))
    assert len(cases) == 478
    differ = 0
    for case in cases:
        ids = hf.encode(case.text)
        assert llama.encode(case.text) == ids, case.source
        ours, theirs = hf.decode(ids), llama.decode(ids)
        if ours != theirs:  # llama_detokenize applies clean_up_tokenization_spaces for BPE; HF tokenizers does not
            differ += 1
            assert clean_spaces(ours) == theirs, case.source
    assert differ == 14


def test_clean_spaces_port() -> None:
    assert clean_spaces("a , b . c ? d ! e") == "a, b. c? d! e"
    assert (
        clean_spaces("it ' s he 's I 'm we 're you 've don 't I 'd we 'll")
        == "it's he's I'm we're you've don 't I 'd we 'll"
    )
    assert clean_spaces("x ' ' y") == "x'' y"  # llama.cpp blanks the space it skips: the second ' stays


@needs_llamacpp
def test_compare_gguf_without_pre_reports_encode_mismatch(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path, CORPUS)
    before = tree_snapshot(CLEAN)
    code, doc, stderr = _compare(
        str(CLEAN), "--gguf", str(NO_PRE), "--backends", "hf,llama.cpp", "--no-builtin-corpus", "--corpus", str(corpus)
    )
    assert tree_snapshot(CLEAN) == before
    assert code == 1 and "llama_model_loader" not in stderr and "GENERATION QUALITY" not in stderr
    mismatch = [f for f in doc["findings"] if f["code"] == "TA601"]
    assert len(mismatch) == 1
    assert mismatch[0]["message"] == (
        "hf vs llama.cpp: 2 of 4 cases encode to different ids (2 benign: same decoded text, different ids; 0 real: "
        f"the decoded text differs). First, {corpus}:1 at \"you've heard they'll say\": hf 'y' 'ou' ''ve' (ids 88, "
        "282, 853) "
        "vs llama.cpp 'y' 'ou' ''' 've' (ids 88, 282, 6, 460)"
    )
    assert [e["case"] for e in mismatch[0]["details"]["examples"]] == [f"{corpus}:1", f"{corpus}:3"]
    llama = next(b for b in doc["backends"] if b["name"] == "llama.cpp")
    assert llama["detail"] == (
        f"llama-cpp-python {version('llama_cpp_python')}, vocab-only load of clean-bpe-no-pre.gguf (1000 tokens, BPE); "
        "llama.cpp warns: missing pre-tokenizer type, using: 'default' (+2 more)"
    )
    assert llama["load_warnings"] == [
        "missing pre-tokenizer type, using: 'default'",
        "GENERATION QUALITY WILL BE DEGRADED!",
        "CONSIDER REGENERATING THE MODEL",
    ]
    # the faithful conversion agrees on the same corpus
    code, doc, _ = _compare(
        str(CLEAN), "--gguf", str(GGUF), "--backends", "hf,llama.cpp", "--no-builtin-corpus", "--corpus", str(corpus)
    )
    assert not [f for f in doc["findings"] if f["code"] in ("TA601", "TA602")]
    unknown = next(f for f in doc["findings"] if f["code"] == "TA604")
    assert (
        unknown["message"]
        == "backends disagree on ids they may not know: declared size (1000): hf dropped, llama.cpp LlamaCppAbort"
    )


@needs_llamacpp
def test_llamacpp_load_log_is_kept_not_printed() -> None:
    from tokaudit.backends.llamacpp_backend import LlamaCppBackend

    b = LlamaCppBackend.load(NO_PRE)
    assert b.warnings()[0] == "load: missing pre-tokenizer type, using: 'default'"
    assert "load: GENERATION QUALITY WILL BE DEGRADED!" in b.warnings()
    assert any(text.startswith("llama_model_loader: loaded meta data with") for _, text in b.log)


def test_gguf_option_bad_input(tmp_path: Path) -> None:
    not_gguf = tmp_path / "x.gguf"
    not_gguf.write_bytes(b"GGUX")
    for path, message in (
        (tmp_path / "missing.gguf", "no such file"),
        (not_gguf, "not a GGUF file (it does not start with the magic 'GGUF')"),
        (tmp_path, "is a directory, expected a file"),
    ):
        result = run_cli("compare", str(CLEAN), "--gguf", str(path))
        assert result.exit_code == 2
        assert result.stderr.strip().splitlines() == [f"tokaudit: error: {path} (key --gguf): {message}"]


# -- golden files ---------------------------------------------------------------------------------


def _ids(text: str) -> list[int]:
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(CLEAN / "tokenizer.json")).encode(text, add_special_tokens=False).ids


def test_golden_jsonl_checked_for_every_backend(tmp_path: Path) -> None:
    golden = tmp_path / "golden.jsonl"
    wrong = _ids("x = 12345")
    wrong[1] = 5
    golden.write_text(
        "\n".join(
            json.dumps({"text": t, "ids": ids})
            for t, ids in (("Hello, world!", _ids("Hello, world!")), ("x = 12345", wrong), ("", []))
        )
        + "\n\n",
        encoding="utf-8",
    )
    code, doc, _ = _compare(str(CLEAN), "--backends", "hf,tiktoken", "--no-builtin-corpus", "--golden", str(golden))
    assert doc["golden"]["cases"] == 3 and doc["golden"]["format"] == "jsonl"
    hf = next(b for b in doc["golden"]["backends"] if b["backend"] == "hf")
    assert (hf["checked"], hf["mismatches"], hf["crashes"]) == (3, 1, 0)
    finding = next(f for f in doc["findings"] if f["code"] == "TA606")
    assert finding["name"] == "golden-mismatch" and finding["severity"] == "error" and code == 1
    assert finding["message"] == (
        'hf: 1 of 3 golden cases encode to other ids than golden.jsonl expects. First, golden.jsonl:2 "x = 12345", '
        f"from position 1: expected [{wrong[0]}, 5, {', '.join(map(str, wrong[2:]))}], got "
        f"[{', '.join(map(str, _ids('x = 12345')))}]"
    )


def test_golden_one_backend_is_enough(tmp_path: Path) -> None:
    golden = tmp_path / "g.jsonl"
    golden.write_text(json.dumps({"text": "Hello, world!", "ids": _ids("Hello, world!")}) + "\n", encoding="utf-8")
    code, doc, _ = _compare(str(CLEAN), "--backends", "hf", "--no-builtin-corpus", "--golden", str(golden))
    assert code == 0 and doc["golden"]["backends"] == [
        {"backend": "hf", "checked": 1, "mismatches": 0, "crashes": 0, "examples": []}
    ]


def test_golden_llamacpp_inp_out(tmp_path: Path) -> None:
    texts = ["Hello, world!", "\n\n leading newlines", "", "x = 12345"]
    (tmp_path / "v.gguf.inp").write_text("".join(t + "\n__ggml_vocab_test__\n" for t in texts), encoding="utf-8")
    (tmp_path / "v.gguf.out").write_text(
        "".join("".join(f" {i}" for i in _ids(t)) + "\n" for t in texts), encoding="utf-8"
    )
    for name in ("v.gguf.inp", "v.gguf.out"):  # either half may be named
        code, doc, _ = _compare(str(CLEAN), "--backends", "hf", "--no-builtin-corpus", "--golden", str(tmp_path / name))
        assert code == 0 and doc["golden"]["cases"] == 4 and doc["golden"]["format"] == "llama.cpp .inp/.out"
        assert doc["golden"]["backends"][0]["checked"] == 4 and doc["golden"]["backends"][0]["mismatches"] == 0
    # a last text without the separator still counts (gemma-4's .inp ends that way)
    (tmp_path / "v.gguf.inp").write_text(
        "".join(t + "\n__ggml_vocab_test__\n" for t in texts[:3]) + texts[3], encoding="utf-8"
    )
    code, doc, _ = _compare(
        str(CLEAN), "--backends", "hf", "--no-builtin-corpus", "--golden", str(tmp_path / "v.gguf.inp")
    )
    assert code == 0 and doc["golden"]["cases"] == 4


@pytest.mark.parametrize(
    ("inp", "out", "where", "message"),
    [
        (
            "a\n__ggml_vocab_test__\n",
            " 1\n 2\n",
            "v.gguf.out",
            "v.gguf.inp has 1 texts but v.gguf.out has 2 lines of ids (llama.cpp's test-tokenizer-0 stops there: "
            "'input and output files have different number of tests')",
        ),
        ("a\n__ggml_vocab_test__\nb\n__ggml_vocab_test__\n", " 1\n 2 x\n", "v.gguf.out:2", "'x' is not a token id"),
        ("a\n__ggml_vocab_test__\n", " -3\n", "v.gguf.out:1", "id -3 is not a token id (an integer 0..2147483647)"),
        ("", "", "v.gguf.inp", "no golden cases (llama.cpp's test-tokenizer-0 stops there: 'no tests found')"),
    ],
)
def test_golden_llamacpp_bad_input(tmp_path: Path, inp: str, out: str, where: str, message: str) -> None:
    (tmp_path / "v.gguf.inp").write_text(inp, encoding="utf-8")
    (tmp_path / "v.gguf.out").write_text(out, encoding="utf-8")
    result = run_cli("compare", str(CLEAN), "--golden", str(tmp_path / "v.gguf.inp"))
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [f"tokaudit: error: {tmp_path / where}: {message}"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"text": "a"}', "2 (key ids): no 'ids'"),
        ('{"text": 1, "ids": []}', "2 (key text): not a string"),
        ('{"text": "a", "ids": [1, "2"]}', "2: id '2' is not a token id (an integer 0..2147483647)"),
        ('{"text": "a", "ids": [true]}', "2: id True is not a token id (an integer 0..2147483647)"),
        ("[1, 2]", '2: a golden line is an object {"text": ..., "ids": [...]}, not list'),
        ('{"text": "a", "ids": [1]', "2: invalid JSON: Expecting ',' delimiter (column 25)"),
    ],
)
def test_golden_jsonl_bad_input(tmp_path: Path, line: str, message: str) -> None:
    golden = tmp_path / "g.jsonl"
    golden.write_text('{"text": "ok", "ids": []}\n' + line + "\n", encoding="utf-8")
    result = run_cli("compare", str(CLEAN), "--golden", str(golden))
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [f"tokaudit: error: {golden}:{message}"]


def test_golden_llamacpp_needs_its_other_half(tmp_path: Path) -> None:
    (tmp_path / "v.gguf.inp").write_text("a\n__ggml_vocab_test__\n", encoding="utf-8")
    result = run_cli("compare", str(CLEAN), "--golden", str(tmp_path / "v.gguf.inp"))
    assert result.exit_code == 2
    assert (
        result.stderr.strip()
        == f"tokaudit: error: {tmp_path / 'v.gguf.inp'}: a llama.cpp golden file needs v.gguf.out beside it"
    )


@pytest.mark.skipif(find_spec("torch") is not None, reason="torch is installed: transformers-gguf loads")
def test_transformers_gguf_says_it_needs_torch() -> None:
    pytest.importorskip("transformers", reason="the transformers extra is not installed")
    code, doc, _ = _compare(
        str(CLEAN),
        "--gguf",
        str(GGUF),
        "--backends",
        "hf,transformers-gguf",
        "--no-builtin-corpus",
        "--golden",
        str(FIXTURES / "llamacpp" / "golden.jsonl"),
    )
    row = next(b for b in doc["backends"] if b["name"] == "transformers-gguf")
    assert row["available"] is False
    assert row["reason"] == (
        f"transformers {version('transformers')} reads a GGUF only with torch installed "
        "(its GGUF reader imports torch): pip install torch"
    )


def _dir_with(tmp_path: Path, *ggufs: tuple[Path, str]) -> Path:
    import shutil

    root = tmp_path / "model"
    shutil.copytree(CLEAN, root)
    for source, name in ggufs:
        shutil.copyfile(source, root / name)
    return root


@needs_llamacpp
def test_a_gguf_beside_the_hf_files_is_loaded_by_every_command(tmp_path: Path) -> None:
    root = _dir_with(tmp_path, (GGUF, "model-q8.gguf"))
    code, doc, _ = _compare(str(root), "--no-builtin-corpus", "--corpus", str(_corpus(tmp_path, CORPUS)))
    llama = next(b for b in doc["backends"] if b["name"] == "llama.cpp")
    assert llama["available"] and llama["detail"].endswith("vocab-only load of model-q8.gguf (1000 tokens, BPE)")
    assert not [f for f in doc["findings"] if f["code"] == "TA601"]
    encoded = json.loads(
        run_cli("encode", str(root), "The fox <|im_end|> ok", "--backend", "llama.cpp", "--format", "json").stdout
    )
    assert encoded["ids"] == [871, 284, 897, 220, 999, 220, 287]
    explained = json.loads(run_cli("explain", str(root), "999", "--format", "json", "--quiet").stdout)
    assert explained["ids"][0]["backends"]["llama.cpp"]["text"] == "<|im_end|>"
    fuzzed = run_cli("fuzz", str(root), "--backends", "llama.cpp", "-n", "200", "--format", "json")
    crash = next(f for f in json.loads(fuzzed.stdout)["findings"] if f["code"] == "TA605")
    assert fuzzed.exit_code == 0 and crash["severity"] == "note" and "(LlamaCppAbort)" in crash["message"]


def test_which_gguf_beside_the_hf_files(tmp_path: Path) -> None:
    from tokaudit.artifacts.gguf import gguf_in

    split = _dir_with(tmp_path / "split", (GGUF, "m-00002-of-00002.gguf"), (GGUF, "m-00001-of-00002.gguf"))
    assert gguf_in(split) == (split / "m-00001-of-00002.gguf", None)
    two = _dir_with(tmp_path / "two", (GGUF, "a.gguf"), (NO_PRE, "b.gguf"))
    assert gguf_in(two) == (None, f"2 GGUF models in {two} (a.gguf, b.gguf)")
    code, doc, _ = _compare(
        str(two),
        "--backends",
        "hf,llama.cpp",
        "--no-builtin-corpus",
        "--golden",
        str(FIXTURES / "llamacpp" / "golden.jsonl"),
    )
    row = next(b for b in doc["backends"] if b["name"] == "llama.cpp")
    assert row["reason"] == f"2 GGUF models in {two} (a.gguf, b.gguf): name one with --gguf"
    assert gguf_in(CLEAN) == (None, None)


@needs_llamacpp
def test_faithful_conversion_passes_the_conversion_check() -> None:
    code, doc, _ = _compare(str(CLEAN), "--gguf", str(GGUF), "--backends", "hf,llama.cpp")
    assert code == 0
    assert [(f["code"], f["severity"]) for f in doc["findings"]] == [
        ("TA602", "note"),
        ("TA603", "note"),
        ("TA604", "warning"),
    ]
    pair = doc["pairs"][0]
    assert (pair["cases"], pair["encode_mismatch"], pair["decode_mismatch"], pair["decode_rewritten"]) == (
        478,
        0,
        0,
        14,
    )
    assert doc["findings"][0]["message"].startswith(
        "hf vs llama.cpp: in 14 of 478 cases the same ids decode to text that differs only by llama.cpp's space "
        "cleanup "
        "(llama_detokenize applies HF's clean_up_tokenization_spaces rules to this vocabulary"
    )
    assert doc["findings"][1]["details"]["backends"] == {"llama.cpp": 14}


@needs_llamacpp
def test_encode_shows_the_servers_prompt_ids(tmp_path: Path) -> None:
    root = _dir_with(tmp_path, (GGUF, "m.gguf"))
    doc = json.loads(run_cli("encode", str(root), "Hello", "--backend", "llama.cpp", "--format", "json").stdout)
    assert doc["ids"] == doc["server_prompt_ids"] == [39, 485, 78]  # add_bos_token false: nothing added
    hf = json.loads(run_cli("encode", str(root), "Hello", "--backend", "hf", "--format", "json").stdout)
    assert "server_prompt_ids" not in hf


@needs_llamacpp
def test_compare_gguf_with_the_wrong_pre_reports_encode_mismatch(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path, CORPUS)
    code, doc, _ = _compare(
        str(CLEAN),
        "--gguf",
        str(FIXTURES / "llamacpp" / "clean-bpe-wrong-pre.gguf"),
        "--backends",
        "hf,llama.cpp",
        "--no-builtin-corpus",
        "--corpus",
        str(corpus),
    )
    assert code == 1
    assert [f["message"] for f in doc["findings"] if f["code"] == "TA601"] == [
        "hf vs llama.cpp: 1 of 4 cases encode to different ids (1 benign: same decoded text, different ids; 0 real: "
        "the decoded "
        f"text differs). First, {corpus}:3 at \"x = 12345\": hf 'x' ' =' ' 1' (ids 87, 351, 306) vs llama.cpp 'x' ' "
        "=' ' ' '1' "
        "(ids 87, 351, 220, 16)"
    ]


@needs_llamacpp
def test_a_gguf_llamacpp_aborts_on_is_loaded_in_a_child_first() -> None:
    from tokaudit.backends.base import BackendUnavailable
    from tokaudit.backends.llamacpp_backend import LlamaCppBackend

    with pytest.raises(BackendUnavailable) as err:
        LlamaCppBackend.load(FIXTURES / "llamacpp" / "clean-bpe-duplicate-token.gguf")
    assert str(err.value) == (
        "llama.cpp aborts the process loading clean-bpe-duplicate-token.gguf (SIGABRT: llama-vocab.cpp:2544: "
        "GGML_ASSERT(id_to_token.size() == token_to_id.size()) failed); tokaudit loaded it in a worker process, so "
        "only that one died"
    )
    with pytest.raises(BackendUnavailable) as err:
        LlamaCppBackend.load(FIXTURES / "llamacpp" / "clean-bpe-no-merges.gguf")
    assert str(err.value) == (
        "llama.cpp cannot load clean-bpe-no-merges.gguf: llama_model_load: error loading model: "
        "error loading model vocabulary: cannot find tokenizer merges in model file"
    )
    # the process goes on: compare reports the backend unavailable and checks the golden file with hf
    code, doc, _ = _compare(
        str(CLEAN),
        "--gguf",
        str(FIXTURES / "llamacpp" / "clean-bpe-duplicate-token.gguf"),
        "--backends",
        "hf,llama.cpp",
        "--no-builtin-corpus",
        "--golden",
        str(FIXTURES / "llamacpp" / "golden.jsonl"),
    )
    assert code == 0 and [b["available"] for b in doc["backends"]] == [True, False]


def _abort(backend, text: str) -> Exception:
    from tokaudit.backends.llamacpp_backend import LlamaCppAbort

    with pytest.raises(LlamaCppAbort) as err:
        backend.encode(text)
    return err.value


@needs_llamacpp
def test_text_llamacpp_aborts_encoding_is_refused(tmp_path: Path) -> None:
    from tokaudit.backends.llamacpp_backend import LlamaCppAbort, LlamaCppBackend

    spm = FIXTURES / "llamacpp" / "spm-no-byte-tokens.gguf"
    b = LlamaCppBackend.load(spm)
    assert (b.encode("ab a"), b.encode_prompt("a"), b.cleans_spaces) == ([3, 7, 6], [1, 6], False)
    with pytest.raises(
        LlamaCppAbort,
        match=r"^llama.cpp aborts encoding 'z': it is not a token and the vocabulary has no byte token for 0x7A",
    ):
        b.encode("abz")
    # the first such character in the text is named, whatever the hash seed (a set's order is not)
    assert [str(_abort(b, t))[:31] for t in ("zyx", "xyz")] == [
        "llama.cpp aborts encoding 'z': ",
        "llama.cpp aborts encoding 'x': ",
    ]
    # what llama.cpp itself does with "z", in a child process: std::out_of_range from byte_to_token, then abort
    script = (
        "import ctypes\nfrom llama_cpp import llama_cpp as C\n"
        "cb = C.llama_log_callback(lambda *a: None); C.llama_log_set(cb, ctypes.c_void_p(0))\n"
        "p = C.llama_model_default_params(); p.vocab_only = True\n"
        f"m = C.llama_model_load_from_file({str(spm)!r}.encode(), p); v = C.llama_model_get_vocab(m)\n"
        "out = (C.llama_token * 16)(); C.llama_tokenize(v, b'z', 1, out, 16, False, True)\n"
    )
    child = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={"GGML_NO_BACKTRACE": "1", "PATH": "/usr/bin:/bin"},
    )
    assert child.returncode == -6 and "std::out_of_range" in child.stderr
    # the encode command reports it as a backend crash and goes on
    root = _dir_with(tmp_path, (spm, "spm.gguf"))
    result = run_cli("encode", str(root), "abz", "--backend", "llama.cpp", "--format", "json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["error"]["exception"] == "LlamaCppAbort"


@needs_llamacpp
def test_gguf_option_of_the_oncall_commands() -> None:
    encoded = json.loads(
        run_cli("encode", str(CLEAN), "Hello", "--backend", "llama.cpp", "--gguf", str(GGUF), "--format", "json").stdout
    )
    assert encoded["ids"] == [39, 485, 78]
    decoded = json.loads(
        run_cli(
            "decode",
            str(CLEAN),
            "39",
            "485",
            "999",
            "--backend",
            "llama.cpp",
            "--gguf",
            str(GGUF),
            "--keep-special-tokens",
            "--format",
            "json",
        ).stdout
    )
    assert decoded["text"] == "Hell<|im_end|>"
    explained = json.loads(
        run_cli("explain", str(CLEAN), "999", "--gguf", str(GGUF), "--format", "json", "--quiet").stdout
    )
    assert explained["ids"][0]["backends"]["llama.cpp"]["text"] == "<|im_end|>"
    fuzzed = run_cli("fuzz", str(CLEAN), "--backends", "llama.cpp", "--gguf", str(GGUF), "-n", "50", "--format", "json")
    assert fuzzed.exit_code == 0 and json.loads(fuzzed.stdout)["backends"][0]["available"]
    bad = run_cli("explain", str(CLEAN), "1", "--gguf", str(CLEAN / "tokenizer.json"))
    assert bad.exit_code == 2
    assert (
        bad.stderr.strip()
        == f"tokaudit: error: {CLEAN / 'tokenizer.json'} (key --gguf): not a GGUF file (it does not start with the "
        "magic 'GGUF')"
    )


@needs_llamacpp
def test_special_addition_divergence_between_tokenizers_and_llamacpp(tmp_path: Path) -> None:
    """TA210: clean-bpe with a post_processor adding <|endoftext|> (997) against the same vocabulary as a GGUF that
    adds nothing: each library's own prompt encode (add_special_tokens=True / llama_tokenize add_special) differs."""
    from llama_cpp import Llama

    target = FIXTURES / "rules" / "special-addition"
    tok = Tokenizer.from_file(str(target / "tokenizer.json"))
    assert tok.encode("Hello world").ids[0] == 997
    llm = Llama(model_path=str(GGUF), vocab_only=True, verbose=False)
    assert llm.tokenize(b"Hello world", add_bos=True) == tok.encode("Hello world", add_special_tokens=False).ids
    corpus = _corpus(tmp_path, ["Hello world"])
    code, doc, _ = _compare(
        str(target), "--gguf", str(GGUF), "--backends", "hf,llama.cpp", "--no-builtin-corpus", "--corpus", str(corpus)
    )
    (f,) = [f for f in doc["findings"] if f["code"] == "TA210"]
    assert (code, f["name"], f["severity"]) == (0, "special-addition-divergence", "warning")
    assert f["details"] == {
        "probe": "Hello world",
        "added": {"hf": {"start": [997], "end": []}, "llama.cpp": {"start": [], "end": []}},
    }
    assert f["message"] == (
        "encoding 'Hello world' with add_special_tokens=True, the backends add different special tokens: hf "
        "(tokenizers: "
        "TGI, smg, Dynamo) adds 997 <|endoftext|> before the text and nothing after it; llama.cpp (llama.cpp server, "
        "Ollama, LM Studio) adds nothing before the text and nothing after it. A completions endpoint tokenizes "
        "prompts "
        "this way, so stacks on these files prompt the model with a different (or no, or a doubled) BOS/EOS."
    )
    # the same files against a GGUF of the same vocabulary and no post_processor: nothing to report
    code, doc, _ = _compare(
        str(CLEAN), "--gguf", str(GGUF), "--backends", "hf,llama.cpp", "--no-builtin-corpus", "--corpus", str(corpus)
    )
    assert not [f for f in doc["findings"] if f["code"] == "TA210"]
