"""Targets given as Hugging Face repo ids, resolved offline from a cache laid out as huggingface-hub lays it out."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _hf_cache(root: Path, repo: str = "acme/tiny") -> Path:
    """models--acme--tiny/{refs/main, snapshots/<commit>/<files>}; blobs hold the content, snapshots link to them."""
    repo_dir = root / "hub" / f"models--{repo.replace('/', '--')}"
    (repo_dir / "refs").mkdir(parents=True)
    (repo_dir / "refs" / "main").write_text(COMMIT)
    snapshot = repo_dir / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    (repo_dir / "blobs").mkdir()
    files = {
        "tiktoken.model": "".join(f"{base64.b64encode(bytes([i])).decode()} {i}\n" for i in range(256)).encode(),
        "tokenizer_config.json": json.dumps(
            {"added_tokens_decoder": {"300": {"content": "<|eot|>", "special": True}}}
        ).encode(),
        "config.json": json.dumps({"vocab_size": 301}).encode(),
    }
    for i, (name, content) in enumerate(files.items()):
        blob = repo_dir / "blobs" / f"{i:040x}"
        blob.write_bytes(content)
        os.symlink(os.path.relpath(blob, snapshot), snapshot / name)
    return root


def _run(args: list[str], hf_home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
    env.pop("HF_HUB_CACHE", None)
    return subprocess.run(
        [sys.executable, "-m", "tokaudit", *args], capture_output=True, text=True, env=env, cwd=hf_home
    )


def test_repo_id_resolves_from_the_offline_cache(tmp_path: Path) -> None:
    home = _hf_cache(tmp_path)
    proc = _run(["scan", "acme/tiny", "--format", "json"], home)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["target"] == "acme/tiny"
    gap = doc["findings"][0]
    assert (gap["name"], gap["ids"], gap["count"]) == ("vocab-gap", [[256, 299]], 44)
    assert [a["file"] for a in doc["artifacts"]] == ["tiktoken.model", "tokenizer_config.json", "config.json"]


def test_repo_id_with_revision(tmp_path: Path) -> None:
    home = _hf_cache(tmp_path)
    proc = _run(["scan", "acme/tiny", "--revision", COMMIT, "--format", "json"], home)
    assert proc.returncode == 1 and json.loads(proc.stdout)["vocab"]["declared_size"] == 301


def test_unknown_repo_offline_is_one_clear_line(tmp_path: Path) -> None:
    home = _hf_cache(tmp_path)
    proc = _run(["scan", "acme/missing"], home)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(
        "tokaudit: error: acme/missing: not a local path, and the Hugging Face repo could not be resolved ("
    )
