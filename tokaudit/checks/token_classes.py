"""Token classes (TA401, TA402): tokens that are not text on their own, and tokens encoding never produces."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from tokaudit.records import Provenance
from tokaudit.artifacts.token_bytes import undecodable_ids
from tokaudit.checks.progress import advance
from tokaudit.checks.registry import rule
from tokaudit.ids import IdRanges
from tokaudit.model.id_table import Layer
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Finding, Severity
from tokaudit.report.text import token_text

_BATCH = 8192


#: ``partial_utf8_ids`` of the vocabulary last asked about (TA401 and TA402 ask about the same one).
_last_partial: tuple[Mapping[int, bytes] | None, list[int]] = (None, [])
#: What decides the undecodable ids of a file's vocabulary, besides the file: its parsers, the token bytes, the layer.
_PARTIAL_MODULES = (
    "tokaudit.artifacts.strict_json",
    "tokaudit.artifacts.tokenizer_json",
    "tokaudit.artifacts.tiktoken_ranks",
    "tokaudit.artifacts.token_bytes",
    "tokaudit.model.tokenizer_model",
    __name__,
)


def partial_utf8_ids(layer: Layer) -> list[int]:
    """Ids of a vocabulary layer whose bytes are not valid UTF-8 alone, in id order (:func:`undecodable_ids`).
    Computed once per vocabulary (the last one is remembered; a scan runs its rules model by model), and kept in
    the result cache under the hash of the file the layer was parsed from, when it has one: a bulk pass over a
    128k vocabulary (~50 ms on Llama 3) is then read back (~1 ms) by every later scan of the same file."""
    global _last_partial
    if _last_partial[0] is layer.tokens:
        return _last_partial[1]
    bad = _undecodable(layer)
    _last_partial = (layer.tokens, bad)
    return bad


def _undecodable(layer: Layer) -> list[int]:
    from tokaudit.result_cache import cache_dir, cache_key, conforms, load, store

    if layer.digest is None or cache_dir() is None:
        return undecodable_ids(layer.tokens)
    key = cache_key("undecodable-ids", {"file": layer.digest(), "layer": layer.rule}, _PARTIAL_MODULES)
    n = len(layer.tokens)
    hit = load(key, lambda v: conforms(v, [int]) and v == sorted(set(v)) and (not v or (v[0] >= 0 and v[-1] < n)))
    if hit is not None:
        return hit
    bad = undecodable_ids(layer.tokens)
    store(key, bad)
    return bad


@rule("TA401")
def partial_utf8_token(model: TokenizerModel) -> Iterator[Finding]:
    vocab = model.base.tokens
    bad = partial_utf8_ids(model.base)
    if not bad:
        return
    examples = [{"id": i, "bytes": token_text(vocab[i])} for i in bad[:8]]
    shown = ", ".join(f"{e['id']} = {e['bytes']}" for e in examples[:4])
    yield partial_utf8_token.finding(
        f"{len(bad)} of {len(vocab)} tokens are not valid UTF-8 on their own (e.g. {shown}). Decoding one alone gives "
        "U+FFFD, so a streaming detokenizer must hold their bytes until the character completes, and per-token "
        "logprob strings show replacement characters.",
        location=Provenance(model.vocab_artifact),
        ids=IdRanges.from_ids(bad),
        details={"examples": examples, "vocabulary": len(vocab)},
    )


def _encoder(model: TokenizerModel) -> tuple[str, Any] | str | None:
    """A batch encoder of plain text (no special-token matching) using the model's own algorithm; the reason
    (a string) when the model is byte-level but none can be built; None when the rule does not apply.

    It yields each text's ids lazily: a batch of 8192 id lists held at once set off the garbage collector
    (~10% of the rule's time), while a list dropped right after its comparison is freed by its refcount."""
    from tokaudit.backends.registry import load_backends

    a = model.artifacts
    if model.ranks is not None:
        loaded = load_backends(model, ["tiktoken"])[0]
        if loaded.backend is not None:
            enc = loaded.backend.encoding  # type: ignore[attr-defined]  # the backend loaded by the name "tiktoken" has it
            # a plain loop: encode_ordinary_batch's thread pool costs ~10x more than it saves on short texts
            return "tiktoken", lambda texts: map(enc.encode_ordinary, texts)
        return f"tiktoken: {loaded.unavailable}"
    if a.tokenizer_json is not None and a.tokenizer_json.scheme.value == "byte-level":
        loaded = load_backends(model, ["hf"])[0]
        if loaded.backend is not None:
            tok = loaded.backend.tokenizer  # type: ignore[attr-defined]  # the backend loaded by the name "hf" has it
            return "hf", lambda texts: (e.ids for e in tok.encode_batch(texts, add_special_tokens=False))
        return f"hf: {loaded.unavailable}"
    return None


@rule("TA402", deep=True)
def unreachable_token(model: TokenizerModel) -> Iterator[Finding]:
    found = _encoder(model)
    if found is None:
        return
    if isinstance(found, str):  # a deep rule that cannot run says so: never a silent pass
        yield unreachable_token.finding(
            f"not checked: no encoder of this model could be built ({found}), so which tokens are unreachable is "
            "unknown.",
            severity=Severity.NOTE,
            location=Provenance(model.vocab_artifact),
            details={"ran": False, "reason": found},
        )
        return
    name, encode = found
    vocab = model.base.tokens
    partial = set(partial_utf8_ids(model.base))
    # ids only (ints are not tracked by the garbage collector; 160k (id, bytes) tuples set off collections)
    items = sorted(i for i in vocab if i not in partial)
    single: dict[int, list[int]] = {}
    multi: dict[int, list[int]] = {}
    total = len(items)
    for k in range(0, total, _BATCH):
        chunk = items[k : k + _BATCH]
        for i, ids in zip(chunk, encode([vocab[i].decode("utf-8") for i in chunk])):
            if ids != [i]:
                (single if len(ids) == 1 else multi)[i] = list(ids)
        advance("unreachable-token", min(k + _BATCH, total), total)
    bad = sorted(single.keys() | multi.keys())
    if not bad:
        return
    examples = [
        {"id": i, "token": token_text(vocab[i]), "encodes_to": (single.get(i) or multi[i])[:8]} for i in bad[:10]
    ]
    shown = "; ".join(f'{e["id"]} "{e["token"]}" → {e["encodes_to"]}' for e in examples[:3])
    yield unreachable_token.finding(
        f"{len(bad)} tokens never come out of encoding their own text with the {name} encoder ({len(multi)} split into "
        f"several tokens, {len(single)} become another single token; e.g. {shown}). The model never saw them in "
        "training, so their embeddings are untrained; if sampled they produce garbage.",
        location=Provenance(model.vocab_artifact),
        ids=IdRanges.from_ids(bad),
        details={
            "encoder": name,
            "categories": {
                "unreachable_multi_token": len(multi),
                "unreachable_single_token": len(single),
                "undecodable_skipped": len(partial),
            },
            "checked": total,
            "examples": examples,
        },
    )
