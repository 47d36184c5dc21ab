"""The parts of what ``diff`` reports (``oncall/diff.py``'s :class:`DiffResult`): a draft against its target
(:class:`DraftDiff`), the HF files against their GGUF conversion (:class:`ConversionDiff`), and with ``--corpus`` the
token counts (:class:`CountsDrift`, :class:`CountsOnly`). Frozen records whose ``to_json()`` writes their keys of
``--format json``; the view (``oncall/diff_view.py``) reads them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tokaudit.ids import IdRanges


@dataclass(frozen=True)
class DraftSide:
    """One side of a draft/target pair: its vocabulary, declared size, ids mapped and pre-tokenizer pattern."""

    path: str
    vocab_artifact: str
    declared_size: int | None
    declared_by: str
    mapped: int
    pattern: str | None
    pattern_source: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "vocab_artifact": self.vocab_artifact,
            "declared_size": self.declared_size,
            "declared_by": self.declared_by,
            "mapped": self.mapped,
            "pattern": self.pattern,
            "pattern_source": self.pattern_source,
        }


@dataclass(frozen=True)
class DraftExample:
    """An id whose bytes differ: each side's token text (None: unmapped) and bytes."""

    id: int
    draft: str | None
    target: str | None
    draft_hex: str | None
    target_hex: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "draft": self.draft,
            "target": self.target,
            "draft_hex": self.draft_hex,
            "target_hex": self.target_hex,
        }


@dataclass(frozen=True)
class DraftDiff:
    """A draft tokenizer against its target: identical, compatible or incompatible, and the counts behind it."""

    classification: str
    draft: DraftSide
    target: DraftSide
    same_bytes: int
    mismatched: int
    draft_only: int
    target_only: int
    special_divergent: int
    same_pattern: bool
    same_declared_size: bool
    mismatched_ids: IdRanges
    examples: tuple[DraftExample, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "classification": self.classification,
            "draft": self.draft.to_json(),
            "target": self.target.to_json(),
            "same_bytes": self.same_bytes,
            "mismatched": self.mismatched,
            "draft_only": self.draft_only,
            "target_only": self.target_only,
            "special_divergent": self.special_divergent,
            "same_pattern": self.same_pattern,
            "same_declared_size": self.same_declared_size,
            "mismatched_ids": self.mismatched_ids.to_json(),
            "examples": [e.to_json() for e in self.examples],
        }


@dataclass(frozen=True)
class ConversionExample:
    """An id whose bytes differ between the HF files and the GGUF (as llama.cpp renders them)."""

    id: int
    hf: str | None
    gguf: str | None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "hf": self.hf, "gguf": self.gguf}


@dataclass(frozen=True)
class MergesDiff:
    """The merges of both sides, and the first that differs (None: the same list)."""

    hf: int
    gguf: int
    first_difference: int | None
    hf_at_first: str | None
    gguf_at_first: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "hf": self.hf,
            "gguf": self.gguf,
            "first_difference": self.first_difference,
            "hf_at_first": self.hf_at_first,
            "gguf_at_first": self.gguf_at_first,
        }


@dataclass(frozen=True)
class PreDiff:
    """The GGUF's pre-tokenizer name as llama.cpp reads it, and whether its family matches the HF regex (None:
    the HF regex is not in llama.cpp's table)."""

    gguf: str | None
    state: str
    family: str | None
    hf_regex: str | None
    matches: bool | None

    def to_json(self) -> dict[str, Any]:
        return {
            "gguf": self.gguf,
            "state": self.state,
            "family": self.family,
            "hf_regex": self.hf_regex,
            "matches": self.matches,
        }


@dataclass(frozen=True)
class TemplateDiff:
    """Whether each side has a chat template, whether they are the same text and where they first differ."""

    hf: bool
    gguf: bool
    same: bool | None
    first_difference: int | None

    def to_json(self) -> dict[str, Any]:
        return {"hf": self.hf, "gguf": self.gguf, "same": self.same, "first_difference": self.first_difference}


@dataclass(frozen=True)
class ConversionDiff:
    """The HF files against the GGUF converted from them: faithful or drifted."""

    classification: str
    hf_path: str
    hf_vocab_artifact: str
    hf_mapped: int
    gguf_path: str
    gguf_file: str
    gguf_mapped: int
    gguf_model: str | None
    same_bytes: int
    mismatched: int
    gguf_only: int
    mismatched_ids: IdRanges
    examples: tuple[ConversionExample, ...]
    type_flag_mismatches: int
    #: each special id or flag that differs, as TA603's details give it
    specials: tuple[dict[str, Any], ...]
    merges: MergesDiff | None
    pre: PreDiff
    template: TemplateDiff

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": "conversion",
            "classification": self.classification,
            "hf": {"path": self.hf_path, "vocab_artifact": self.hf_vocab_artifact, "mapped": self.hf_mapped},
            "gguf": {
                "path": self.gguf_path,
                "file": self.gguf_file,
                "mapped": self.gguf_mapped,
                "model": self.gguf_model,
            },
            "same_bytes": self.same_bytes,
            "mismatched": self.mismatched,
            "gguf_only": self.gguf_only,
            "mismatched_ids": self.mismatched_ids.to_json(),
            "examples": [e.to_json() for e in self.examples],
            "type_flag_mismatches": self.type_flag_mismatches,
            "specials": list(self.specials),
            "merges": None if self.merges is None else self.merges.to_json(),
            "pre": self.pre.to_json(),
            "template": self.template.to_json(),
        }


@dataclass(frozen=True)
class CountTotal:
    """One tokenizer's total over the corpus."""

    target: str
    backend: str
    total: int

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "backend": self.backend, "total": self.total}


@dataclass(frozen=True)
class TextCounts:
    """One corpus text's count under A and B."""

    name: str
    a: int
    b: int

    @property
    def delta(self) -> int:
        return self.b - self.a

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "a": self.a, "b": self.b, "delta": self.delta}


@dataclass(frozen=True)
class CountsDrift:
    """``diff --corpus``: the counts under both tokenizers (or A and a counts baseline), and the growth."""

    corpus: str
    texts: tuple[TextCounts, ...]
    max_growth_percent: float
    a: CountTotal
    b: CountTotal
    #: None when A's total is 0 and B's is not
    growth_percent: float | None

    @property
    def changed(self) -> int:
        return sum(1 for r in self.texts if r.delta)

    def to_json(self) -> dict[str, Any]:
        return {
            "corpus": self.corpus,
            "texts": [r.to_json() for r in self.texts],
            "max_growth_percent": self.max_growth_percent,
            "a": self.a.to_json(),
            "b": self.b.to_json(),
            "delta": self.b.total - self.a.total,
            "growth_percent": self.growth_percent,
            "changed": self.changed,
        }


@dataclass(frozen=True)
class CountsOnly:
    """``diff --corpus --write-counts`` with one tokenizer: its counts, written as a baseline."""

    corpus: str
    a: CountTotal
    #: (text name, count)
    texts: tuple[tuple[str, int], ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "corpus": self.corpus,
            "b": None,
            "a": self.a.to_json(),
            "texts": [{"name": name, "a": n} for name, n in self.texts],
        }
