"""The finding codes of ``compare`` (backend parity, TA6xx, and TA210: the BOS/EOS the backends add), from the
catalog. They are not scan rules."""

from __future__ import annotations

from tokaudit.report.finding import Code, catalog_codes

ALL_CODES = catalog_codes("TA601", "TA602", "TA603", "TA604", "TA605", "TA606", "TA210")
(
    ENCODE_MISMATCH,
    DECODE_MISMATCH,
    ROUNDTRIP_FAILURE,
    UNKNOWN_ID_BEHAVIOUR,
    BACKEND_CRASH,
    GOLDEN_MISMATCH,
    SPECIAL_ADDITION_DIVERGENCE,
) = ALL_CODES

__all__ = [
    "ALL_CODES",
    "BACKEND_CRASH",
    "DECODE_MISMATCH",
    "ENCODE_MISMATCH",
    "GOLDEN_MISMATCH",
    "ROUNDTRIP_FAILURE",
    "SPECIAL_ADDITION_DIVERGENCE",
    "UNKNOWN_ID_BEHAVIOUR",
    "Code",
]
