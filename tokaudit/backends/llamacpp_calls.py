"""What the llama.cpp backend runs in its worker process (:mod:`tokaudit.worker`): llama-cpp-python's low-level
calls on a GGUF loaded vocab-only, once per file per worker. Plain data in, plain data out.

llama.cpp aborts the process on some malformed vocabularies (duplicate token texts while loading, a WordPiece
vocabulary without ``[UNK]`` while tokenizing), loops forever on others (an RWKV vocabulary on a character no
token starts with), and its abort handler writes to stdout: none of that may happen in tokaudit's own process,
so only the worker imports llama_cpp. :mod:`tokaudit.backends.llamacpp_backend` is the parent's side.
"""

from __future__ import annotations

import ctypes
import os
from array import array
from typing import Any

#: ggml's ``ggml_log_level`` values (ggml.h; llama-cpp-python's own _logger.py has an older order).
LOG_LEVELS = {0: "none", 1: "debug", 2: "info", 3: "warn", 4: "error", 5: "cont"}
#: At most this many log lines are kept per load (a 250k-token vocabulary logs ~100 lines).
MAX_LOG_LINES = 2000

_state: dict[str, Any] = {}
#: path -> ((size, mtime), model, vocab), the most recently loaded last
_models: dict[str, tuple[tuple[int, int], Any, Any]] = {}
#: Vocabularies kept loaded in one worker (a 262k-token one takes ~130 MB; a process may meet many GGUFs).
MAX_LOADED = 2


def _bindings() -> Any:
    """llama-cpp-python's ctypes module, imported once, with a log callback that keeps llama.cpp's lines."""
    if "C" in _state:
        return _state["C"]
    import llama_cpp  # noqa: F401 - the package import loads the shared library
    from llama_cpp import llama_cpp as C

    lines: list[tuple[str, str]] = []
    partial: list[Any] = ["info", ""]

    def on_log(level: int, text: bytes, _user: Any) -> None:
        kind = LOG_LEVELS.get(level, str(level))
        chunk = (text or b"").decode("utf-8", "replace")
        if kind != "cont":
            partial[0] = kind
        partial[1] += chunk
        while "\n" in partial[1]:
            line, partial[1] = partial[1].split("\n", 1)
            if len(lines) < MAX_LOG_LINES:
                lines.append((partial[0], line))

    callback = C.llama_log_callback(on_log)
    C.llama_log_set(callback, ctypes.c_void_p(0))
    C.llama_backend_init()
    _state.update(C=C, callback=callback, lines=lines)  # the callback must outlive every call
    return C


def load(path: str) -> dict[str, Any]:
    """Load ``path`` vocab-only (again only when the file changed): what the parent needs to know of it, and
    llama.cpp's log lines of the load ``(level, text)``. ``ok`` is False when llama.cpp refused the file."""
    C = _bindings()
    st = os.stat(path)
    stamp = (st.st_size, st.st_mtime_ns)
    lines: list[tuple[str, str]] = _state["lines"]
    lines.clear()
    params = C.llama_model_default_params()
    params.vocab_only = True
    model = C.llama_model_load_from_file(path.encode(), params)
    log = list(lines)
    lines.clear()
    if not model:
        _models.pop(path, None)
        return {"ok": False, "log": log}
    old = _models.pop(path, None)
    if old is not None:
        C.llama_model_free(old[1])
    while len(_models) >= MAX_LOADED:  # the one used longest ago goes
        C.llama_model_free(_models.pop(next(iter(_models)))[1])
    vocab = C.llama_model_get_vocab(model)
    _models[path] = (stamp, model, vocab)
    n = int(C.llama_vocab_n_tokens(vocab))
    kind = int(C.llama_vocab_type(vocab))
    info: dict[str, Any] = {
        "ok": True,
        "log": log,
        "n_vocab": n,
        "vocab_type": kind,
        "add_bos": bool(C.llama_vocab_get_add_bos(vocab)),
        "add_eos": bool(C.llama_vocab_get_add_eos(vocab)),
        "special_ids": {
            name: int(getattr(C, f"llama_vocab_{name}")(vocab)) for name in ("bos", "eos", "eot", "sep", "nl", "pad")
        },
    }
    if kind == 1:  # only SPM spells characters with byte tokens (see LlamaCppBackend._spm_missing_bytes)
        texts = {C.llama_vocab_get_text(vocab, i) for i in range(n)}
        missing = [b for b in range(256) if f"<0x{b:02X}>".encode() not in texts and bytes([b]) not in texts]
        singles = [t.decode("utf-8") for t in texts if t and len(t) <= 4 and len(t.decode("utf-8", "replace")) == 1]
        info["spm_missing"], info["spm_singles"] = missing, sorted(singles) if missing else []
    return info


def _vocab(path: str) -> Any:
    """The loaded vocabulary of ``path`` (loaded now when this worker has not yet, or the file changed)."""
    st = os.stat(path)
    found = _models.pop(path, None)
    if found is None or found[0] != (st.st_size, st.st_mtime_ns):
        if found is not None:
            _models[path] = found  # load() frees it
        if not load(path)["ok"]:
            raise ValueError(f"llama.cpp cannot load {os.path.basename(path)}")
        found = _models[path]
    else:
        _models[path] = found  # used now: the most recent
    return found[2]


def tokenize(path: str, texts: list[str], add_special: bool) -> list[list[int]]:
    """``llama_tokenize(text, add_special, parse_special=True)`` for each text."""
    C, vocab = _bindings(), _vocab(path)
    out_ids: list[list[int]] = []
    buffer = (C.llama_token * 4096)()
    for text in texts:
        data = text.encode("utf-8")
        size = len(data) + 8
        for _ in range(2):
            if size > len(buffer):
                buffer = (C.llama_token * size)()
            n = C.llama_tokenize(vocab, data, len(data), buffer, len(buffer), add_special, True)
            if n >= 0:
                out_ids.append(buffer[:n])
                break
            size = -n
        else:
            raise RuntimeError(f"llama_tokenize kept asking for a larger buffer ({size} ids)")
    return out_ids


def detokenize(path: str, sequences: list[list[int]], skip_special_tokens: bool) -> list[bytes]:
    """``llama_detokenize(ids, remove_special=False, unparse_special=not skip)`` for each sequence (ids checked by
    the parent: every one is in the vocabulary)."""
    C, vocab = _bindings(), _vocab(path)
    out = []
    for ids in sequences:
        buf_ids = array("i", ids)
        tokens = (C.llama_token * len(buf_ids)).from_buffer(buf_ids) if buf_ids else (C.llama_token * 1)()
        size = 4 * len(ids) + 64
        for _ in range(2):
            buf = ctypes.create_string_buffer(size)
            n = C.llama_detokenize(vocab, tokens, len(ids), buf, size, False, not skip_special_tokens)
            if n >= 0:
                out.append(buf.raw[:n])
                break
            size = -n
        else:
            raise RuntimeError(f"llama_detokenize kept asking for a larger buffer ({size} bytes)")
    return out


def pieces(path: str, ids: list[int], special: bool) -> list[bytes]:
    """``llama_token_to_piece(id, lstrip=0, special)`` for each id."""
    C, vocab = _bindings(), _vocab(path)
    buf = ctypes.create_string_buffer(256)
    out = []
    for token_id in ids:
        n = C.llama_token_to_piece(vocab, token_id, buf, len(buf), 0, special)
        if n < 0:
            big = ctypes.create_string_buffer(-n)
            n = C.llama_token_to_piece(vocab, token_id, big, len(big), 0, special)
            out.append(big.raw[:n])
        else:
            out.append(buf.raw[:n])
    return out


def attrs(path: str, ids: list[int]) -> list[int]:
    """``llama_vocab_get_attr`` for each id."""
    C, vocab = _bindings(), _vocab(path)
    return [int(C.llama_vocab_get_attr(vocab, i)) for i in ids]


def eog(path: str, ids: list[int]) -> list[bool]:
    """``llama_vocab_is_eog`` for each id."""
    C, vocab = _bindings(), _vocab(path)
    return [bool(C.llama_vocab_is_eog(vocab, i)) for i in ids]
