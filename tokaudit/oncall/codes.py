"""Finding codes of the on-call verbs. ``backend-crash`` (TA605) is shared with ``compare`` and
defined there; the draft/target codes (TA7xx) are ``diff``'s own."""

from __future__ import annotations

from tokaudit.compare.codes import BACKEND_CRASH, Code
from tokaudit.report.finding import Severity

ID_TOKEN_MISMATCH = Code("TA701", "id-token-mismatch", Severity.ERROR, "a draft id maps to other bytes (or none) in the target")
DRAFT_SIZE_MISMATCH = Code("TA702", "draft-size-mismatch", Severity.WARNING, "the draft and the target declare different vocabulary sizes")
SPECIAL_TOKEN_DIVERGENCE = Code(
    "TA703", "special-token-divergence", Severity.WARNING, "special tokens differ between the draft and the target (id, content or flag)"
)

__all__ = ["BACKEND_CRASH", "DRAFT_SIZE_MISMATCH", "ID_TOKEN_MISMATCH", "SPECIAL_TOKEN_DIVERGENCE"]
