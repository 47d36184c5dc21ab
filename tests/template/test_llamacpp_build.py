"""Building llama.cpp's template engine: what a machine without the sdist, with another file or without a compiler
is told (the build itself, and the engine, are tested in tests/real/test_llamacpp_engine_real.py)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from tokaudit.template.llamacpp_build import BuildUnavailable, ensure_engine


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("TOKAUDIT_REAL_CACHE", str(tmp_path / "real"))
    monkeypatch.delenv("TOKAUDIT_LLAMACPP_SDIST", raising=False)
    return tmp_path


def test_without_the_sdist_the_message_says_how_to_get_it(empty_cache: Path) -> None:
    with pytest.raises(
        BuildUnavailable,
        match=r"^llama.cpp's template engine is built from the llama-cpp-python 0.3.36 sdist, "
        r"which is not here: pip download llama-cpp-python==0.3.36 --no-deps --no-binary :all: and set "
        r"TOKAUDIT_LLAMACPP_SDIST to the .tar.gz \(or run scripts/fetch_real_tokenizers.py\)$",
    ):
        ensure_engine()  # load_engine() keeps one engine per process: an earlier test may have built it


def test_another_file_is_refused_by_its_sha256(empty_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = empty_cache / "llama_cpp_python-0.3.36.tar.gz"
    with tarfile.open(fake, "w:gz") as tar:
        data = b"int main() { return 0; }\n"
        info = tarfile.TarInfo("llama_cpp_python-0.3.36/vendor/llama.cpp/common/chat.cpp")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    monkeypatch.setenv("TOKAUDIT_LLAMACPP_SDIST", str(fake))
    with pytest.raises(
        BuildUnavailable,
        match=r" is not the pinned llama-cpp-python 0.3.36 sdist \(sha256 [0-9a-f]{16}…, "
        r"expected 832db0699007f1be…\)$",
    ):
        ensure_engine()
    assert not list((empty_cache / "cache" / "tokaudit" / "llamacpp-jinja").glob("*/tokaudit-llamacpp-jinja"))


def test_a_missing_compiler_is_named(empty_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CXX", str(empty_cache / "no-such-compiler"))
    with pytest.raises(BuildUnavailable, match=r"^the C\+\+ compiler .*no-such-compiler does not run: "):
        ensure_engine()
