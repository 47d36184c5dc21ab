"""One cause, one finding: a backend that alone encodes differently is one TA601, not one per pair.

When every other encoder gives the same ids on every case and one backend differs from them, the
difference is that backend's (transformers 5 rebuilding Mistral 7B's ``LlamaTokenizer`` with its own
Metaspace pipeline: ``"   Hello"`` -> ``[259, 22557]`` where tokenizer.json gives ``[2287, 22557]``).
Its pair findings become one finding naming the backends it differs from, and its own round-trip
losses, when they all fall on those cases and no other backend loses there, are listed in that
finding as a consequence instead of a second error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from tokaudit.compare import codes
from tokaudit.compare.corpus import Case
from tokaudit.compare.parity import shown_tokens
from tokaudit.compare.runs import BackendRun
from tokaudit.report.finding import Finding
from tokaudit.report.text import plural


def outlier(runs: Sequence[BackendRun]) -> tuple[BackendRun, list[int]] | None:
    """The encoder whose ids alone differ, and the cases where they do: the others (at least two)
    agree with each other on every case both encoded. None when there is no such backend."""
    enc = [r for r in runs if r.encodes and r.ids is not None]
    if len(enc) < 3:
        return None
    for x in enc:
        others = [r for r in enc if r is not x]
        differ: list[int] = []
        blamed = True
        for i, own in enumerate(x.ids):  # type: ignore[arg-type]  # encoders: ids are set
            seen = [r.ids[i] for r in others if r.ids[i] is not None]  # type: ignore[index]  # encoders: ids are set
            if any(ids != seen[0] for ids in seen[1:]):
                blamed = False  # the others disagree too: no single backend to blame
                break
            if own is not None and seen and own != seen[0]:
                differ.append(i)
        if blamed and differ:
            return x, differ
    return None


def _differs_from_all(x: BackendRun, others: Sequence[BackendRun], i: int) -> bool:
    own = x.ids[i]  # type: ignore[index]  # encoders: ids are set
    return own is not None and all(r.ids[i] is not None and r.ids[i] != own for r in others)  # type: ignore[index]  # encoders: ids are set


def one_cause(
    findings: list[Finding], runs: Sequence[BackendRun], cases: list[Case], losses: dict[str, list[int]]
) -> list[Finding]:
    """``findings`` with each backend's separate findings of one cause merged (see the module doc).
    ``losses``: each backend's real round-trip losses (case indices), as its TA603 counts them."""
    enc = [r for r in runs if r.encodes and r.ids is not None]
    odd = outlier(enc)
    out = list(findings)
    merged: dict[str, Finding] = {}
    if odd is not None:
        x, differ = odd
        pairs = [
            f
            for f in out
            if f.code == codes.ENCODE_MISMATCH.code
            and x.name in (f.details or {}).get("backends", ())
            and "race" not in (f.details or {})
        ]
        if len(pairs) > 1:
            merged[x.name] = _merge_pairs(x, [r for r in enc if r is not x], pairs, len(differ))
            first = out.index(pairs[0])
            out = [f for f in out if f not in pairs]
            out.insert(first, merged[x.name])
    if len(enc) == 2:
        for f in out:
            if f.code == codes.ENCODE_MISMATCH.code and "race" not in (f.details or {}):
                for name in f.details["backends"]:
                    merged.setdefault(name, f)
    for name, target in list(merged.items()):
        x = next(r for r in enc if r.name == name)
        others = [r for r in enc if r is not x]
        lost = losses.get(name) or []
        own = next(
            (f for f in out if f.code == codes.ROUNDTRIP_FAILURE.code and (f.details or {}).get("backend") == name),
            None,
        )
        if own is None or not lost:
            continue
        if not all(_differs_from_all(x, others, i) for i in lost):
            continue
        if any(i in losses.get(r.name, ()) for r in others for i in lost):
            continue
        combined = _with_consequence(target, own, name)
        out = [combined if f is target else f for f in out if f is not own]
    return out


def _merge_pairs(x: BackendRun, others: list[BackendRun], pairs: list[Finding], differ: int) -> Finding:
    first = pairs[0]
    d: dict[str, Any] = first.details or {}
    names = [r.name for r in others]
    ex = d["examples"][0]
    a_is_x = d["backends"][0] == x.name
    own_side, other_side = (ex["a"], ex["b"]) if a_is_x else (ex["b"], ex["a"])
    other = d["backends"][1] if a_is_x else d["backends"][0]
    message = (
        f"{x.name} alone encodes {differ} of {plural(d['cases'], 'case')} to other ids than {', '.join(names)} (which "
        f"agree with each other on every case), so the cause is in {x.name}: {d['benign']} benign (same decoded text), "
        f'{d["real"]} real (the decoded text differs). First, {ex["case"]} at "{ex["text"]}": '
        f"{x.name} {shown_tokens(own_side)} vs {other} {shown_tokens(other_side)}"
    )
    details = {
        **d,
        "backends": [x.name, *names],
        "outlier": x.name,
        "agreeing": names,
        "mismatches": differ,
        "examples_of": d["backends"],
        "pairs": [f.details for f in pairs],
    }
    return replace(first, message=message, details=details)


def _with_consequence(target: Finding, own: Finding, name: str) -> Finding:
    d = own.details or {}
    ex = d["examples"][0]
    message = (
        f"{target.message}. Consequence: {name}'s own decode(encode(text)) loses the text in {d['failures']} of these "
        f'cases, first {ex["case"]}: "{ex["input"]}" -> "{ex["output"]}"'
    )
    details = {
        **(target.details or {}),
        "consequences": {"roundtrip_failure": {"backend": name, "failures": d["failures"], "examples": d["examples"]}},
    }
    return replace(target, message=message, details=details)
