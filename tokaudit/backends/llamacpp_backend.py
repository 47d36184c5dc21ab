"""``llama.cpp``: llama.cpp's own tokenizer, through llama-cpp-python's low-level bindings.

Only with the ``llamacpp`` extra (llama-cpp-python, which compiles llama.cpp on install). The GGUF is
loaded vocab-only (``llama_model_load_from_file`` with ``vocab_only``: no tensors, no context), and
only the C functions are called, never ``Llama.tokenize`` / ``detokenize``: their ``add_bos`` means
"add every special" and their detokenize drops pieces longer than 32 bytes.

* ``encode`` is ``llama_tokenize(add_special=False, parse_special=True)``: special-token strings in
  the text become their ids, nothing is added (what every backend's ``encode`` means, so that parity
  compares tokenization). ``encode_prompt`` is what llama.cpp's server does with a prompt
  (``tokenize_input_prompts(..., add_special=true, parse_special=true)``): BOS/EOS/SEP per the
  GGUF's add flags as well.
* ``decode`` is ``llama_detokenize(remove_special=False, unparse_special=not skip_special_tokens)``:
  CONTROL and UNKNOWN tokens render only when specials are kept; llama.cpp's own space cleanup and
  leading-space removal apply.
* ``piece`` is ``llama_token_to_piece`` (what the server streams, one id at a time).

An id outside ``0..n_vocab-1`` is never passed to llama.cpp: there ``token_to_piece`` reads
``id_to_token.at(id)``, the ``std::out_of_range`` crosses the C API and the process aborts (SIGABRT;
checked by ``tests/test_llamacpp.py`` in a child process). The backend raises :class:`LlamaCppAbort`
instead, which the unknown-id table reports. llama.cpp also aborts loading some malformed vocabularies
(duplicate token texts), so each GGUF is loaded in a forked child first (:func:`_probe_load`).

llama.cpp's load log (key/value dump, EOG list, warnings such as "missing pre-tokenizer type") goes
to a callback set with ``llama_log_set`` instead of stderr, and is kept with the backend.
"""

from __future__ import annotations

import ctypes
import re
import threading
from array import array
from pathlib import Path
from typing import Any

from tokaudit.backends.base import BackendUnavailable
from tokaudit.model.llamacpp_vocab import clean_spaces

#: ggml's ``ggml_log_level`` values (ggml.h; llama-cpp-python's own _logger.py has an older order).
LOG_LEVELS = {0: "none", 1: "debug", 2: "info", 3: "warn", 4: "error", 5: "cont"}
#: At most this many log lines are kept per load (a 250k-token vocabulary logs ~100 lines).
MAX_LOG_LINES = 2000

_lock = threading.Lock()
_state: dict[str, Any] = {}


class LlamaCppAbort(ValueError):
    """An id llama.cpp would abort the process on (``std::out_of_range``); it was not passed to llama.cpp."""


def _bindings() -> Any:
    """llama-cpp-python's ctypes module, imported once, with tokaudit's log callback installed."""
    with _lock:
        if "C" in _state:
            return _state["C"]
        try:
            import llama_cpp  # noqa: F401 - the package import loads the shared library
            from llama_cpp import llama_cpp as C
        except ImportError:
            raise BackendUnavailable("llama-cpp-python is not installed (pip install 'tokaudit[llamacpp]')") from None
        except OSError as exc:  # the compiled library is missing or does not load
            raise BackendUnavailable(f"llama-cpp-python's library does not load: {exc}") from None
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


def _params(C: Any) -> Any:
    params = C.llama_model_default_params()
    params.vocab_only = True
    return params


#: (path, size, mtime) -> what the probe found (None: the load does not abort)
_probed: dict[tuple[str, int, int], str | None] = {}
#: At most this much of a dying child's stderr is read.
MAX_PROBE_STDERR = 64 * 1024


def _probe_load(C: Any, path: Path) -> str | None:
    """Load the GGUF in a forked child first: llama.cpp aborts the whole process on some malformed
    vocabularies (``GGML_ASSERT`` on duplicate token texts, for one) instead of failing the load. Returns
    how the child died (the signal and llama.cpp's last stderr line), or None when the load returned.
    Once per file (path, size, mtime) per process; where ``fork`` does not exist the load is not isolated."""
    import os
    import signal

    try:
        st = path.stat()
    except OSError:
        return None  # llama.cpp's own load reports it
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key in _probed:
        return _probed[key]
    if not hasattr(os, "fork"):
        return None
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: load, exit without cleanup; stderr (an abort's message) goes to the pipe
        try:
            import faulthandler

            faulthandler.disable()  # the abort is the answer, not a crash to dump (pytest enables it)
            os.close(read_end)
            os.dup2(write_end, 2)
            os.environ["GGML_NO_BACKTRACE"] = "1"  # ggml would run gdb for a backtrace
            model = C.llama_model_load_from_file(str(path).encode(), _params(C))
            os._exit(0 if model else 1)
        finally:
            os._exit(2)
    os.close(write_end)
    chunks, size = [], 0
    with os.fdopen(read_end, "rb") as pipe:
        while block := pipe.read(4096):
            if size < MAX_PROBE_STDERR:
                chunks.append(block)
            size += len(block)
    _, status = os.waitpid(pid, 0)
    found = None
    if os.WIFSIGNALED(status):
        lines = [line.strip() for line in b"".join(chunks).decode("utf-8", "replace").splitlines() if line.strip()]
        last = re.sub(r"\S*/([^/\s]+\.(?:cpp|c|h):\d+)", r"\1", lines[-1])[:300] if lines else ""  # the build path: its file name
        found = signal.Signals(os.WTERMSIG(status)).name + (f": {last}" if last else "")
    _probed[key] = found
    return found


#: The longest a child may take to load a GGUF's vocabulary for :func:`installed_loads` (a 250k-token vocabulary
#: loads in well under a second); a child still running then is killed.
LOAD_CHECK_SECONDS = 30.0


def installed_loads(path: Path, timeout: float = LOAD_CHECK_SECONDS) -> bool | None:
    """Whether the installed llama.cpp (llama-cpp-python) loads this GGUF's vocabulary: a vocab-only load in a
    forked child, killed after ``timeout`` seconds. None when llama-cpp-python is not installed, there is no
    ``fork``, or the child did not answer in time."""
    import os
    import signal
    import time

    try:
        C = _bindings()
    except BackendUnavailable:
        return None
    if not hasattr(os, "fork"):
        return None
    pid = os.fork()
    if pid == 0:  # the child: load, exit 0 when a model came back; llama.cpp's log stays in the child
        try:
            import faulthandler

            faulthandler.disable()
            os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
            os.environ["GGML_NO_BACKTRACE"] = "1"
            os._exit(0 if C.llama_model_load_from_file(str(path).encode(), _params(C)) else 1)
        finally:
            os._exit(2)
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.01)


def version() -> str:
    from importlib.metadata import PackageNotFoundError, version as dist_version

    try:
        return dist_version("llama_cpp_python")
    except PackageNotFoundError:
        return "unknown"


class LlamaCppBackend:
    name = "llama.cpp"

    def __init__(self, C: Any, model: Any, path: Path, log: list[tuple[str, str]]) -> None:
        self._C = C
        self._model = model
        self._vocab = C.llama_model_get_vocab(model)
        self.path = path
        #: llama.cpp's log lines of this load: (level, text).
        self.log = log
        self.n_vocab = int(C.llama_vocab_n_tokens(self._vocab))
        self.vocab_type = int(C.llama_vocab_type(self._vocab))
        self.add_bos = bool(C.llama_vocab_get_add_bos(self._vocab))
        self.add_eos = bool(C.llama_vocab_get_add_eos(self._vocab))
        self._piece_buffer = ctypes.create_string_buffer(256)
        self._ids_buffer = (C.llama_token * 4096)()
        self._buffer_lock = threading.Lock()
        #: llama_detokenize applies HF's clean_up_tokenization_spaces rules to this vocabulary (llama.cpp
        #: decides by vocabulary and pre-tokenizer type; one probe tells): then decode rewrites text by
        #: :func:`clean_spaces`, which compare reports apart from real decode differences.
        self._spm_unsafe = self._spm_missing_bytes()
        try:
            self.cleans_spaces = self.decode(self.encode("a ,")) == "a,"
        except LlamaCppAbort:  # a vocabulary llama.cpp cannot encode that probe with
            self.cleans_spaces = False
        #: the rewrite compare's triage applies (see :func:`tokaudit.backends.base.decode_rewrite`)
        self.decode_rewrite = clean_spaces if self.cleans_spaces else None

    @classmethod
    def load(cls, path: Path) -> LlamaCppBackend:
        C = _bindings()
        died = _probe_load(C, path)
        if died is not None:
            raise BackendUnavailable(f"llama.cpp aborts the process loading {path.name} ({died}); tokaudit loaded it in a "
                                     "child process first, so only that one died")
        with _lock:
            lines: list[tuple[str, str]] = _state["lines"]
            lines.clear()
            model = C.llama_model_load_from_file(str(path).encode(), _params(C))
            log = list(lines)
            lines.clear()
        if not model:
            errors = [text.strip() for level, text in log if level == "error" and text.strip()]
            # the first specific line ("llama_model_load: error loading model: ..."), not the generic last one
            specific = [e for e in errors if "error loading model" in e] or errors
            why = specific[0] if specific else "no reason logged"
            raise BackendUnavailable(f"llama.cpp cannot load {path.name}: {why}")
        backend = cls(C, model, path, log)
        import weakref

        weakref.finalize(backend, C.llama_model_free, model)
        return backend

    # -- ids ---------------------------------------------------------------------------------------

    def _checked(self, ids: list[int]) -> Any:
        """The ids as a C array, after checking each is a token id (llama.cpp aborts on any other)."""
        n = self.n_vocab
        if ids and (min(ids) < 0 or max(ids) >= n):  # C-level scans; the loop below only names the id
            bad = next(i for i in ids if not 0 <= i < n)
            raise LlamaCppAbort(
                f"id {bad} is outside llama.cpp's vocabulary (0..{n - 1}): llama.cpp aborts the process on it "
                "(std::out_of_range in token_to_piece, SIGABRT), so tokaudit did not pass it"
            )
        buf = array("i", ids)
        return (self._C.llama_token * len(buf)).from_buffer(buf) if buf else (self._C.llama_token * 1)()

    def _spm_missing_bytes(self) -> tuple[frozenset[int], frozenset[str]]:
        """For a SentencePiece vocabulary: the bytes llama.cpp has no token for (neither ``<0xNN>`` nor the
        byte itself), and the one-character tokens. llama.cpp's SPM tokenizer spells a character that is not
        a token with byte tokens, looked up with ``token_to_id.at``: a missing one throws
        ``std::out_of_range`` across the C API and aborts the process."""
        if self.vocab_type != 1:  # only SPM spells characters with byte_to_token
            return frozenset(), frozenset()
        C, v = self._C, self._vocab
        texts = {C.llama_vocab_get_text(v, i) for i in range(self.n_vocab)}
        missing = frozenset(b for b in range(256) if f"<0x{b:02X}>".encode() not in texts and bytes([b]) not in texts)
        if not missing:
            return missing, frozenset()
        singles = frozenset(t.decode("utf-8") for t in texts if t and len(t) <= 4 and len(t.decode("utf-8", "replace")) == 1)
        return missing, singles

    def _check_spm(self, text: str) -> None:
        """Refuse a text llama.cpp would abort encoding (see :meth:`_spm_missing_bytes`)."""
        missing, singles = self._spm_unsafe
        for ch in set(text.replace(" ", "\u2581")):  # llama.cpp's SPM escapes spaces as "▁"
            if ch not in singles:
                lost = [b for b in ch.encode("utf-8") if b in missing]
                if lost:
                    raise LlamaCppAbort(
                        f"llama.cpp aborts encoding {ch!r}: it is not a token and the vocabulary has no byte token for "
                        f"0x{lost[0]:02X} (std::out_of_range in byte_to_token, SIGABRT), so tokaudit did not pass the text")

    def _tokenize(self, text: str, add_special: bool) -> list[int]:
        C = self._C
        if self._spm_unsafe[0]:
            self._check_spm(text)
        data = text.encode("utf-8")
        size = len(data) + 8
        with self._buffer_lock:  # one output buffer, grown when a text needs more (not re-allocated per call)
            for _ in range(2):
                if size > len(self._ids_buffer):
                    self._ids_buffer = (C.llama_token * size)()
                out = self._ids_buffer
                n = C.llama_tokenize(self._vocab, data, len(data), out, len(out), add_special, True)
                if n >= 0:
                    return out[:n]  # type: ignore[no-any-return]
                size = -n
        raise RuntimeError(f"llama_tokenize kept asking for a larger buffer ({size} ids)")

    def encode(self, text: str) -> list[int]:
        return self._tokenize(text, False)

    def encode_prompt(self, text: str) -> list[int]:
        """As llama.cpp's server tokenizes a prompt: specials parsed, BOS/EOS/SEP per the GGUF's add flags."""
        return self._tokenize(text, True)

    def decode_bytes(self, ids: list[int], skip_special_tokens: bool = False) -> bytes:
        C = self._C
        tokens = self._checked(ids)
        size = 4 * len(ids) + 64
        for _ in range(2):
            buf = ctypes.create_string_buffer(size)
            n = C.llama_detokenize(self._vocab, tokens, len(ids), buf, size, False, not skip_special_tokens)
            if n >= 0:
                return buf.raw[:n]
            size = -n
        raise RuntimeError(f"llama_detokenize kept asking for a larger buffer ({size} bytes)")

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return self.decode_bytes(ids, skip_special_tokens).decode("utf-8", "replace")

    def piece(self, token_id: int, special: bool = True) -> bytes:
        """``llama_token_to_piece(id, lstrip=0, special)``: the bytes llama.cpp's server appends for one id."""
        C = self._C
        self._checked([token_id])
        buf = self._piece_buffer
        n = C.llama_token_to_piece(self._vocab, token_id, buf, len(buf), 0, special)
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = C.llama_token_to_piece(self._vocab, token_id, buf, len(buf), 0, special)
        return buf.raw[:n]

    def attr(self, token_id: int) -> int:
        """``llama_vocab_get_attr``: the token's attributes after llama.cpp's load-time overrides."""
        self._checked([token_id])
        return int(self._C.llama_vocab_get_attr(self._vocab, token_id))

    def is_eog(self, token_id: int) -> bool:
        self._checked([token_id])
        return bool(self._C.llama_vocab_is_eog(self._vocab, token_id))

    def special_ids(self) -> dict[str, int]:
        """llama.cpp's resolved special ids (after its per-model defaults), -1 where none."""
        C, v = self._C, self._vocab
        names = ("bos", "eos", "eot", "sep", "nl", "pad")
        return {name: int(getattr(C, f"llama_vocab_{name}")(v)) for name in names}

    def warnings(self) -> list[str]:
        """llama.cpp's warning and error lines of this load."""
        return [text.strip() for level, text in self.log if level in ("warn", "error") and text.strip()]

    def load_warnings(self) -> list[str]:
        """The warnings worth reading: the "load: " prefix and the banner's rules and blank lines left out, once each."""
        out: dict[str, None] = {}
        for line in self.warnings():
            text = line.split(":", 1)[1].strip() if line.startswith(("load:", "llama_model_loader:")) else line
            if text.strip("* "):
                out.setdefault(" ".join(text.split()), None)
        return list(out)

    def describe(self) -> str:
        kinds = {1: "SPM", 2: "BPE", 3: "WPM", 4: "UGM", 5: "RWKV", 6: "PLAMO2"}
        kind = kinds.get(self.vocab_type, str(self.vocab_type))
        said = self.load_warnings()
        warned = f"; llama.cpp warns: {said[0]}" + (f" (+{len(said) - 1} more)" if len(said) > 1 else "") if said else ""
        return f"llama-cpp-python {version()}, vocab-only load of {self.path.name} ({self.n_vocab} tokens, {kind}){warned}"

    def versions(self) -> dict[str, str]:
        return {"llama-cpp-python": version()}
