"""Build llama.cpp's chat-template engine from the pinned llama-cpp-python sdist, once, into the user cache.

What is compiled: llama.cpp's ``common/jinja`` (lexer, parser, runtime), ``common/chat.cpp`` and what it needs (message
parsing and normalisation, the template workarounds, the specialised template handlers, the PEG parser they build),
all from ``vendor/llama.cpp`` of the llama-cpp-python 0.3.36 sdist (its sha256 is checked), plus tokaudit's driver
``llamacpp_driver.cpp`` (framing, llama-server's request parsing, the clock). Nothing of llama.cpp is in this
repository: the sources are read from the sdist at build time.

Where the sdist comes from: ``$TOKAUDIT_LLAMACPP_SDIST`` (the ``.tar.gz``), else the real-tokenizer cache that
``scripts/fetch_real_tokenizers.py`` fills (``$TOKAUDIT_REAL_CACHE``, default ``~/.cache/tokaudit/real``), under
``packages/``. Get it with ``pip download llama-cpp-python==0.3.36 --no-deps --no-binary :all:``.

The executable goes to ``$XDG_CACHE_HOME/tokaudit/llamacpp-jinja/KEY/`` (KEY: a hash of the sdist, the driver's
source, the compiler and the flags), built in a temporary directory next to it and renamed into place, under a lock
file so that concurrent first uses build it once. About 100 s of CPU with g++ 12 (``-O1``), two compiler processes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SDIST_NAME = "llama_cpp_python-0.3.36.tar.gz"
SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
SDIST_VERSION = "llama-cpp-python 0.3.36"
_TREE = "llama_cpp_python-0.3.36/vendor/llama.cpp/"
#: The sdist's directories the build reads (headers and sources); nothing else is extracted.
_EXTRACT = ("common/", "include/", "ggml/include/", "vendor/nlohmann/")
#: The translation units: common/jinja, common/chat*.cpp, common/parsers and what they call.
_SOURCE_GLOBS = ("common/jinja/*.cpp", "common/chat*.cpp", "common/parsers/*.cpp")
_SOURCES = (
    "common/json.cpp",
    "common/unicode.cpp",
    "common/peg-parser.cpp",
    "common/json-schema-to-grammar.cpp",
    "common/json-schema.cpp",
    "common/log.cpp",
    "common/trie.cpp",
    "common/common.cpp",
)
_CXXFLAGS = ("-std=c++17", "-O1", "-ffunction-sections", "-fdata-sections", "-w")
#: Unused sections go (common.cpp's model-loading half refers to libllama, which is never linked); the driver's
#: clock_gettime/time are exported so that libstdc++ and libc's callers see the template's clock.
_LDFLAGS = ("-Wl,--gc-sections", "-Wl,--export-dynamic-symbol=clock_gettime", "-Wl,--export-dynamic-symbol=time")
DRIVER = Path(__file__).with_name("llamacpp_driver.cpp")
EXECUTABLE = "tokaudit-llamacpp-jinja"
#: A whole build may take this long (two cores shared with other work: ~2 min; ten times that is a stuck compiler).
BUILD_SECONDS = 1800


class BuildUnavailable(Exception):
    """The engine cannot be built here; the message says why and what would fix it."""


@dataclass(frozen=True)
class Built:
    """The engine executable, and whether this call built it (and in how many seconds)."""

    path: Path
    built: bool = False
    seconds: float = 0.0


def find_sdist() -> Path | None:
    env = os.environ.get("TOKAUDIT_LLAMACPP_SDIST")
    if env:
        return Path(env).expanduser()
    real = os.environ.get("TOKAUDIT_REAL_CACHE")
    root = Path(real).expanduser() if real else Path.home() / ".cache" / "tokaudit" / "real"
    candidate = root / "packages" / SDIST_NAME
    return candidate if candidate.is_file() else None


def _compiler() -> str:
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")
    if not cxx:
        raise BuildUnavailable("no C++ compiler (g++, c++ or clang++, or $CXX) to build llama.cpp's template engine")
    return cxx


def _compiler_identity(cxx: str) -> str:
    try:
        out = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise BuildUnavailable(f"the C++ compiler {cxx} does not run: {exc}") from None
    return out.stdout.splitlines()[0] if out.stdout else cxx


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tokaudit" / "llamacpp-jinja"


def build_key(cxx_identity: str) -> str:
    h = hashlib.sha256()
    for part in (SDIST_SHA256, DRIVER.read_bytes().decode("utf-8"), cxx_identity, " ".join(_CXXFLAGS + _LDFLAGS)):
        h.update(part.encode("utf-8") + b"\0")
    return h.hexdigest()[:16]


def ensure_engine(notify: Callable[[str], None] | None = None) -> Built:
    """The engine executable, built first when this machine has none for this sdist, driver and compiler."""
    cxx = _compiler()
    target = cache_root() / build_key(_compiler_identity(cxx)) / EXECUTABLE
    if target.is_file():
        return Built(target)
    sdist = find_sdist()
    if sdist is None or not sdist.is_file():
        raise BuildUnavailable(
            f"llama.cpp's template engine is built from the {SDIST_VERSION} sdist, which is not here: "
            "pip download llama-cpp-python==0.3.36 --no-deps --no-binary :all: and set TOKAUDIT_LLAMACPP_SDIST "
            "to the .tar.gz (or run scripts/fetch_real_tokenizers.py)"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    import fcntl  # POSIX only, as the engine is (it relies on fork/exec, SIGALRM and RLIMIT_AS)

    with open(target.parent / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_file():  # another process built it while this one waited
            return Built(target)
        if notify is not None:
            notify(f"building llama.cpp's template engine from {sdist.name} (once per machine, about 2 minutes)")
        start = time.monotonic()
        _build(cxx, sdist, target)
        return Built(target, built=True, seconds=time.monotonic() - start)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _extract(sdist: Path, into: Path) -> Path:
    digest = _sha256(sdist)
    if digest != SDIST_SHA256:
        raise BuildUnavailable(
            f"{sdist} is not the pinned {SDIST_VERSION} sdist (sha256 {digest[:16]}…, expected {SDIST_SHA256[:16]}…)"
        )
    try:
        with tarfile.open(sdist, "r:gz") as tar:
            members = [
                m
                for m in tar.getmembers()
                if m.isfile() and m.name.startswith(_TREE) and m.name[len(_TREE) :].startswith(_EXTRACT)
            ]
            try:
                tar.extractall(into, members=members, filter="data")
            except (
                TypeError
            ):  # Python before 3.10.12 / 3.11.4: no filters (the members are regular files of the pinned sdist)
                tar.extractall(into, members=members)
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise BuildUnavailable(f"{sdist} cannot be read: {exc}") from None
    return into / _TREE


def _build(cxx: str, sdist: Path, target: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="build-", dir=target.parent) as tmp:
        tree = _extract(sdist, Path(tmp) / "src")
        sources = sorted({p for g in _SOURCE_GLOBS for p in tree.glob(g)} | {tree / s for s in _SOURCES})
        sources.append(DRIVER)
        includes = [f"-I{tree / d}" for d in ("common", "vendor", "ggml/include", "include")]
        objects: list[Path] = []
        jobs = max(1, min(os.cpu_count() or 1, 4))
        pending = list(enumerate(sources))
        running: list[tuple[subprocess.Popen[bytes], Path]] = []
        deadline = time.monotonic() + BUILD_SECONDS
        try:
            while pending or running:
                while pending and len(running) < jobs:
                    i, src = pending.pop(0)
                    obj = Path(tmp) / f"{i:03d}-{src.stem}.o"
                    objects.append(obj)
                    cmd = [cxx, *_CXXFLAGS, *includes, "-c", str(src), "-o", str(obj)]
                    running.append((subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE), src))
                proc, src = running.pop(0)
                _, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
                if proc.returncode != 0:
                    raise BuildUnavailable(f"compiling {src.name} failed: {_first_error(err)}")
            link: list[str | Path] = [cxx, *objects, *_LDFLAGS, "-o", str(Path(tmp) / EXECUTABLE)]
            out = subprocess.run(link, capture_output=True, timeout=max(1.0, deadline - time.monotonic()), check=False)
            if out.returncode != 0:
                raise BuildUnavailable(f"linking llama.cpp's template engine failed: {_first_error(out.stderr)}")
        except subprocess.TimeoutExpired:
            raise BuildUnavailable(f"building llama.cpp's template engine took more than {BUILD_SECONDS} s") from None
        finally:
            for proc, _ in running:
                proc.kill()
                proc.wait()
        os.replace(Path(tmp) / EXECUTABLE, target)


def _first_error(stderr: bytes) -> str:
    lines = stderr.decode("utf-8", "replace").splitlines()
    errors = [line for line in lines if "error" in line]
    return (errors or lines or ["no message"])[0][:300]
