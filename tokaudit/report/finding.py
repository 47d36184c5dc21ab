"""The Finding: one problem, with a stable code and name, a severity, a location and its ids."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from tokaudit.records import Provenance
from tokaudit.catalog import CATALOG
from tokaudit.ids import IdRanges


class Severity(str, Enum):
    """SARIF levels, from most to least severe."""

    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"

    @property
    def rank(self) -> int:
        return {"error": 3, "warning": 2, "note": 1}[self.value]


@dataclass(frozen=True)
class Finding:
    """One problem found in one target: its code, severity, message and where it is."""

    code: str
    name: str
    severity: Severity
    message: str
    location: Provenance | None = None
    ids: IdRanges | None = None
    details: dict[str, Any] = field(default_factory=dict)
    target: str = ""

    def with_target(self, target: str) -> Finding:
        return replace(self, target=target)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "message": self.message,
            "target": self.target,
            "location": self.location.to_json() if self.location else None,
        }
        # contract: every finding has both keys, null when it names no ids
        out["ids"] = self.ids.to_json() if self.ids is not None else None
        out["count"] = self.ids.count if self.ids is not None else None
        out["details"] = self.details
        return out


@dataclass(frozen=True)
class Code:
    """A finding code as the catalog (:mod:`tokaudit.catalog`) writes it, its default severity a :class:`Severity`."""

    code: str
    name: str
    severity: Severity
    summary: str

    def finding(self, message: str, **kwargs: Any) -> Finding:
        """A finding of this code with its name and default severity (``severity=`` overrides it)."""
        kwargs.setdefault("severity", self.severity)
        return Finding(self.code, self.name, message=message, **kwargs)


def catalog_code(code: str) -> Code:
    """The catalog's entry for ``code`` (KeyError for a code the catalog does not list)."""
    info = CATALOG[code]
    return Code(info.code, info.name, Severity(info.severity), info.summary)


def catalog_codes(*codes: str) -> tuple[Code, ...]:
    """:func:`catalog_code` of each, in order (a module's family of codes)."""
    return tuple(map(catalog_code, codes))
