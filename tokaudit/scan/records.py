"""The parts of a scan's result (``scan/result.py``): frozen records, each with the ``to_json()`` of its key of
``--format json``, built by ``scan/summary.py`` and drawn by ``scan/view.py``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tokaudit.ids import IdRanges
from tokaudit.model.tokenizer_model import Sizes
from tokaudit.records import Provenance


@dataclass(frozen=True)
class ArtifactRow:
    """One parsed file: its kind and how many entries it holds."""

    file: str
    kind: str
    entries: int | None

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "kind": self.kind, "entries": self.entries}


@dataclass(frozen=True)
class ProfileSummary:
    """One loader profile's id table against the checked size."""

    name: str
    description: str
    mapped: int
    #: the ids in [0, checked size) the profile leaves unmapped
    unmapped: IdRanges

    def to_json(self) -> dict[str, Any]:
        return {
            "description": self.description,
            "mapped": self.mapped,
            "unmapped": self.unmapped.count,
            "unmapped_ids": self.unmapped.to_json(),
        }


@dataclass(frozen=True)
class VocabSummary:
    """The declared size, who declares it, the five sizes stacks check ids against, and the id tables."""

    declared_size: int | None
    declared_by: str
    declared_source: Provenance | None
    vocab_artifact: str
    mapped: int
    unmapped: int
    sizes: Sizes
    profiles: tuple[ProfileSummary, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "declared_size": self.declared_size,
            "declared_by": self.declared_by,
            "declared_source": self.declared_source.to_json() if self.declared_source else None,
            "vocab_artifact": self.vocab_artifact,
            "mapped": self.mapped,
            "unmapped": self.unmapped,
            "sizes": self.sizes.to_json(),
            "profiles": {p.name: p.to_json() for p in self.profiles},
        }


@dataclass(frozen=True)
class GgufToken:
    """An id of the GGUF and its token's text (None when the id is outside the token list)."""

    id: int
    token: str | None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "token": self.token}


@dataclass(frozen=True)
class GgufFlag:
    name: str
    value: bool
    #: what set it: "GGUF key", "pre-tokenizer <name>", "<type> default", ...
    set_by: str | None


@dataclass(frozen=True)
class GgufSpecial:
    """A special id as llama.cpp resolves it (``id``/``token`` None: none), where it came from, and the file's
    out-of-range value."""

    name: str
    id: int | None
    token: str | None
    origin: str | None
    bad_value: int | None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "token": self.token, "origin": self.origin, "bad_value": self.bad_value}


@dataclass(frozen=True)
class EogToken:
    """An id llama.cpp stops on, and why."""

    id: int
    token: str | None
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "token": self.token, "why": self.why}


@dataclass(frozen=True)
class EndOfTurn:
    """The chat template's end-of-turn text, its id (None: not a token) and who stops on it."""

    token: str
    id: int | None
    llamacpp_stops: bool
    eos_only_runtimes_stop: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "token": self.token,
            "id": self.id,
            "llamacpp_stops": self.llamacpp_stops,
            "eos_only_runtimes_stop": self.eos_only_runtimes_stop,
        }


@dataclass(frozen=True)
class GgufSummary:
    """What llama.cpp makes of the target's GGUF: its flags, special ids and the three stop sets side by side
    (llama.cpp's EOG set, the eos id(s) other runtimes stop on, the chat template's end of turn)."""

    file: str
    version: int
    byte_order: str
    shards: int
    bytes_read: int
    architecture: str | None
    model: str | None
    vocab_type: str | None
    pre: str | None
    pre_state: str
    pre_family: str | None
    flags: tuple[GgufFlag, ...]
    special: tuple[GgufSpecial, ...]
    eog: tuple[EogToken, ...]
    eos_ids: tuple[GgufToken, ...]
    end_of_turn: EndOfTurn | None
    control_override: tuple[int, ...]
    templates: tuple[str, ...]
    load_error: str | None
    llamacpp_warnings: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "version": self.version,
            "byte_order": self.byte_order,
            "shards": self.shards,
            "bytes_read": self.bytes_read,
            "architecture": self.architecture,
            "model": self.model,
            "vocab_type": self.vocab_type,
            "pre": self.pre,
            "pre_state": self.pre_state,
            "pre_family": self.pre_family,
            "flags": {f.name: {"value": f.value, "set_by": f.set_by} for f in self.flags},
            "special": {s.name: s.to_json() for s in self.special},
            "eog": [e.to_json() for e in self.eog],
            "eos_ids": [t.to_json() for t in self.eos_ids],
            "end_of_turn": None if self.end_of_turn is None else self.end_of_turn.to_json(),
            "control_override": list(self.control_override),
            "templates": list(self.templates),
            "load_error": self.load_error,
            "llamacpp_warnings": list(self.llamacpp_warnings),
        }
