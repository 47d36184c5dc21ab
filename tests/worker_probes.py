"""Functions that misbehave as llama.cpp or a template engine can, for tests/test_worker.py to run in a worker
process (tokaudit's own worker runs only tokaudit's functions; these tests allow this module too)."""

from __future__ import annotations

import ctypes
import os
import sys
import time
from typing import Any


def allocate(n: int) -> int:
    """Allocate ``n`` bytes at once (a MemoryError past the worker's address-space limit)."""
    return len(bytearray(n))


def allocate_in_c(n: int) -> int:
    """Touch ``n`` bytes allocated by C's malloc, which returns NULL past the limit: then write to it anyway,
    as C++ code without a check would (the process dies)."""
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    p = libc.malloc(ctypes.c_size_t(n))
    if not p:
        os.abort()
    ctypes.memset(p, 1, n)
    return n


def spin() -> None:
    """Burn CPU forever (llama.cpp's RWKV tokenizer on a character no token starts with)."""
    while True:
        pass


def burn(seconds: float) -> float:
    """Burn ``seconds`` of CPU time, then return."""
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
    return seconds


def sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def abort_noisily() -> None:
    """What ggml's abort handler does: a backtrace on stdout, a line on stderr, SIGABRT."""
    os.write(1, b"#0  0x00007f in ggml_abort ()\n#1  0x00007f in llama_tokenize_impl ()\n")
    os.write(2, b"/build/llama.cpp/src/llama-vocab.cpp:123: GGML_ASSERT(unk_id != -1) failed\n")
    os.abort()


def exit_quietly() -> None:
    os._exit(7)


def write_stdout(text: str) -> str:
    sys.stdout.write(text)
    sys.stdout.flush()
    return text


def returns_object() -> Any:
    """A reply that is not plain data: the parent refuses to unpickle it."""
    import fractions

    return fractions.Fraction(1, 3)


def raise_value_error(message: str) -> None:
    raise ValueError(message)


def raise_input_error(message: str) -> None:
    from tokaudit.errors import InputError

    raise InputError(message)


def pid() -> int:
    return os.getpid()
