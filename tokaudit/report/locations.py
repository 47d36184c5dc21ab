"""Where a finding points, as a path a CI system can show (target joined with the file)."""

from __future__ import annotations

from pathlib import PurePosixPath

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
    """A registered scan rule's or tokaudit meta code's one-line summary."""
    from tokaudit.checks.registry import RULES, all_rules
    from tokaudit.report.policy import META_CODES

    if code in META_CODES:
        return META_CODES[code][2]
    all_rules()  # imports every rule module once
    rule = RULES.get(code)
    return rule.summary if rule else None
