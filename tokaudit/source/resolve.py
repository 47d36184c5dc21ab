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


#: Hugging Face's web address; a Hub target's files are shown there at the resolved commit.
HUB_URL = "https://huggingface.co"
#: Directories looked at above a local target for the project root that keys its baseline entries.
MAX_ROOT_DEPTH = 64


@dataclass(frozen=True)
class Source:
    """A target resolved to local files. ``display`` is what the user typed."""

    display: str
    path: Path
    repo_id: str | None = None
    revision: str | None = None
    #: The commit a Hub target resolved to (the snapshot directory's name); None for a local target.
    commit: str | None = None
    #: What the user should know about how the target was resolved (``--revision`` on a local path).
    warnings: tuple[str, ...] = ()
    #: The file holding the base vocabulary (set once the model is built): where a finding without a file points.
    primary: str | None = None

    @property
    def key(self) -> str:
        """The target as baselines and fingerprints know it, whatever directory it was given from: a Hub repo id,
        else the path relative to the project root above it (the nearest directory with ``.git`` or
        ``pyproject.toml``), else the absolute path."""
        if self.repo_id is not None:
            return self.repo_id
        return project_relative(self.path)

    def file_url(self, name: str) -> str | None:
        """A Hub target's file at the resolved commit (None for a local target)."""
        if self.repo_id is None:
            return None
        from urllib.parse import quote

        return f"{HUB_URL}/{self.repo_id}/blob/{quote(self.commit or self.revision or 'main', safe='')}/{quote(name)}"

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"key": self.key}
        if self.repo_id is not None:
            out.update(repo_id=self.repo_id, revision=self.revision, commit=self.commit,
                       url=f"{HUB_URL}/{self.repo_id}/tree/{self.commit or self.revision or 'main'}")
        return out


def same_files(a: Source, b: Source) -> str | None:
    """What ``a`` and ``b`` both are when they are the same files (one directory, or one Hub commit), else None:
    comparing them with each other can only find them identical."""
    if a.repo_id is not None and a.repo_id == b.repo_id and a.commit is not None and a.commit == b.commit:
        return f"{a.repo_id} at commit {a.commit}"
    try:
        if a.path.resolve() == b.path.resolve():
            return str(a.path)
    except (OSError, RuntimeError):
        return None
    return None


def project_relative(path: Path) -> str:
    """``path`` relative to the nearest directory above it holding ``.git`` or ``pyproject.toml`` (POSIX
    separators), else its absolute form."""
    try:
        absolute = path.resolve()
    except (OSError, RuntimeError):
        return path.as_posix()
    for depth, directory in enumerate(absolute.parents):
        if depth >= MAX_ROOT_DEPTH:
            break
        try:
            if (directory / ".git").exists() or (directory / "pyproject.toml").is_file():
                return absolute.relative_to(directory).as_posix()
        except OSError:
            continue
    return absolute.as_posix()


def looks_like_repo_id(target: str) -> bool:
    return bool(re.fullmatch(_REPO_ID, target)) and not target.startswith(".")


def resolve(target: str, revision: str | None = None) -> Source:
    path = Path(target).expanduser()
    if path_exists(path):
        ignored = (f"--revision {revision} does not apply to {target}: a local path is read as it is on disk",) if revision else ()
        return Source(target, path, warnings=ignored)
    if not looks_like_repo_id(target):
        raise InputError("no such file or directory", file=target)
    if len(target) > MAX_REPO_ID:
        raise InputError(f"not a local path, and too long for a Hugging Face repo id (over {MAX_REPO_ID} characters)",
                         file=target)
    snapshot = _snapshot(target, revision)
    # huggingface-hub's cache keeps each commit in snapshots/<commit hash>
    commit = snapshot.name if re.fullmatch(r"[0-9a-f]{40}", snapshot.name) else None
    return Source(target, snapshot, repo_id=target, revision=revision, commit=commit)


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
