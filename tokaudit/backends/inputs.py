"""What one :func:`tokaudit.backends.registry.load_backends` call hands each row's loader (backends/kinds.py):
the model, the options, the byte vocabulary built once, and the GGUF the GGUF backends load. Apart from the
registry so that the table of backends and the registry that reads it do not import each other."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from tokaudit.artifacts.gguf import gguf_in
from tokaudit.backends.base import BackendUnavailable
from tokaudit.backends.pattern import Pattern
from tokaudit.backends.transformers_backend import AutoLoads
from tokaudit.backends.vocab import ByteVocab, byte_vocab
from tokaudit.model.tokenizer_model import TokenizerModel

NO_GGUF = "needs a GGUF file (a .gguf target, a directory holding one, or --gguf FILE)"


def no_gguf_reason(model: TokenizerModel) -> str:
    """Why a model has no GGUF for the GGUF backends: none at all, or several beside the HF files."""
    several = gguf_in(model.artifacts.root)[1] if model.artifacts.root.is_dir() else None
    return f"{several}: name one with --gguf" if several else NO_GGUF


def gguf_file(model: TokenizerModel, override: Path | None = None) -> Path | None:
    """The GGUF the GGUF backends load: ``--gguf FILE`` when given, else the target's own GGUF (a GGUF
    target), else the one GGUF in the target directory beside the HF files."""
    if override is not None:
        return override
    record = getattr(model.artifacts, "gguf", None)
    if record is not None and getattr(record, "path", None) is not None:
        return record.path
    root = model.artifacts.root
    return gguf_in(root)[0] if root.is_dir() else None


class LoadInputs:
    """What one :func:`load_backends` call was given, and what its backends share: the byte vocabulary, built once
    (and cut down to what ``for_ids`` / ``for_text`` read when one is given). A row's loader reads it."""

    def __init__(
        self,
        model: TokenizerModel,
        pat_str: str | None,
        pattern: Pattern | None,
        decode_only: bool,
        trust_remote_code: bool,
        for_ids: Collection[int] | None,
        for_text: str | None,
        gguf: Path | None,
    ) -> None:
        self.model = model
        self.pat_str = pat_str
        self.pattern = pattern
        self.decode_only = decode_only
        self.trust_remote_code = trust_remote_code
        self.for_ids = for_ids
        self.for_text = for_text
        self.gguf = gguf
        self._vocab: dict[str, ByteVocab | None] = {}
        #: the subset of the vocabulary the backends rebuilt from ranks were built from, once one was made
        self.subset: Any = None
        self._subset_made = False
        #: transformers' AutoTokenizer loads, shared by transformers-fast and -slow
        self.auto_loads: AutoLoads = {}

    def vocab(self, required: bool) -> ByteVocab | None:
        if "v" not in self._vocab:
            try:
                self._vocab["v"] = byte_vocab(self.model)
            except BackendUnavailable:
                self._vocab["v"] = None
        if required and self._vocab["v"] is None:
            byte_vocab(self.model)  # raises the precise reason
        return self._vocab["v"]

    def part(self, required: bool) -> ByteVocab | None:
        """The vocabulary, cut down to what ``for_ids`` / ``for_text`` read when one is given."""
        full = self.vocab(required)
        if full is None or (self.for_ids is None and self.for_text is None):
            return full
        if not self._subset_made:
            from tokaudit.backends.subset import for_ids as ids_subset, for_text as text_subset

            self._subset_made = True
            if self.for_ids is not None:
                a = self.model.artifacts
                base = a.rank_file.by_id  # type: ignore[union-attr]  # for_ids: set with a rank file only
                self.subset = ids_subset(full, base, self.for_ids)
            else:
                self.subset = text_subset(full, self.for_text or "")
        return full if self.subset is None else self.subset.vocab

    def ranks(self) -> ByteVocab:
        """:meth:`part` of a backend that cannot be built without the ranks: raises why they are missing."""
        vocab = self.part(True)
        if vocab is None:  # part(True) raised already
            raise BackendUnavailable("no rank vocabulary")
        return vocab

    def gguf_path(self) -> Path:
        """The GGUF the GGUF backends load (see :func:`gguf_file`), or why there is none."""
        path = gguf_file(self.model, self.gguf)
        if path is None:
            raise BackendUnavailable(no_gguf_reason(self.model))
        return path
