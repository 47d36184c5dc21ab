"""Resolve a TARGET argument to a local path."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tokaudit.artifacts.base import path_exists
from tokaudit.errors import InputError

#: huggingface_hub's limit on a repo id (namespace/name).
MAX_REPO_ID = 96
_REPO_ID = r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*"  # compiled on first use: a local target never needs it


@dataclass(frozen=True)
class Source:
    """A target resolved to local files. ``display`` is what the user typed."""

    display: str
    path: Path
    repo_id: str | None = None
    revision: str | None = None


def looks_like_repo_id(target: str) -> bool:
    return bool(re.fullmatch(_REPO_ID, target)) and not target.startswith(".")


def resolve(target: str, revision: str | None = None) -> Source:
    path = Path(target).expanduser()
    if path_exists(path):
        return Source(target, path)
    if not looks_like_repo_id(target):
        raise InputError("no such file or directory", file=target)
    if len(target) > MAX_REPO_ID:
        raise InputError(f"not a local path, and too long for a Hugging Face repo id (over {MAX_REPO_ID} characters)",
                         file=target)
    return Source(target, _snapshot(target, revision), repo_id=target, revision=revision)


def _snapshot(repo_id: str, revision: str | None) -> Path:
    """A local snapshot of the repo's tokenizer and config files only (never weights).

    Honours ``HF_HUB_OFFLINE`` and the HF cache (``HF_HOME`` / ``HF_HUB_CACHE``).
    """
    from huggingface_hub import snapshot_download

    from tokaudit.artifacts.load import TOKENIZER_FILE_PATTERNS

    try:
        return Path(snapshot_download(repo_id=repo_id, revision=revision, allow_patterns=TOKENIZER_FILE_PATTERNS))
    except Exception as exc:  # huggingface-hub raises many types (offline, 404, gated, HTTP, OS)
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(
            f"not a local path, and the Hugging Face repo could not be resolved ({type(exc).__name__}: {reason})",
            file=repo_id,
        ) from None
