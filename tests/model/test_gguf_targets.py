"""GGUF targets: a .gguf file, a directory holding one (alone or beside the HF files), a split model; the
model built from the GGUF, the llama.cpp loader row, and bad GGUF files as one error line (exit 2)."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from conftest import FIXTURES, run_cli, tree_snapshot

GGUF = FIXTURES / "llamacpp" / "clean-bpe.gguf"
SPM = FIXTURES / "llamacpp" / "spm-no-byte-tokens.gguf"


def _scan(*args: object) -> tuple[int, dict, str]:
    result = run_cli("scan", "--format", "json", *map(str, args))
    return result.exit_code, json.loads(result.stdout) if result.stdout else {}, result.stderr


def _error_line(*args: object) -> str:
    result = run_cli("scan", *map(str, args))
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stdout == "" and "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_a_gguf_file_is_a_model_like_any_other() -> None:
    from tokaudit.model.load import load_model

    model = load_model(str(GGUF))
    hf = load_model(str(FIXTURES / "clean-bpe"))
    assert model.vocab_artifact == "clean-bpe.gguf" and model.artifacts.gguf_only
    # every id has the bytes of the tokenizer.json it was converted from (byte-level text decoded, specials verbatim)
    assert model.files.flat[0] == hf.files.flat[0] and len(model.files.flat[0]) == 1000
    assert model.files.flat[0][94] == b"\xa1" and model.files.flat[0][998] == b"<|im_start|>"
    assert model.files.flat[1] == frozenset({997, 998, 999})  # the CONTROL tokens are the special ones
    assert model.files.lookup(997).source.key == "tokenizer.ggml.token_type[997]"  # type: ignore[union-attr]
    assert model.checked_size == 1000


def test_scan_of_a_gguf_file_shows_the_llamacpp_loader() -> None:
    before = tree_snapshot(GGUF.parent)
    code, doc, _ = _scan(GGUF)
    assert code == 0
    target = doc["targets"][0]
    loaders = {row["loader"]: row for row in target["loaders"]}
    assert loaders["llama.cpp"]["files"] == ["clean-bpe.gguf"] and loaders["llama.cpp"]["mapped"] == 1000
    assert loaders["smg"]["unmapped"] is None and loaders["Dynamo"]["unmapped"] is None  # they cannot load a GGUF
    assert loaders["transformers"]["rule"] == "AutoTokenizer(gguf_file=...): converted from clean-bpe.gguf"
    assert not [f for f in doc["findings"] if f["code"] == "TA301"]  # no "ship a tokenizer.json" for a GGUF
    assert tree_snapshot(GGUF.parent) == before


def test_directory_forms(tmp_path: Path) -> None:
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(GGUF, alone / "model.gguf")
    assert _scan(alone)[0] == 0

    split = tmp_path / "split"
    split.mkdir()
    shutil.copy(GGUF, split / "m-00001-of-00002.gguf")
    (split / "m-00002-of-00002.gguf").write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 0))
    from tokaudit.model.load import load_model

    for target in (split, split / "m-00002-of-00002.gguf"):  # the directory or any shard: the first is read
        assert load_model(str(target)).artifacts.gguf.path.name == "m-00001-of-00002.gguf"  # type: ignore[union-attr]

    both = tmp_path / "both"
    shutil.copytree(FIXTURES / "clean-bpe", both)
    shutil.copy(GGUF, both / "clean-bpe.gguf")
    model = load_model(str(both))
    assert (
        model.vocab_artifact == "tokenizer.json" and model.artifacts.gguf is not None and not model.artifacts.gguf_only
    )
    assert [row.loader for row in __import__("tokaudit.model.loaders", fromlist=["x"]).loader_views(model)][
        -1
    ] == "llama.cpp"

    two = tmp_path / "two"
    two.mkdir()
    shutil.copy(GGUF, two / "a.gguf")
    shutil.copy(SPM, two / "b.gguf")
    assert (
        _error_line(two) == f"tokaudit: error: {two}: 2 GGUF models in {two} (a.gguf, b.gguf): name one as the target"
    )

    orphan = tmp_path / "orphan"
    orphan.mkdir()
    shutil.copy(GGUF, orphan / "m-00002-of-00002.gguf")
    assert _error_line(orphan / "m-00002-of-00002.gguf") == (
        f"tokaudit: error: {orphan}/m-00002-of-00002.gguf: m-00001-of-00002.gguf is missing: the first shard of a "
        "split "
        "GGUF holds its metadata"
    )


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", "bad.gguf: at byte 0: empty file, not a GGUF file"),
        (
            b"GGUF" + struct.pack("<IQQ", 3, 0, 2**62),
            "bad.gguf: at byte 16: key/value count 4611686018427387904 needs at least",
        ),
        (GGUF.read_bytes()[:5000], "bad.gguf (key tokenizer.ggml.tokens): at byte "),
    ],
    ids=["empty", "count-past-end", "truncated-in-tokens"],
)
def test_bad_gguf_is_one_line_exit_2(tmp_path: Path, data: bytes, expected: str) -> None:
    path = tmp_path / "bad.gguf"
    path.write_bytes(data)
    line = _error_line(path)
    assert line.startswith(f"tokaudit: error: {tmp_path}/{expected}"), line
