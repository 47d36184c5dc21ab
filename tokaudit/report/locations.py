"""Where a finding points, as a path a CI system can show (target joined with the file)."""

from __future__ import annotations

from pathlib import PurePosixPath

from tokaudit.catalog import lookup
from tokaudit.report.finding import Finding


def finding_path(f: Finding) -> str:
    """``fixtures/kimi-k2.5/config.json``; the target itself when the finding names no file."""
    target = f.target.replace("\\", "/").rstrip("/") or "."
    if f.location is None:
        return target
    base = PurePosixPath(target)
    if base.name == f.location.file:  # the target is the file itself (a single tokenizer file)
        return str(base)
    return str(base / f.location.file)


def finding_line(f: Finding) -> int:
    return f.location.line if f.location is not None and f.location.line is not None else 1


def rule_summary(code: str) -> str | None:
    """A finding code's one-line summary, from the catalog (the report layer never imports the rules)."""
    info = lookup(code)
    return info.summary if info else None
