"""``decode`` / ``encode`` with token boundaries: the full text from one backend, and each token's
bytes from the id tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tokaudit.backends.base import call, can_encode
from tokaudit.backends.registry import LoadedBackend, load_backends
from tokaudit.errors import InputError
from tokaudit.ids import IdRanges
from tokaudit.model.text import TokenText
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.oncall.codes import BACKEND_CRASH
from tokaudit.oncall.shrink import Shrinker, failure_class
from tokaudit.oncall.tokens import in_declared_range, token_info, token_json
from tokaudit.report.finding import Finding, Severity
from tokaudit.report.report import TargetResult
from tokaudit.report.text import visible


def gateway_backend(model: TokenizerModel, encode: bool) -> str:
    """The engine a files-only gateway (smg, Dynamo) uses: tokenizers for tokenizer.json, else tiktoken
    for a rank file (``model.ranks``); hf for anything else. A GGUF alone is
    llama.cpp's: it encodes with llama.cpp, and decodes with ``strict`` (llama_detokenize emulated from the
    GGUF, so decoding needs no extra)."""
    a = model.artifacts
    if a.gguf_only:
        return "llama.cpp" if encode else "strict"
    if model.ranks is not None:
        return "tiktoken"
    return "hf"


def pick_backend(
    model: TokenizerModel,
    name: str | None,
    *,
    encode: bool,
    pat_str: str | None = None,
    ids: list[int] | None = None,
    text: str | None = None,
    gguf: Path | None = None,
) -> LoadedBackend:
    """The one backend decode / encode use; given the ``ids`` to decode or the ``text`` to encode, a backend
    rebuilt from ranks holds only the entries they read (the same answers; see :mod:`tokaudit.backends.subset`)."""
    chosen = name or gateway_backend(model, encode)
    # decoding never needs a pattern
    lb = load_backends(model, [chosen], pat_str, decode_only=not encode, for_ids=ids, for_text=text, gguf=gguf)[0]
    if lb.backend is None:
        if name:  # the user's choice does not fit the model (the reason names a file defect when there is one)
            raise InputError(f"backend {chosen} is unavailable for this model: {lb.unavailable}", key="--backend")
        # the default backend: the model's files made it unavailable, so name them, not an option never passed
        where = str(model.artifacts.root / model.vocab_artifact) if model.vocab_artifact else model.target
        raise InputError(f"the default backend {chosen} cannot load it: {lb.unavailable}", file=where)
    if encode and not can_encode(lb.backend):
        raise InputError(f"backend {chosen} only decodes", key="--backend")
    return lb


def _tokens(model: TokenizerModel, ids: list[int], skip_special_tokens: bool) -> list[dict[str, Any]]:
    """One row per id; the text of each is what it adds through the tokenizer's decoder at its place
    in the sequence (a skipped special token shows its own text)."""
    text = TokenText(model)
    pieces = text.pieces(ids, skip_special_tokens)
    out = []
    for i, piece in zip(ids, pieces):
        if piece == b"" and skip_special_tokens and text.is_special(i):
            piece = text.piece(i)
        row = token_json(token_info(model, i), piece)
        if row["profile"] == "files":
            row["special"] = text.is_special(i)  # BERT's [UNK] is a vocab.txt line yet special
        row["skipped"] = skip_special_tokens and row["special"] and row["profile"] == "files"
        out.append(row)
    return out


def decode_ids(
    model: TokenizerModel, lb: LoadedBackend, ids: list[int], skip_special_tokens: bool, source: str
) -> tuple[TargetResult, list[Finding]]:
    backend = lb.backend
    assert backend is not None
    outcome = call(backend.decode, list(ids), skip_special_tokens)
    findings: list[Finding] = []
    data: dict[str, Any] = {
        "backend": lb.name,
        "backend_detail": lb.detail,
        **({"backend_subset": lb.subset} if lb.subset else {}),
        "source": source,
        "skip_special_tokens": skip_special_tokens,
        "ids": list(ids),
        "text": outcome.value if outcome.ok else None,
        "error": None
        if outcome.ok
        else {"exception": outcome.error_type, "message": outcome.error, "panic": outcome.panic},
        "tokens": _tokens(model, ids, skip_special_tokens),
    }
    if not outcome.ok:
        findings.append(
            _crash(model, lb, ids, skip_special_tokens, failure_class(outcome) or "unknown", outcome.describe())
        )
    return TargetResult(model.target, data, source=model.source), findings


def _crash(model: TokenizerModel, lb: LoadedBackend, ids: list[int], skip: bool, cls: str, described: str) -> Finding:
    """backend-crash for a failed decode, naming the ids that fail on their own (ids of the sequence only:
    a backend built for these ids answers for them)."""
    shrinker = Shrinker(lambda x: lb.backend.decode(x, skip))  # type: ignore[union-attr]
    failing = sorted({i for i in set(ids) if failure_class(shrinker.outcome([i])) is not None})
    inside = [i for i in failing if in_declared_range(model, i)]
    severity = BACKEND_CRASH.severity if inside or not failing else Severity.NOTE
    culprits = f"; ids that fail alone: {IdRanges.from_ids(failing).describe()}" if failing else ""
    return Finding(
        BACKEND_CRASH.code,
        BACKEND_CRASH.name,
        severity,
        f"{lb.name} cannot decode these ids: {visible(described)}{culprits}"
        + (f" ({len(inside)} inside the declared range [0, {model.checked_size}))" if inside else ""),
        location=model.declared.source,
        ids=IdRanges.from_ids(failing) if failing else None,
        details={"backend": lb.name, "class": cls, "in_declared_range": inside},
        target=model.target,
    )


def encode_text(model: TokenizerModel, lb: LoadedBackend, text: str) -> tuple[TargetResult, list[Finding]]:
    backend = lb.backend
    assert backend is not None
    outcome = call(backend.encode, text)
    ids = list(outcome.value) if outcome.ok else []
    data = {
        "backend": lb.name,
        "backend_detail": lb.detail,
        **({"backend_subset": lb.subset} if lb.subset else {}),
        "text": text,
        "ids": ids,
        "error": None
        if outcome.ok
        else {"exception": outcome.error_type, "message": outcome.error, "panic": outcome.panic},
        "tokens": _tokens(model, ids, False),
    }
    prompt = getattr(backend, "encode_prompt", None)
    failed = [("this text", outcome)] if not outcome.ok else []
    if (
        prompt is not None and outcome.ok and lb.name == "llama.cpp"
    ):  # what llama.cpp's server sends the model for this prompt
        server = call(prompt, text)
        if server.ok:
            data["server_prompt_ids"] = list(server.value)
        else:  # the special tokens it adds (a WordPiece vocabulary without SEP: llama.cpp aborts)
            data["server_prompt_error"] = {
                "exception": server.error_type,
                "message": server.error,
                "panic": server.panic,
            }
            failed.append(("this text as its server's prompt (specials added)", server))
    findings = [
        Finding(
            BACKEND_CRASH.code,
            BACKEND_CRASH.name,
            BACKEND_CRASH.severity,
            f"{lb.name} cannot encode {what}: {visible(failure.describe())}",
            details={"backend": lb.name, "class": failure_class(failure)},
            target=model.target,
        )
        for what, failure in failed
    ]
    return TargetResult(model.target, data, source=model.source), findings
