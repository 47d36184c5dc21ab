"""What both template engines share: the fixed instant ``strftime_now`` formats, the template's own
``raise_exception``, the errors a render ends with, and the prepared template of a compile that failed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tokaudit.template.renders import Render

#: The instant ``strftime_now`` formats: renders are reproducible and never read the clock.
FIXED_NOW = datetime(2026, 1, 15, 12, 0, 0)


class TemplateRaised(Exception):
    """The template called ``raise_exception(message)``."""


class BudgetExceeded(Exception):
    """A render ran out of time, steps or output size."""


def raise_exception(message: Any = "") -> None:
    raise TemplateRaised(str(message))


def strftime_now(fmt: str) -> str:
    return FIXED_NOW.strftime(str(fmt))


def first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:300] if lines else type(exc).__name__


@dataclass(frozen=True)
class Failed:
    """A template that did not compile (or an engine that is not available): every render reports it."""

    engine: str
    error: str
    kind: str

    def render(self, context: dict[str, Any]) -> Render:
        return Render(self.engine, None, self.error, self.kind)
