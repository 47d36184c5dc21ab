"""The backends, one row each: its name, its loader, its help line, the libraries it needs and whether it reads a
GGUF.

``--backends`` (compare, explain) and ``--backend`` (decode, encode) take their choices and help from this table,
:func:`tokaudit.backends.registry.load_backends` builds a backend by its row's loader, and
``tests/test_tooling.py`` loads every row on a model it applies to. A new backend is a ``<name>_backend.py`` module
and a row here. Light on purpose: the CLI reads it for ``--help``; a loader imports its library when it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tokaudit.backends.base import Backend
    from tokaudit.backends.inputs import LoadInputs


@dataclass(frozen=True)
class BackendKind:
    """One backend: ``--backends NAME``, built by ``load`` from what one ``load_backends`` call was given."""

    name: str
    load: Callable[[LoadInputs, str], Backend]
    #: One line: what it is (which serving stacks run it).
    help: str
    #: The libraries it needs (import names): one unavailable for lack of them was not checked.
    needs: tuple[str, ...] = ()
    #: It reads a GGUF file (the target's, or the one ``--gguf`` names).
    gguf: bool = False
    #: It only decodes (decode's ``--backend`` says so).
    decode_only: bool = False


def _tiktoken(inputs: LoadInputs, name: str) -> Backend:
    from tokaudit.backends.pattern import no_pattern_reason
    from tokaudit.backends.tiktoken_backend import TiktokenBackend

    return TiktokenBackend(
        inputs.ranks(), inputs.pattern, no_pattern_reason(inputs.model, inputs.pat_str), decode_only=inputs.decode_only
    )


def _hf(inputs: LoadInputs, name: str) -> Backend:
    from tokaudit.backends.hf_backend import HFBackend
    from tokaudit.backends.pattern import no_pattern_reason

    model = inputs.model
    a = model.artifacts
    if a.tokenizer_json is None and a.sentencepiece is not None and model.vocab_artifact == a.sentencepiece.name:
        from tokaudit.backends.sentencepiece_backend import tokenizer_from_sentencepiece

        return HFBackend(*tokenizer_from_sentencepiece(model))
    # the ranks are read only without a tokenizer.json (from_model's order)
    ranks = inputs.part(False) if a.tokenizer_json is None else inputs.vocab(False)
    return HFBackend.from_model(
        model, ranks, inputs.pattern, no_pattern_reason(model, inputs.pat_str), decode_only=inputs.decode_only
    )


def _sentencepiece(inputs: LoadInputs, name: str) -> Backend:
    from tokaudit.backends.sentencepiece_backend import SentencePieceBackend

    return SentencePieceBackend(inputs.model)


def _fastokens(inputs: LoadInputs, name: str) -> Backend:
    from tokaudit.backends.fastokens_backend import FastokensBackend

    return FastokensBackend.load(inputs.model)


def _reference(inputs: LoadInputs, name: str) -> Backend:
    from tokaudit.backends.reference import ReferenceBackend

    return ReferenceBackend(inputs.ranks(), inputs.pattern)


def _strict(inputs: LoadInputs, name: str) -> Backend:
    from tokaudit.backends.strict import StrictBackend

    return StrictBackend(inputs.model)


def _transformers(inputs: LoadInputs, name: str) -> Backend:
    from pathlib import Path

    from tokaudit.backends.base import BackendUnavailable
    from tokaudit.backends.transformers_backend import TransformersBackend

    if Path(inputs.model.target).is_file():
        raise BackendUnavailable("AutoTokenizer loads a directory; the target is a single file")
    return TransformersBackend.load(name, inputs.model.artifacts.root, inputs.trust_remote_code, inputs.auto_loads)


def _llamacpp(inputs: LoadInputs, name: str) -> Backend:
    path = inputs.gguf_path()  # no GGUF is the reason, before whether the library is installed
    from tokaudit.backends.llamacpp_backend import LlamaCppBackend

    return LlamaCppBackend.load(path)


def _transformers_gguf(inputs: LoadInputs, name: str) -> Backend:
    path = inputs.gguf_path()
    from tokaudit.backends.transformers_backend import TransformersBackend

    return TransformersBackend.load_gguf(path)


#: In display order (help texts, the default selection).
BACKENDS: dict[str, BackendKind] = {
    k.name: k
    for k in (
        BackendKind("tiktoken", _tiktoken, "a tiktoken Encoding from the ranks, the pattern and the special tokens"),
        BackendKind("hf", _hf, "HF tokenizers from tokenizer.json, or a byte-level BPE rebuilt from the ranks"),
        BackendKind(
            "sentencepiece",
            _sentencepiece,
            "the sentencepiece library on tokenizer.model (the slow path of Llama 2, Mistral, Gemma)",
        ),
        BackendKind("fastokens", _fastokens, "fastokens, Dynamo's fast encoder", needs=("fastokens",)),
        BackendKind("reference", _reference, "a small pure-Python byte-level BPE over the ranks, the slow oracle"),
        BackendKind(
            "strict",
            _strict,
            "decodes as a files-only gateway does (smg, tiktoken-rs): an unmapped id is an error",
            decode_only=True,
        ),
        BackendKind(
            "transformers-fast",
            _transformers,
            "transformers' AutoTokenizer (its Rust tokenizer)",
            needs=("transformers",),
        ),
        BackendKind(
            "transformers-slow", _transformers, "transformers' AutoTokenizer(use_fast=False)", needs=("transformers",)
        ),
        BackendKind(
            "llama.cpp",
            _llamacpp,
            "llama.cpp's tokenizer on the GGUF (llama-cpp-python, in the bounded worker)",
            needs=("llama_cpp",),
            gguf=True,
        ),
        BackendKind(
            "transformers-gguf",
            _transformers_gguf,
            "transformers' AutoTokenizer(gguf_file=...)",
            needs=("transformers", "torch"),
            gguf=True,
        ),
    )
}


def names_help(*, last: str = ", ", decode_only: bool = False) -> str:
    """The names for an option's help, in the table's order: ``tiktoken, hf, ..., transformers-gguf``; ``last`` joins
    the last one (``" or "`` for a choice of one); ``decode_only`` marks the backends that only decode."""
    names = [f"{k.name} (decode only)" if decode_only and k.decode_only else k.name for k in BACKENDS.values()]
    return ", ".join(names[:-1]) + last + names[-1]
