"""The finding codes of ``compare`` (backend parity, TA6xx). They are not scan rules."""

from __future__ import annotations

from dataclasses import dataclass

from tokaudit.report.finding import Severity


@dataclass(frozen=True)
class Code:
    code: str
    name: str
    severity: Severity
    summary: str


ENCODE_MISMATCH = Code("TA601", "encode-mismatch", Severity.ERROR, "two backends encode the same text to different ids")
DECODE_MISMATCH = Code("TA602", "decode-mismatch", Severity.ERROR, "two backends decode the same ids to different text")
ROUNDTRIP_FAILURE = Code("TA603", "roundtrip-failure", Severity.ERROR, "decode(encode(text)) is not the text")
UNKNOWN_ID_BEHAVIOUR = Code(
    "TA604", "unknown-id-behaviour", Severity.WARNING, "backends differ on ids in a gap, at or beyond the declared end, or negative"
)
BACKEND_CRASH = Code("TA605", "backend-crash", Severity.ERROR, "an exception or Rust panic inside a backend")
GOLDEN_MISMATCH = Code("TA606", "golden-mismatch", Severity.ERROR, "a backend encodes a text of the golden file to other ids than it expects")

ALL_CODES = (ENCODE_MISMATCH, DECODE_MISMATCH, ROUNDTRIP_FAILURE, UNKNOWN_ID_BEHAVIOUR, BACKEND_CRASH, GOLDEN_MISMATCH)
