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
checked by ``tests/backends/test_llamacpp.py`` in a child process). The backend raises :class:`LlamaCppAbort`
instead, which the unknown-id table reports (and refuses a text llama.cpp's SPM tokenizer would abort on).

Every llama.cpp call runs in a worker process (:mod:`tokaudit.worker`, the calls in
:mod:`tokaudit.backends.llamacpp_calls`): llama.cpp also aborts loading some malformed vocabularies (duplicate
token texts), aborts tokenizing others (a WordPiece vocabulary without ``[UNK]``), loops forever on an RWKV
vocabulary, and its abort handler writes to stdout. A worker that dies or runs past a limit is a
:class:`~tokaudit.worker.WorkerFailure` raised by the call, which the commands report as a backend crash; after
:data:`MAX_FAILURES` of them the backend gives up at once for the rest of the run. Calls are batched
(``encode_batch``, ``decode_batch``, ``pieces``) so that a round trip is paid per batch, not per text.

llama.cpp's load log (key/value dump, EOG list, warnings such as "missing pre-tokenizer type") goes
to a callback set with ``llama_log_set`` instead of stderr, and is kept with the backend.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from tokaudit.backends.base import BackendUnavailable
from tokaudit.model.llamacpp_vocab import clean_spaces
from tokaudit.worker import Limits, WorkerFailure, shared_worker

#: The worker's limits: with a vocabulary-only load of the largest real GGUFs (Gemma 4, 262k tokens; Llama 3) it
#: reaches ~330 MB of address space (~200 MB is the interpreter and llama.cpp's libraries); a batch of corpus
#: texts is tokenized in well under a second.
LIMITS = Limits(memory_bytes=1024**3, cpu_seconds=20, wall_seconds=20.0)
#: After this many worker deaths or limits, the backend raises at once instead of starting another worker.
MAX_FAILURES = 3
_CALLS = "tokaudit.backends.llamacpp_calls"
#: At most this many ids per round trip of the per-id calls (pieces, attributes).
_BATCH = 65536


class LlamaCppAbort(ValueError):
    """An id llama.cpp would abort the process on (``std::out_of_range``); it was not passed to llama.cpp."""


#: The longest the worker may take to load a GGUF's vocabulary for :func:`installed_loads` (a 250k-token
#: vocabulary loads in well under a second); a worker still loading then is stopped.
LOAD_CHECK_SECONDS = 30.0


def installed_loads(path: Path, timeout: float = LOAD_CHECK_SECONDS) -> bool | None:
    """Whether the installed llama.cpp (llama-cpp-python) loads this GGUF's vocabulary: a vocab-only load in the
    worker process, stopped after ``timeout`` seconds. None when llama-cpp-python is not installed or the
    worker did not answer in time; False when llama.cpp refuses the file or dies loading it."""
    if not _installed():
        return None
    try:
        return bool(shared_worker("llama.cpp", LIMITS).call(f"{_CALLS}:load", str(path), wall_seconds=timeout)["ok"])
    except WorkerFailure as exc:
        return None if exc.limit is not None else False
    except (OSError, ValueError, ImportError):
        return None


def version() -> str:
    from importlib.metadata import PackageNotFoundError, version as dist_version

    try:
        return dist_version("llama_cpp_python")
    except PackageNotFoundError:
        return "unknown"


def _installed() -> bool:
    from importlib.util import find_spec

    return find_spec("llama_cpp") is not None


class LlamaCppBackend:
    name = "llama.cpp"

    def __init__(self, path: Path, info: dict[str, Any]) -> None:
        self.path = path
        self._file = str(path)
        #: llama.cpp's log lines of this load: (level, text).
        self.log: list[tuple[str, str]] = [(str(level), str(text)) for level, text in info["log"]]
        self.n_vocab: int = info["n_vocab"]
        self.vocab_type: int = info["vocab_type"]
        self.add_bos: bool = info["add_bos"]
        self.add_eos: bool = info["add_eos"]
        self._special_ids: dict[str, int] = dict(info["special_ids"])
        self._spm_unsafe = (frozenset(info.get("spm_missing", ())), frozenset(info.get("spm_singles", ())))
        self._failures: list[str] = []
        self._lock = threading.Lock()
        #: llama_detokenize applies HF's clean_up_tokenization_spaces rules to this vocabulary (llama.cpp
        #: decides by vocabulary and pre-tokenizer type; one probe tells): then decode rewrites text by
        #: :func:`clean_spaces`, which compare reports apart from real decode differences.
        try:
            self.cleans_spaces = self.decode(self.encode("a ,")) == "a,"
        except (LlamaCppAbort, WorkerFailure):  # a vocabulary llama.cpp cannot encode that probe with
            self.cleans_spaces = False
        #: the rewrite compare's triage applies (see :func:`tokaudit.backends.base.decode_rewrite`)
        self.decode_rewrite = clean_spaces if self.cleans_spaces else None

    @classmethod
    def load(cls, path: Path) -> LlamaCppBackend:
        if not _installed():
            raise BackendUnavailable("llama-cpp-python is not installed (pip install 'tokaudit[llamacpp]')")
        try:
            info = shared_worker("llama.cpp", LIMITS).call(f"{_CALLS}:load", str(path))
        except WorkerFailure as exc:
            if exc.limit is not None:
                raise BackendUnavailable(
                    f"llama.cpp ran out of its {exc.limit} limit loading {path.name} ({exc.detail}); "
                    "tokaudit loaded it in a worker process, so only that one stopped"
                ) from None
            raise BackendUnavailable(
                f"llama.cpp aborts the process loading {path.name} ({exc.detail}); tokaudit loaded it "
                "in a worker process, so only that one died"
            ) from None
        except (OSError, ValueError, ImportError) as exc:  # the worker's own error: the library does not load
            raise BackendUnavailable(f"llama-cpp-python's library does not load: {exc}") from None
        if not info["ok"]:
            errors = [str(text).strip() for level, text in info["log"] if level == "error" and str(text).strip()]
            # the first specific line ("llama_model_load: error loading model: ..."), not the generic last one
            specific = [e for e in errors if "error loading model" in e] or errors
            why = specific[0] if specific else "no reason logged"
            raise BackendUnavailable(f"llama.cpp cannot load {path.name}: {why}")
        return cls(path, info)

    def _call(self, function: str, *args: Any) -> Any:
        """One call in the worker; after MAX_FAILURES deaths or limits, the last failure again without a call."""
        with self._lock:
            if len(self._failures) >= MAX_FAILURES:
                raise WorkerFailure(
                    function, None, f"gave up after {MAX_FAILURES} failures, the last: {self._failures[-1]}"
                )
        try:
            return shared_worker("llama.cpp", LIMITS).call(f"{_CALLS}:{function}", self._file, *args)
        except WorkerFailure as exc:
            with self._lock:
                self._failures.append(str(exc))
            raise

    # -- ids ---------------------------------------------------------------------------------------

    def _checked(self, ids: list[int]) -> list[int]:
        """The ids as a list, after checking each is a token id (llama.cpp aborts on any other)."""
        n = self.n_vocab
        if ids and (min(ids) < 0 or max(ids) >= n):  # C-level scans; the loop below only names the id
            bad = next(i for i in ids if not 0 <= i < n)
            raise LlamaCppAbort(
                f"id {bad} is outside llama.cpp's vocabulary (0..{n - 1}): llama.cpp aborts the process on it "
                "(std::out_of_range in token_to_piece, SIGABRT), so tokaudit did not pass it"
            )
        return list(ids)

    def _check_spm(self, text: str) -> None:
        """Refuse a text llama.cpp would abort encoding: for a SentencePiece vocabulary, a character that is not a
        token and has a byte neither ``<0xNN>`` nor the byte itself is a token of. llama.cpp's SPM tokenizer spells
        such a character with byte tokens, looked up with ``token_to_id.at``: a missing one throws
        ``std::out_of_range`` across the C API and aborts the process."""
        missing, singles = self._spm_unsafe
        # in text order (a set's order changes with the hash seed: the first character named must not)
        for ch in dict.fromkeys(text.replace(" ", "\u2581")):  # llama.cpp's SPM escapes spaces as "▁"
            if ch not in singles:
                lost = [b for b in ch.encode("utf-8") if b in missing]
                if lost:
                    raise LlamaCppAbort(
                        f"llama.cpp aborts encoding {ch!r}: it is not a token and the vocabulary has no byte token for "
                        f"0x{lost[0]:02X} (std::out_of_range in byte_to_token, SIGABRT), so tokaudit did not pass the "
                        "text"
                    )

    def _tokenize(self, texts: list[str], add_special: bool) -> list[list[int]]:
        if self._spm_unsafe[0]:
            for text in texts:
                self._check_spm(text)
        return self._call("tokenize", texts, add_special)

    def encode(self, text: str) -> list[int]:
        return self._tokenize([text], False)[0]

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        """One round trip for the batch (a text the SPM check refuses fails the batch: compare retries one by one)."""
        return self._tokenize(texts, False)

    def encode_prompt(self, text: str) -> list[int]:
        """As llama.cpp's server tokenizes a prompt: specials parsed, BOS/EOS/SEP per the GGUF's add flags."""
        return self._tokenize([text], True)[0]

    def decode_bytes(self, ids: list[int], skip_special_tokens: bool = False) -> bytes:
        return self._call("detokenize", [self._checked(ids)], skip_special_tokens)[0]

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return self.decode_bytes(ids, skip_special_tokens).decode("utf-8", "replace")

    def decode_batch(self, sequences: list[list[int]], skip_special_tokens: bool = False) -> list[str]:
        checked = [self._checked(ids) for ids in sequences]
        return [b.decode("utf-8", "replace") for b in self._call("detokenize", checked, skip_special_tokens)]

    def piece(self, token_id: int, special: bool = True) -> bytes:
        """``llama_token_to_piece(id, lstrip=0, special)``: the bytes llama.cpp's server appends for one id."""
        return self.pieces([token_id], special)[0]

    def pieces(self, ids: list[int], special: bool = True) -> list[bytes]:
        """:meth:`piece` of each id, a round trip per 65,536 ids."""
        checked = self._checked(ids)
        out: list[bytes] = []
        for lo in range(0, len(checked), _BATCH):
            out += self._call("pieces", checked[lo : lo + _BATCH], special)
        return out

    def attr(self, token_id: int) -> int:
        """``llama_vocab_get_attr``: the token's attributes after llama.cpp's load-time overrides."""
        return self.attrs([token_id])[0]

    def attrs(self, ids: list[int]) -> list[int]:
        """:meth:`attr` of each id, a round trip per 65,536 ids."""
        checked = self._checked(ids)
        out: list[int] = []
        for lo in range(0, len(checked), _BATCH):
            out += self._call("attrs", checked[lo : lo + _BATCH])
        return out

    def is_eog(self, token_id: int) -> bool:
        return self.eog_ids([token_id]) == [token_id]

    def eog_ids(self, ids: list[int]) -> list[int]:
        """The ids among ``ids`` that llama.cpp counts as end of generation (``llama_vocab_is_eog``)."""
        checked = self._checked(ids)
        out: list[int] = []
        for lo in range(0, len(checked), _BATCH):
            part = checked[lo : lo + _BATCH]
            out += [i for i, eog in zip(part, self._call("eog", part)) if eog]
        return out

    def special_ids(self) -> dict[str, int]:
        """llama.cpp's resolved special ids (after its per-model defaults), -1 where none."""
        return dict(self._special_ids)

    def warnings(self) -> list[str]:
        """llama.cpp's warning and error lines of this load."""
        return [text.strip() for level, text in self.log if level in ("warn", "error") and text.strip()]

    def load_warnings(self) -> list[str]:
        """The warnings worth reading: the "load: " prefix and the banner's rules and blank lines left out, once
        each."""
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
        warned = (
            f"; llama.cpp warns: {said[0]}" + (f" (+{len(said) - 1} more)" if len(said) > 1 else "") if said else ""
        )
        return (
            f"llama-cpp-python {version()}, vocab-only load of {self.path.name} ({self.n_vocab} tokens, {kind}){warned}"
        )

    def versions(self) -> dict[str, str]:
        return {"llama-cpp-python": version()}
