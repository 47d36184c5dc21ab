"""``decode`` / ``encode`` with token boundaries: the full text from one backend, and each token's
bytes from the id tables."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokaudit.backends.base import call, can_encode
from tokaudit.backends.registry import LoadedBackend, load_backends
from tokaudit.errors import InputError
from tokaudit.ids import IdRanges
from tokaudit.model.text import TokenText
from tokaudit.model.tokenizer_model import FILES, TokenizerModel
from tokaudit.oncall.codes import BACKEND_CRASH
from tokaudit.oncall.shrink import Shrinker, failure_class
from tokaudit.oncall.records import CodecError
from tokaudit.oncall.tokens import TokenRow, in_declared_range, token_info, token_row
from tokaudit.report.finding import Finding, Severity
from tokaudit.report.text import visible

if TYPE_CHECKING:
    from rich.console import Console

    from tokaudit.report.policy import PolicyCounts


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


@dataclass(frozen=True)
class DecodeResult:
    """One target's decode (a :class:`tokaudit.report.report.CommandResult`): the backend's text, or its error,
    and a row per id."""

    target: str
    #: where the target's files came from (a :class:`tokaudit.source.resolve.Source`)
    source: Any
    backend: str
    backend_detail: str | None
    backend_subset: str | None
    #: where the ids came from: "<arguments>", "<stdin>" or the file
    ids_source: str
    skip_special_tokens: bool
    ids: tuple[int, ...]
    text: str | None
    error: CodecError | None
    tokens: tuple[TokenRow, ...]
    not_checked: tuple[str, ...] = ()
    policy: PolicyCounts | None = None
    rules: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "backend_detail": self.backend_detail,
            **({"backend_subset": self.backend_subset} if self.backend_subset else {}),
            "source": self.ids_source,
            "skip_special_tokens": self.skip_special_tokens,
            "ids": list(self.ids),
            "text": self.text,
            "error": None if self.error is None else self.error.to_json(),
            "tokens": [t.to_json() for t in self.tokens],
        }

    def rich(self, console: Console) -> None:
        from tokaudit.oncall.view import codec_view

        codec_view(
            console,
            self.backend,
            self.backend_detail,
            self.ids,
            self.text,
            self.error,
            self.tokens,
            decoded_from=(self.ids_source, self.skip_special_tokens),
        )


@dataclass(frozen=True)
class EncodeResult:
    """One target's encode (a :class:`tokaudit.report.report.CommandResult`): the ids, or the backend's error,
    a row per id and, for llama.cpp, what its server sends the model for this prompt."""

    target: str
    source: Any
    backend: str
    backend_detail: str | None
    backend_subset: str | None
    text: str
    ids: tuple[int, ...]
    error: CodecError | None
    tokens: tuple[TokenRow, ...]
    #: llama.cpp: the ids its server prompts with (BOS/EOS added per the GGUF's flags), or why it cannot
    server_prompt_ids: tuple[int, ...] | None = None
    server_prompt_error: CodecError | None = None
    not_checked: tuple[str, ...] = ()
    policy: PolicyCounts | None = None
    rules: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "backend": self.backend,
            "backend_detail": self.backend_detail,
            **({"backend_subset": self.backend_subset} if self.backend_subset else {}),
            "text": self.text,
            "ids": list(self.ids),
            "error": None if self.error is None else self.error.to_json(),
            "tokens": [t.to_json() for t in self.tokens],
        }
        if self.server_prompt_ids is not None:
            out["server_prompt_ids"] = list(self.server_prompt_ids)
        if self.server_prompt_error is not None:
            out["server_prompt_error"] = self.server_prompt_error.to_json()
        return out

    def rich(self, console: Console) -> None:
        from tokaudit.oncall.view import codec_view

        codec_view(
            console,
            self.backend,
            self.backend_detail,
            self.ids,
            self.text,
            self.error,
            self.tokens,
            server_prompt_ids=self.server_prompt_ids,
        )


def _tokens(model: TokenizerModel, ids: list[int], skip_special_tokens: bool) -> tuple[TokenRow, ...]:
    """One row per id; the text of each is what it adds through the tokenizer's decoder at its place
    in the sequence (a skipped special token shows its own text)."""
    text = TokenText(model)
    pieces = text.pieces(ids, skip_special_tokens)
    out = []
    for i, piece in zip(ids, pieces):
        if piece == b"" and skip_special_tokens and text.is_special(i):
            piece = text.piece(i)
        info = token_info(model, i)
        # BERT's [UNK] is a vocab.txt line yet special: the tokenizer's flag, where the files profile maps the id
        special = text.is_special(i) if info.lookups.get(FILES) is not None else None
        out.append(token_row(info, piece, special, skip_special_tokens))
    return tuple(out)


def decode_ids(
    model: TokenizerModel, lb: LoadedBackend, ids: list[int], skip_special_tokens: bool, source: str
) -> tuple[DecodeResult, list[Finding]]:
    backend = lb.backend
    assert backend is not None
    outcome = call(backend.decode, list(ids), skip_special_tokens)
    findings: list[Finding] = []
    result = DecodeResult(
        model.target,
        model.source,
        backend=lb.name,
        backend_detail=lb.detail,
        backend_subset=lb.subset,
        ids_source=source,
        skip_special_tokens=skip_special_tokens,
        ids=tuple(ids),
        text=outcome.value if outcome.ok else None,
        error=CodecError.of(outcome),
        tokens=_tokens(model, ids, skip_special_tokens),
    )
    if not outcome.ok:
        findings.append(
            _crash(model, lb, ids, skip_special_tokens, failure_class(outcome) or "unknown", outcome.describe())
        )
    return result, findings


def _crash(model: TokenizerModel, lb: LoadedBackend, ids: list[int], skip: bool, cls: str, described: str) -> Finding:
    """backend-crash for a failed decode, naming the ids that fail on their own (ids of the sequence only:
    a backend built for these ids answers for them)."""
    shrinker = Shrinker(lambda x: lb.backend.decode(x, skip))  # type: ignore[union-attr]  # a loaded backend
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


def encode_text(model: TokenizerModel, lb: LoadedBackend, text: str) -> tuple[EncodeResult, list[Finding]]:
    backend = lb.backend
    assert backend is not None
    outcome = call(backend.encode, text)
    ids = list(outcome.value) if outcome.ok else []
    server_ids: tuple[int, ...] | None = None
    server_error: CodecError | None = None
    prompt = getattr(backend, "encode_prompt", None)
    failed = [("this text", outcome)] if not outcome.ok else []
    if (
        prompt is not None and outcome.ok and lb.name == "llama.cpp"
    ):  # what llama.cpp's server sends the model for this prompt
        server = call(prompt, text)
        if server.ok:
            server_ids = tuple(server.value)
        else:  # the special tokens it adds (a WordPiece vocabulary without SEP: llama.cpp aborts)
            server_error = CodecError.of(server)
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
    result = EncodeResult(
        model.target,
        model.source,
        backend=lb.name,
        backend_detail=lb.detail,
        backend_subset=lb.subset,
        text=text,
        ids=tuple(ids),
        error=CodecError.of(outcome),
        tokens=_tokens(model, ids, False),
        server_prompt_ids=server_ids,
        server_prompt_error=server_error,
    )
    return result, findings
