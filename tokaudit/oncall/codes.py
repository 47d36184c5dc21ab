"""Finding codes of the on-call verbs, from the catalog: the draft/target codes (TA7xx), ``diff``'s own (TA704
token-count drift), and ``backend-crash`` (TA605), shared with ``compare``."""

from __future__ import annotations

from tokaudit.compare.codes import BACKEND_CRASH
from tokaudit.report.finding import catalog_codes

ALL_CODES = catalog_codes("TA701", "TA702", "TA703", "TA704")
ID_TOKEN_MISMATCH, DRAFT_SIZE_MISMATCH, SPECIAL_TOKEN_DIVERGENCE, TOKEN_COUNT_DRIFT = ALL_CODES

__all__ = [
    "ALL_CODES",
    "BACKEND_CRASH",
    "DRAFT_SIZE_MISMATCH",
    "ID_TOKEN_MISMATCH",
    "SPECIAL_TOKEN_DIVERGENCE",
    "TOKEN_COUNT_DRIFT",
]
