"""What the TA8xx findings of rendered templates share: their codes, a finding of a code, excerpts around a
difference, the stacks in report order, and the rendered texts' ids (each text tokenized once)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tokaudit.checks.literals import LiteralClassifier
from tokaudit.report.finding import Code, Finding, catalog_codes
from tokaudit.template.serving import ServingEncoder
from tokaudit.template.source import TemplateSource
from tokaudit.template.stacks import STACK_NAMES
from tokaudit.template.structure_base import CODES as STRUCTURE_CODES

#: Characters of context on each side of a difference in an excerpt.
EXCERPT = 40


#: The TA8xx family of rendered templates (names, severities and summaries are the catalog's).
CODES: dict[str, Code] = {
    **{c.code: c for c in catalog_codes("TA801", "TA802", "TA803", "TA804", "TA805", "TA806", "TA807")},
    **STRUCTURE_CODES,
}


def finding(code: str, message: str, **kwargs: Any) -> Finding:
    return CODES[code].finding(message, **kwargs)


def excerpt(text: str, at: int, width: int = EXCERPT) -> str:
    start = max(0, at - width)
    return ("…" if start else "") + text[start : at + width] + ("…" if at + width < len(text) else "")


def first_difference(a: str, b: str) -> int:
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


def first_token_difference(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


def ordered(stacks: Any) -> list[str]:
    """Stack ids in report order."""
    chosen = set(stacks)
    return [s for s in STACK_NAMES if s in chosen]


def concerns(f: Finding, stacks: tuple[str, ...]) -> bool:
    """A finding concerns a stack selection when it names a selected stack; one that names none (TA803: clients,
    not stacks) only when every stack is selected."""
    named = (f.details or {}).get("stacks")
    if not named:
        return tuple(stacks) == STACK_NAMES
    return any(s in stacks for s in named)


def names(items: list[str], most: int = 6) -> str:
    return ", ".join(items[:most]) + (" …" if len(items) > most else "")


def in_template(template: TemplateSource) -> str:
    return "" if template.name == "default" else f" with template {template.name}"


@dataclass
class Tokens:
    """The ids of rendered texts (each text tokenized once): the serving encoder for whole prompts, the
    classifier's encoder (no special tokens added) for pieces."""

    encoder: ServingEncoder | None
    classifier: LiteralClassifier | None = None
    _cache: dict[str, list[int] | None] = field(default_factory=dict)

    def of(self, text: str | None) -> list[int] | None:
        if self.encoder is None or text is None:
            return None
        if text not in self._cache:
            self._cache[text] = self.encoder.encode(text)
        return self._cache[text]
