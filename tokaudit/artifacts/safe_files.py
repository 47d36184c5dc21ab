"""Reading a target's files safely: regular files only (no FIFO, device or pseudo-file), inside the target,
within a size limit; every failure is one :class:`InputError` naming the file."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from tokaudit.errors import InputError

#: Largest file tokaudit reads (the biggest real tokenizer.json is ~35 MB); beyond it a parse
#: would need more memory than a CI runner has.
MAX_FILE_BYTES = 256 * 1024 * 1024
_MiB = 1024 * 1024


_PSEUDO_FS = ("/proc/", "/sys/", "/dev/")


def _describe_mode(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "a special file"


def _symlink_note(path: Path) -> str:
    """' (symlink to X, outside the target directory)' when ``path`` is a symlink, else ''."""
    try:
        if not path.is_symlink():
            return ""
        dest = os.path.realpath(path)
        outside = os.path.commonpath([dest, os.path.realpath(path.parent)]) != os.path.realpath(path.parent)
    except (OSError, ValueError):
        return ""
    return f" (symlink to {dest}{', outside the target directory' if outside else ''})"


def is_existing_file(arg: str) -> bool:
    """Whether a command-line argument names an existing file. Arguments that are ids or text can be
    longer than a file name may be (ENAMETOOLONG) or hold a NUL: those are simply not files."""
    try:
        return Path(arg).is_file()
    except (OSError, ValueError):
        return False


def path_exists(path: Path) -> bool:
    """``path.exists()`` that answers False instead of raising for over-long names; a symlink loop or a
    broken symlink exists (it is there, and reading it gives the clear error)."""
    try:
        return path.exists() or path.is_symlink()
    except (OSError, ValueError):
        return False


def regular_file_error(path: Path) -> InputError | None:
    """Why ``path`` cannot be read as a file, or None when it is a regular file (after resolving symlinks).

    FIFOs, devices and sockets block or never end: they are refused before anything opens them.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if path.is_symlink():
            return InputError(f"broken symlink{_symlink_note(path)}", file=str(path))
        return InputError("no such file", file=str(path))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return InputError("symlink loop (too many levels of symbolic links)", file=str(path))
        if exc.errno == errno.ENAMETOOLONG:
            return InputError("file name too long", file=str(path))
        return InputError(f"cannot read file: {exc.strerror or exc}", file=str(path))
    if stat.S_ISDIR(st.st_mode):
        return InputError("is a directory, expected a file", file=str(path))
    if not stat.S_ISREG(st.st_mode):
        return InputError(f"not a regular file: {_describe_mode(st.st_mode)}{_symlink_note(path)}", file=str(path))
    real = os.path.realpath(path)
    if real.startswith(
        _PSEUDO_FS
    ):  # /proc/kmsg says "regular file" and blocks (and reading it consumes the kernel log)
        return InputError(
            f"not a regular file: a {real.split('/')[1]} pseudo-file{_symlink_note(path)}", file=str(path)
        )
    return None


def outside_error(path: Path, root: Path) -> InputError | None:
    """Why a file of the target directory ``root`` is refused: it resolves outside it (``vocab.txt ->
    /etc/passwd`` would be scanned, and decoded or quoted into a report). None when it stays inside, or is one
    of the Hugging Face cache's links: ``<repo>/snapshots/<rev>/file -> ../../blobs/<hash>`` resolves inside
    that repo's own ``blobs`` folder."""
    try:
        real = os.path.realpath(path)
        inside = os.path.realpath(root)
    except (OSError, ValueError):
        return None  # reading it gives the clear error
    if _within(real, inside):
        return None
    snapshots = os.path.dirname(inside)
    if os.path.basename(snapshots) == "snapshots" and _within(real, os.path.join(os.path.dirname(snapshots), "blobs")):
        return None
    return InputError(
        f"refused: a symlink to {real}, outside the target directory (tokaudit reads a target's own files only)",
        file=str(path),
    )


def _within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def _open_regular(path: Path) -> int:
    """A descriptor of ``path`` opened for reading, once it is checked to be a regular file (see
    :func:`regular_file_error`). Non-blocking: a /proc or /sys file that would block (``/proc/kmsg``)
    is refused instead of hanging."""
    problem = regular_file_error(path)
    if problem is not None:
        raise problem
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=str(path)) from None
    try:
        st = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=str(path)) from None
    if not stat.S_ISREG(st.st_mode):  # swapped after the check
        os.close(fd)
        raise InputError(f"not a regular file: {_describe_mode(st.st_mode)}{_symlink_note(path)}", file=str(path))
    return fd


def read_bytes(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file, at most ``limit`` of them; anything else is an :class:`InputError`."""
    fd = _open_regular(path)
    try:
        st = os.fstat(fd)
        if st.st_size > limit:
            raise InputError(f"file is {st.st_size / _MiB:.1f} MiB; the limit is {limit // _MiB} MiB", file=str(path))
        chunks: list[bytes] = []
        total = 0
        while True:
            try:
                chunk = os.read(fd, 1 << 20 if chunks else st.st_size + 1)  # a regular file: one read
            except BlockingIOError:
                raise InputError(
                    f"not a regular file: reading it would block{_symlink_note(path)}", file=str(path)
                ) from None
            if not chunk:
                break
            total += len(chunk)
            if total > limit:
                raise InputError(f"file is over the limit of {limit // _MiB} MiB", file=str(path))
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=str(path)) from None
    finally:
        os.close(fd)


def read_bytes_head(path: Path, size: int) -> bytes:
    """At most the first ``size`` bytes of a regular file (checked as :func:`read_bytes` checks it)."""
    fd = _open_regular(path)
    try:
        return os.read(fd, size)
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=str(path)) from None
    finally:
        os.close(fd)


@contextmanager
def open_regular(path: Path) -> Iterator[BinaryIO]:
    """A regular file opened for reading in binary (checked as :func:`read_bytes` checks it), for reading
    a large file a piece at a time."""
    with os.fdopen(_open_regular(path), "rb") as f:
        try:
            yield f
        except OSError as exc:
            raise InputError(f"cannot read file: {exc.strerror or exc}", file=str(path)) from None


def read_text(path: Path) -> str:
    return decode_text(read_bytes(path), str(path))


def decode_text(data: bytes, file: str) -> str:
    """UTF-8 (with or without a BOM) or an error naming the line of the first bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(f"not valid UTF-8 text (byte {exc.start})", file=file, line=line) from None
