"""``diff``: a draft tokenizer against its target (speculative decoding passes ids, not text).

identical — the same bytes for every id, the same specials, sizes and pattern;
compatible — every id the draft maps has the same bytes in the target (the target may have more);
incompatible — some draft id maps to other bytes in the target, or to none.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tokaudit.backends.pattern import find_pattern
from tokaudit.ids import IdRanges
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.oncall.diff_result import ConversionDiff, CountsDrift, CountsOnly, DraftDiff, DraftExample, DraftSide
from tokaudit.oncall.codes import DRAFT_SIZE_MISMATCH, ID_TOKEN_MISMATCH, SPECIAL_TOKEN_DIVERGENCE
from tokaudit.report.finding import Finding
from tokaudit.report.text import plural, token_text

if TYPE_CHECKING:
    from rich.console import Console

    from tokaudit.report.policy import PolicyCounts

#: Examples kept per finding.
EXAMPLES = 5


@dataclass(frozen=True)
class DiffResult:
    """One target's diff (a :class:`tokaudit.report.report.CommandResult`): a draft or conversion comparison
    (None with one tokenizer and a counts baseline), and the corpus counts with ``--corpus``."""

    target: str
    #: where the target's files came from (a :class:`tokaudit.source.resolve.Source`)
    source: Any
    diff: DraftDiff | ConversionDiff | None = None
    counts: CountsDrift | CountsOnly | None = None
    not_checked: tuple[str, ...] = ()
    policy: PolicyCounts | None = None
    rules: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.diff is not None:
            out["diff"] = self.diff.to_json()
        if self.counts is not None:
            out["counts"] = self.counts.to_json()
        return out

    def rich(self, console: Console) -> None:
        from tokaudit.oncall.diff_view import diff_view

        diff_view(console, self.diff, self.counts)


def _side(model: TokenizerModel, tokens: dict[int, bytes]) -> DraftSide:
    pattern = find_pattern(model)
    return DraftSide(
        path=model.target,
        vocab_artifact=model.vocab_artifact,
        declared_size=model.declared.size,
        declared_by=model.declared.basis,
        mapped=len(tokens),
        pattern=None if pattern is None else pattern.regex,
        pattern_source=None if pattern is None else pattern.source,
    )


def _example(i: int, a: bytes | None, b: bytes | None) -> DraftExample:
    return DraftExample(
        i,
        None if a is None else token_text(a),
        None if b is None else token_text(b),
        None if a is None else a.hex(),
        None if b is None else b.hex(),
    )


def _show(e: DraftExample) -> str:
    draft = e.draft if e.draft is not None else "(none)"
    return f"{e.id}: {draft} ≠ {e.target if e.target is not None else '(none)'}"


def diff_models(draft: TokenizerModel, target: TokenizerModel) -> tuple[DiffResult, list[Finding]]:
    a, a_special = draft.files.flat
    b, b_special = target.files.flat
    differ = sorted(i for i, token in a.items() if b.get(i) != token)
    mismatched = [i for i in differ if i in b]
    missing = [i for i in differ if i not in b]
    target_only = [i for i in b if i not in a]
    special_diff = sorted((a_special ^ b_special) | {i for i in a_special & b_special if a[i] != b[i]})
    pa, pb = find_pattern(draft), find_pattern(target)
    same_pattern = (pa.regex if pa else None) == (pb.regex if pb else None)
    same_size = draft.declared.size == target.declared.size

    if differ:
        classification = "incompatible"
    elif not target_only and not special_diff and same_size and same_pattern:
        classification = "identical"
    else:
        classification = "compatible"

    findings = list(_findings(draft, target, a, b, differ, special_diff, a_special, b_special))
    compared = DraftDiff(
        classification=classification,
        draft=_side(draft, a),
        target=_side(target, b),
        same_bytes=len(a) - len(differ),
        mismatched=len(mismatched),
        draft_only=len(missing),
        target_only=len(target_only),
        special_divergent=len(special_diff),
        same_pattern=same_pattern,
        same_declared_size=same_size,
        mismatched_ids=IdRanges.from_ids(differ),
        examples=tuple(_example(i, a.get(i), b.get(i)) for i in differ[:EXAMPLES]),
    )
    return DiffResult(draft.target, draft.source, compared), [f.with_target(draft.target) for f in findings]


def _findings(
    draft: TokenizerModel,
    target: TokenizerModel,
    a: dict[int, bytes],
    b: dict[int, bytes],
    differ: list[int],
    special_diff: list[int],
    a_special: frozenset[int],
    b_special: frozenset[int],
) -> Iterator[Finding]:
    if differ:
        ranges = IdRanges.from_ids(differ)
        examples = [_example(i, a.get(i), b.get(i)) for i in differ[:EXAMPLES]]
        missing = sum(1 for i in differ if i not in b)
        yield Finding(
            ID_TOKEN_MISMATCH.code,
            ID_TOKEN_MISMATCH.name,
            ID_TOKEN_MISMATCH.severity,
            f"{plural(len(differ), 'id')} the draft maps decode{'s' if len(differ) == 1 else ''} to other bytes in "
            "the target"
            + (f" ({missing} of them to nothing)" if missing else "")
            + f": {ranges.describe()}; e.g. {'; '.join(_show(e) for e in examples[:3])}. "
            "Every accepted draft id is decoded in the target's vocabulary, so these corrupt the output.",
            ids=ranges,
            details={"examples": [e.to_json() for e in examples], "draft_only": missing},
        )
    if draft.declared.size != target.declared.size:
        ds, ts = draft.declared.size, target.declared.size
        yield Finding(
            DRAFT_SIZE_MISMATCH.code,
            DRAFT_SIZE_MISMATCH.name,
            DRAFT_SIZE_MISMATCH.severity,
            f"the draft declares {ds if ds is not None else 'no'} vocabulary size ({draft.declared.basis}), the target "
            f"{ts if ts is not None else 'none'} ({target.declared.basis}); engines that require equal sizes refuse "
            "this pair" + ("" if differ else " although every draft id maps to the same bytes"),
            location=draft.declared.source,
            details={"draft": ds, "target": ts, "draft_mapped": len(a), "target_mapped": len(b)},
        )
    if special_diff:
        ranges = IdRanges.from_ids(special_diff)
        specials = [
            {
                "id": i,
                "draft": None if i not in a else token_text(a[i]),
                "draft_special": i in a_special,
                "target": None if i not in b else token_text(b[i]),
                "target_special": i in b_special,
            }
            for i in special_diff[:EXAMPLES]
        ]
        shown = "; ".join(
            f"{e['id']}: {e['draft'] or '(none)'}{' (special)' if e['draft_special'] else ''} vs "
            f"{e['target'] or '(none)'}{' (special)' if e['target_special'] else ''}"
            for e in specials[:3]
        )
        yield Finding(
            SPECIAL_TOKEN_DIVERGENCE.code,
            SPECIAL_TOKEN_DIVERGENCE.name,
            SPECIAL_TOKEN_DIVERGENCE.severity,
            f"{len(special_diff)} special-token ids differ between the draft and the target (present in one only, "
            f"other content, or special in one only): {ranges.describe()}; e.g. {shown}. Stop and skip rules differ.",
            ids=ranges,
            details={"examples": specials},
        )
