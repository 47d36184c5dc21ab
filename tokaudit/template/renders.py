"""What a template render is and what bounds it: the records the engines make and the template rules keep
(and cache). Importing this does not import the engines (:mod:`tokaudit.template.engines`), which a scan whose
renders are all cached never runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

ENGINE_NAMES = ("jinja2", "minijinja")

#: How Jinja2's operator guard starts its error: an allocation no render may make.
SIZE_BOMB = "a repetition of"


@dataclass(frozen=True)
class Budget:
    """Bounds of one render: wall time (Jinja2), steps (MiniJinja fuel, ~20 M steps ≈ 1 s), output size."""

    seconds: float = 2.0
    fuel: int = 20_000_000
    max_chars: int = 1_000_000
    #: Wall time one engine may spend on all conversations of one template.
    total_seconds: float = 30.0


@dataclass(frozen=True)
class Render:
    """What one engine made of one conversation: the text, or an error and its kind.

    kinds: ``syntax`` (the template does not parse), ``raise`` (the template called
    raise_exception), ``budget`` (time, steps, output size or recursion depth ran out), ``error``.
    """

    engine: str
    text: str | None
    error: str | None = None
    kind: str | None = None

    @property
    def ok(self) -> bool:
        return self.text is not None


class Prepared(Protocol):
    def render(self, context: dict[str, Any]) -> Render: ...


class Engine(Protocol):
    name: str

    @property
    def version(self) -> str | None: ...

    def prepare(self, template: str) -> Prepared: ...
