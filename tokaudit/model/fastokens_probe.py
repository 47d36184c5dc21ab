"""Can Dynamo's optional fast encoder (fastokens) load this tokenizer.json?

Dynamo's ``--dyn-tokenizer-backend fastokens`` (``DYN_TOKENIZER_BACKEND=fastokens``) encodes with
fastokens and decodes with HF tokenizers; when fastokens cannot load the file it falls back to HF
without saying so. The only way to know is to try: the answer is fastokens' own error message.
Trying costs a full load (seconds of CPU on a 200k vocabulary: 1.6 s for Qwen3, 4.9 s for Gemma 3
on the build machine), so a quick scan only loads the file's configuration (model type and options,
normalizer, pre-tokenizer, decoder, post-processor, added tokens) with the vocabulary cut to its first
512 entries and no merges: that is where fastokens' refusals of whole tokenizer families come from
(BertNormalizer, Metaspace, ...), in milliseconds. A refusal that depends on the vocabulary itself
(GPT-4o's "unsupported model type: Other") needs the full load of ``scan --deep`` (TA306) or
``compare``, which share one load per file version.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from importlib.util import find_spec
from itertools import islice
from pathlib import Path
from threading import Lock
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tokaudit.artifacts.tokenizer_json import TokenizerJson

#: How Dynamo selects the hybrid encoder.
DYNAMO_FLAG = "--dyn-tokenizer-backend fastokens"


@dataclass(frozen=True)
class FastokensProbe:
    """Whether fastokens loads a tokenizer.json, and its own error when it does not."""

    #: False when the fastokens package is not installed (nothing was checked).
    installed: bool
    #: fastokens' own words when it refuses the file, else None.
    error: str | None
    version: str | None = None
    tokenizer: Any = None
    load_seconds: float = 0.0

    @property
    def loads(self) -> bool:
        return self.installed and self.error is None


_lock = Lock()
_cache: dict[tuple[str, int, int], FastokensProbe] = {}
#: Probes kept (a probe holds the loaded tokenizer: ~100 MB for a 262k vocabulary).
MAX_KEPT = 2


def installed() -> bool:
    return find_spec("fastokens") is not None


def _version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fastokens")
    except PackageNotFoundError:
        return None


def _key(path: Path) -> tuple[str, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return str(path.resolve()), st.st_mtime_ns, st.st_size


def cached_probe(path: Path) -> FastokensProbe | None:
    """The result of an earlier :func:`probe_fastokens` on this file version, without loading."""
    key = _key(path)
    with _lock:
        return _cache.get(key) if key else None


def probe_fastokens(path: Path) -> FastokensProbe:
    """Try ``fastokens.Tokenizer.from_file`` (once per file version; the result is kept)."""
    import time

    key = _key(path)
    if key is None:
        return FastokensProbe(True, f"cannot read {path.name}")
    with _lock:
        hit = _cache.get(key)
    if hit is not None:
        return hit
    try:
        import fastokens
    except ImportError:
        return FastokensProbe(False, None)
    start = time.perf_counter()
    try:
        tok = fastokens.Tokenizer.from_file(str(path))
        result = FastokensProbe(True, None, _version(), tok, time.perf_counter() - start)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - any refusal, Rust panics included, is the answer
        first = (str(exc).strip().splitlines() or [""])[0][:300] or type(exc).__name__
        result = FastokensProbe(True, first, _version(), None, time.perf_counter() - start)
    with _lock:
        while len(_cache) >= MAX_KEPT:  # a loaded tokenizer is big: a fleet keeps the last files' only
            _cache.pop(next(iter(_cache)))
        _cache[key] = result
    return result


#: Vocabulary entries kept by the configuration probe.
CONFIG_PROBE_VOCAB = 512


def config_refusal(raw: dict[str, Any], file_digest: str | None = None) -> str | None:
    """fastokens' own error when it refuses tokenizer.json's configuration (``raw``: the parsed file)
    with the vocabulary cut short and no merges; None when it accepts it (or is not installed).

    The answer is a pure function of the probe text and fastokens' version, kept in the result cache: under
    ``file_digest`` (the file's content hash) when given, which a later scan of the same file looks up before
    it builds the probe; else under the probe's own hash."""
    if not installed():
        return None
    from tokaudit.result_cache import cache_key, digest, installed_version, load, store

    def key_of(inputs: dict[str, Any]) -> str:
        return cache_key("fastokens-config", {**inputs, "version": installed_version("fastokens")}, (__name__,))

    key = key_of({"file": file_digest}) if file_digest is not None else None
    if key is not None and (hit := _stored_refusal(load(key, _refusal_entry))) is not None:
        return hit[0]
    probe = _probe_text(raw)
    if key is None:
        key = key_of({"config": digest(probe.encode("utf-8", "surrogatepass"))})
        if (hit := _stored_refusal(load(key, _refusal_entry))) is not None:
            return hit[0]
    try:
        import fastokens
    except ImportError:
        return None

    refusal: str | None = None
    try:
        fastokens.Tokenizer.from_json_str(probe)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - the refusal is the answer
        refusal = (str(exc).strip().splitlines() or [""])[0][:300] or type(exc).__name__
    store(key, {"refusal": refusal})
    return refusal


def _stored_refusal(entry: Any) -> tuple[str | None] | None:
    """A cache entry's refusal in a 1-tuple (the refusal itself may be None); None when it holds none."""
    return None if entry is None else (entry["refusal"],)


def _refusal_entry(value: Any) -> bool:
    """What a cached answer is: a refusal of at most 300 characters, or none."""
    from tokaudit.result_cache import conforms

    return conforms(value, {"refusal": {str, None}}) and len(value["refusal"] or "") <= 300


def _probe_text(raw: dict[str, Any]) -> str:
    """tokenizer.json (``raw``) with its vocabulary cut to the first CONFIG_PROBE_VOCAB ids and no merges."""
    import json

    model = dict(raw.get("model") or {})
    vocab = model.get("vocab")
    if isinstance(vocab, dict):
        kept = _first_entries(vocab)
        unk = model.get("unk_token")
        if isinstance(unk, str) and unk in vocab:
            kept[unk] = vocab[unk]
        model["vocab"] = kept
    elif isinstance(vocab, list):
        model["vocab"] = vocab[:CONFIG_PROBE_VOCAB]
    if "merges" in model:
        model["merges"] = []
    return json.dumps({**raw, "model": model})


def _first_entries(vocab: dict[str, Any]) -> dict[str, Any]:
    """The entries of ``vocab`` (token -> id) with an integer id below CONFIG_PROBE_VOCAB, in file order; a
    prefix of the file when every id is an integer and they ascend (real files), found without a loop."""
    ids = list(vocab.values())
    if set(map(type, ids)) == {int} and ids == sorted(ids):
        return dict(islice(vocab.items(), bisect_left(ids, CONFIG_PROBE_VOCAB)))
    return {t: i for t, i in vocab.items() if isinstance(i, int) and i < CONFIG_PROBE_VOCAB}


def fallback_message(probe: FastokensProbe, file: str) -> str:
    """TA306's words for a file fastokens refuses (``probe.error`` set): what Dynamo does instead."""
    return (
        f"Dynamo with {DYNAMO_FLAG} (DYN_TOKENIZER_BACKEND=fastokens) cannot use fastokens for this model: fastokens "
        f"{probe.version or ''} refuses {file} ({probe.error}). Dynamo then falls back to HF tokenizers without saying "
        "so: the flag does nothing, and the encode speed-up it was turned on for never happens."
    ).replace("  ", " ")


def fallback_details(probe: FastokensProbe) -> dict[str, Any]:
    return {
        "gateway": "Dynamo",
        "flag": DYNAMO_FLAG,
        "backend": "fastokens",
        "version": probe.version,
        "error": probe.error,
        "falls_back_to": "HF tokenizers",
    }


def dynamo_fastokens_encoder(tj: TokenizerJson) -> str:
    """What Dynamo encodes with under ``--dyn-tokenizer-backend fastokens``: from a full load when one
    was done (deep scan, compare), else from the configuration probe of the file."""
    if not installed():
        return "not checked (fastokens is not installed: pip install 'tokaudit[fastokens]')"
    found = cached_probe(tj.path)
    if found is not None:
        if found.error is None:
            return "fastokens encodes, HF tokenizers decodes"
        return f"fastokens cannot load it ({found.error}) → falls back to HF"
    refusal = config_refusal(tj.raw, tj.digest)
    if refusal is not None:
        return f"fastokens cannot load it ({refusal}) → falls back to HF"
    return "fastokens accepts its configuration; the full file is loaded only by scan --deep or compare"
