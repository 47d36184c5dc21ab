"""The parts of a ``template`` result (``template/result.py``): frozen records, each with the ``to_json()`` of its
key of ``--format json``, built by ``template/run.py`` and drawn by ``template/view.py``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TemplateRef:
    """A template rendered: its name and where it came from (a file, or a key of one)."""

    name: str
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "name": self.name}


@dataclass(frozen=True)
class EngineInfo:
    """The template engine a stack renders with, its pinned knobs and the installed library's version."""

    name: str
    kind: str
    pins: Any
    library: Any

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "pins": self.pins, "library": self.library}


@dataclass(frozen=True)
class StackInfo:
    """A serving stack checked: the version its profile mirrors, its engine, and why it was not rendered (if so)."""

    id: str
    title: str
    version: str
    source: Any
    engine: EngineInfo
    skipped: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "version": self.version,
            "source": self.source,
            "engine": self.engine.to_json(),
            "rendered": self.skipped is None,
            "skipped": self.skipped,
        }


@dataclass(frozen=True)
class Prepend:
    """The token the tokenizer puts before a prompt (a BOS), and the setting that says so."""

    token: str | None
    id: int | None
    setting: str

    def to_json(self) -> dict[str, Any]:
        return {"token": self.token, "id": self.id, "setting": self.setting}


@dataclass(frozen=True)
class TokenizerInfo:
    """The encoder the prompts are tokenized with (None: none could be built, ``error`` says why)."""

    name: str | None
    error: str | None
    prepends: Prepend | None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "error": self.error,
            "prepends": None if self.prepends is None else self.prepends.to_json(),
        }


@dataclass(frozen=True)
class StackRender:
    """One stack's prompt for one request: its text (None: the render failed, ``error`` says why), its ids and the
    control tokens' character spans."""

    stack: str
    engine: str
    text: str | None
    error: str | None
    error_kind: str | None
    ids: Sequence[int] | None
    controls: tuple[tuple[int, int], ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "stack": self.stack,
            "engine": self.engine,
            "text": self.text,
            "error": self.error,
            "error_kind": self.error_kind,
            "ids": self.ids,
            "controls": [[start, end] for start, end in self.controls],
        }


@dataclass(frozen=True)
class DivergenceSide:
    """A group of stacks whose prompt differs from the first group's: where (character, token) and an excerpt of
    each side."""

    stacks: tuple[str, ...]
    position: int
    token_position: int | None
    excerpt: str
    base_excerpt: str

    def to_json(self) -> dict[str, Any]:
        return {
            "stacks": list(self.stacks),
            "position": self.position,
            "token_position": self.token_position,
            "excerpt": self.excerpt,
            "base_excerpt": self.base_excerpt,
        }


@dataclass(frozen=True)
class Divergence:
    """Where the stacks' prompts differ: the stacks grouped by identical text, each group against the first."""

    base: tuple[str, ...]
    groups: tuple[tuple[str, ...], ...]
    sides: tuple[DivergenceSide, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "base": list(self.base),
            "groups": [list(g) for g in self.groups],
            "sides": [s.to_json() for s in self.sides],
        }


@dataclass(frozen=True)
class Conversation:
    """One request rendered by every stack."""

    name: str
    template: str
    origin: Any
    add_generation_prompt: bool
    required: bool
    renders: tuple[StackRender, ...]
    divergence: Divergence | None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "template": self.template,
            "origin": self.origin,
            "add_generation_prompt": self.add_generation_prompt,
            "required": self.required,
            "renders": [r.to_json() for r in self.renders],
            "divergence": None if self.divergence is None else self.divergence.to_json(),
        }
