"""Codes and names of the stream-replay findings (TA5xx). These are not scan rules: replay makes them."""

from __future__ import annotations

from tokaudit.report.finding import Finding, Severity

UNMAPPED_ID = ("TA501", "unmapped-id")
INCOMPLETE_UTF8 = ("TA502", "incomplete-utf8")
STREAM_MISMATCH = ("TA503", "stream-mismatch")
TEXT_REWRITTEN = ("TA504", "text-rewritten")
REPLACEMENT_CHAR = ("TA505", "replacement-char")
STOP_SPLIT = ("TA506", "stop-split")
TOOL_CALL_JSON = ("TA507", "tool-call-json")
PROMPT_LEAK = ("TA508", "prompt-leak")
CHUNK_VARIANCE = ("TA509", "chunk-variance")
STALL = ("TA510", "detokenizer-stall")

#: code -> (name, default severity, one-line summary), for the README table and --help texts.
STREAM_CODES: dict[str, tuple[str, Severity, str]] = {
    "TA501": ("unmapped-id", Severity.ERROR, "the stream holds an id a files-only loader cannot map, or one outside the vocabulary"),
    "TA502": ("incomplete-utf8", Severity.ERROR, "the stream ends with bytes held inside a multi-byte character"),
    "TA503": ("stream-mismatch", Severity.ERROR, "a detokenizer's concatenated chunks differ from the full decode"),
    "TA504": ("text-rewritten", Severity.ERROR, "text already emitted would have to change"),
    "TA505": ("replacement-char", Severity.WARNING, "U+FFFD emitted where the full decode has none"),
    "TA506": ("stop-split", Severity.ERROR, "a stop is detected late, leaked or split by a detokenizer"),
    "TA507": ("tool-call-json", Severity.ERROR, "tool-call arguments in the stream are not valid JSON"),
    "TA508": ("prompt-leak", Severity.ERROR, "prompt text appears in the first chunk"),
    "TA509": ("chunk-variance", Severity.ERROR, "re-chunking the same ids into steps of 1..8 changes a detokenizer's output"),
    "TA510": ("detokenizer-stall", Severity.WARNING, "a detokenizer holds 256 ids without emitting: clients see nothing, each step re-decodes the held window"),
}


def finding(kind: tuple[str, str], message: str, *, severity: Severity | None = None, **kwargs: object) -> Finding:
    """A stream finding with its code, name and default severity (``severity`` overrides it)."""
    code, name = kind
    return Finding(code, name, severity or STREAM_CODES[code][1], message, **kwargs)  # type: ignore[arg-type]
