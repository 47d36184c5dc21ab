"""The stream-replay findings (TA5xx), from the catalog. These are not scan rules: replay makes them."""

from __future__ import annotations

from tokaudit.report.finding import Code, Finding, Severity, catalog_codes

ALL_CODES = catalog_codes("TA501", "TA502", "TA503", "TA504", "TA505", "TA506", "TA507", "TA508", "TA509", "TA510")
(
    UNMAPPED_ID,
    INCOMPLETE_UTF8,
    STREAM_MISMATCH,
    TEXT_REWRITTEN,
    REPLACEMENT_CHAR,
    STOP_SPLIT,
    TOOL_CALL_JSON,
    PROMPT_LEAK,
    CHUNK_VARIANCE,
    STALL,
) = ALL_CODES


def finding(kind: Code, message: str, *, severity: Severity | None = None, **kwargs: object) -> Finding:
    """A stream finding with its code, name and default severity (``severity`` overrides it)."""
    return Finding(kind.code, kind.name, severity or kind.severity, message, **kwargs)  # type: ignore[arg-type]  # Finding's own keyword fields, passed through
