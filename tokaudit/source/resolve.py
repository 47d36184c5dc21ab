"""Resolve a TARGET argument to a local path."""

from __future__ import annotations

import fnmatch
import math
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokaudit.artifacts.safe_files import MAX_FILE_BYTES, path_exists
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
            out.update(
                repo_id=self.repo_id,
                revision=self.revision,
                commit=self.commit,
                url=f"{HUB_URL}/{self.repo_id}/tree/{self.commit or self.revision or 'main'}",
            )
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
        ignored = (
            (f"--revision {revision} does not apply to {target}: a local path is read as it is on disk",)
            if revision
            else ()
        )
        return Source(target, path, warnings=ignored)
    if not looks_like_repo_id(target):
        raise InputError("no such file or directory", file=target)
    if len(target) > MAX_REPO_ID:
        raise InputError(
            f"not a local path, and too long for a Hugging Face repo id (over {MAX_REPO_ID} characters)", file=target
        )
    snapshot = _snapshot(target, revision)
    # huggingface-hub's cache keeps each commit in snapshots/<commit hash>
    commit = snapshot.name if re.fullmatch(r"[0-9a-f]{40}", snapshot.name) else None
    return Source(target, snapshot, repo_id=target, revision=revision, commit=commit)


#: The Hub: each request's connect/read timeout, and the deadline of a whole resolution (listing, downloads).
HUB_REQUEST_SECONDS = 10.0
HUB_DEADLINE_SECONDS = 30.0
#: Sets the whole resolution's deadline in seconds instead (a slow mirror may need more, a CI job less).
HUB_DEADLINE_ENV = "TOKAUDIT_HUB_DEADLINE"


def hub_deadline_seconds() -> float:
    """The deadline of a whole resolution: ``$TOKAUDIT_HUB_DEADLINE`` seconds when set, else 30."""
    value = os.environ.get(HUB_DEADLINE_ENV, "").strip()
    if not value:
        return HUB_DEADLINE_SECONDS
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise InputError(f"{HUB_DEADLINE_ENV}={value[:40]!r}: not a positive number of seconds")
    return seconds


def _snapshot(repo_id: str, revision: str | None) -> Path:
    """A local snapshot of the repo's tokenizer and config files only (never weights).

    Honours ``HF_HUB_OFFLINE`` and the HF cache (``HF_HOME`` / ``HF_HUB_CACHE``). Online, the repo's file list
    (with sizes) comes first, and a file over the read budget is refused before anything is downloaded; then
    the download runs in a thread the caller stops waiting for at :func:`hub_deadline_seconds` (an endpoint that
    accepts and never answers hung tokaudit forever), or when a file being written grows past the budget.
    """
    import threading

    deadline_seconds = hub_deadline_seconds()
    done: dict[str, Any] = {}

    def work() -> None:
        try:
            done["path"] = _download(repo_id, revision)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            done["error"] = exc

    thread = threading.Thread(target=work, name="tokaudit-hub", daemon=True)
    thread.start()
    deadline = time.monotonic() + deadline_seconds
    while thread.is_alive():
        thread.join(0.2)
        if thread.is_alive() and (time.monotonic() > deadline or _partial_over_budget(repo_id)):
            reason = (
                f"no answer within {deadline_seconds:g} s from {_endpoint()}"
                if time.monotonic() > deadline
                else f"a file grew past the limit of {MAX_FILE_BYTES >> 20} MiB while downloading"
            )
            _stop_downloads()
            raise InputError(
                f"not a local path, and the Hugging Face repo could not be resolved: {reason}", file=repo_id
            )
    if "error" in done:
        exc = done["error"]
        if isinstance(exc, InputError):
            raise exc
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if type(exc).__name__.endswith("Timeout"):  # httpx's ConnectTimeout, ReadTimeout, ...
            reason = f"no answer from {_endpoint()} within {HUB_REQUEST_SECONDS:g} s"
        raise InputError(
            f"not a local path, and the Hugging Face repo could not be resolved ({type(exc).__name__}: {reason})",
            file=repo_id,
        ) from None
    return Path(done["path"])


def _download(repo_id: str, revision: str | None) -> str:
    from huggingface_hub import HfApi, snapshot_download
    from huggingface_hub.constants import HF_HUB_OFFLINE
    from huggingface_hub.utils import disable_progress_bars

    disable_progress_bars()  # tqdm's bars would write to stderr, which carries one line

    from tokaudit.artifacts.load import TOKENIZER_FILE_PATTERNS

    if not HF_HUB_OFFLINE:
        info = HfApi().model_info(repo_id, revision=revision, files_metadata=True, timeout=HUB_REQUEST_SECONDS)
        for sibling in info.siblings or ():
            size = getattr(sibling, "size", None) or 0
            if size > MAX_FILE_BYTES and any(
                fnmatch.fnmatchcase(sibling.rfilename, g) for g in TOKENIZER_FILE_PATTERNS
            ):
                raise InputError(
                    f"{sibling.rfilename} is {size / 2**20:.1f} MiB on the Hub; the limit is {MAX_FILE_BYTES >> 20} "
                    "MiB "
                    "(not downloaded)",
                    file=repo_id,
                )
        revision = info.sha or revision
    return snapshot_download(
        repo_id=repo_id, revision=revision, allow_patterns=TOKENIZER_FILE_PATTERNS, etag_timeout=HUB_REQUEST_SECONDS
    )


def _endpoint() -> str:
    from huggingface_hub.constants import ENDPOINT

    return str(ENDPOINT)


def _partial_over_budget(repo_id: str) -> bool:
    """Whether a file the Hub client is writing for this repo (``blobs/*.incomplete`` in the HF cache) is past
    the read budget: a server that announced a small file and sends more."""
    from huggingface_hub.constants import HF_HUB_CACHE

    blobs = Path(HF_HUB_CACHE) / ("models--" + repo_id.replace("/", "--")) / "blobs"
    try:
        return any(p.stat().st_size > MAX_FILE_BYTES for p in blobs.glob("*.incomplete"))
    except OSError:
        return False


def _stop_downloads() -> None:
    """Close the Hub client's connections (a download in flight fails at its next read)."""
    try:
        from huggingface_hub import close_session

        close_session()
    except Exception:  # noqa: BLE001 - older huggingface-hub, or nothing open
        pass
