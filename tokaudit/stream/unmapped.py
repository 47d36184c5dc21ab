"""The ids of a replayed stream that the tokenizer does not map (TA501): what each profile and backend makes of
them, and the detokenizers that silently drop them."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress
from typing import Any

from tokaudit.backends.base import call
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Finding
from tokaudit.stream import invariants as inv
from tokaudit.stream.detokenizers import DecodeContext, Run, StepError


def unmapped_findings(model: TokenizerModel, ctx: DecodeContext, ids: Sequence[int]) -> list[Finding]:
    """TA501 for each id of the stream that no table maps or that lies past the declared size: where it
    occurs, what each loader profile maps it to, what each backend does with it, and its context."""
    tokens = ctx.tokens
    declared = model.checked_size
    unmapped = {i for i in set(ids) if tokens.get(i) is None or i >= declared}
    if not unmapped:
        return []
    where: dict[int, list[int]] = {}
    for p in compress(range(len(ids)), map(unmapped.__contains__, ids)):
        where.setdefault(ids[p], []).append(p)
    from tokaudit.backends.registry import load_backends

    # hf is the tokenizer replay already decodes with; the others are built only now that they are needed
    backends = [("hf", ctx.tokenizer.decode)] + [
        (b.name, b.backend.decode)
        for b in load_backends(model, ["tiktoken", "strict"], decode_only=True)
        if b.backend is not None
    ]
    out = []
    for token_id, positions in where.items():
        profiles = {}
        for name, table in model.profiles.items():
            found = table.lookup(token_id)
            profiles[name] = found.token.decode("utf-8", "replace") if found else None
        said = {}
        for name, decode in backends:
            outcome = call(decode, [token_id])
            said[name] = outcome.describe() + (" (dropped)" if outcome.ok and outcome.value == "" else "")
        p = positions[0]
        context = (ctx.decode(list(ids[max(p - 8, 0) : p])), ctx.decode(list(ids[p + 1 : p + 9])))
        out.append(inv.unmapped_finding(token_id, positions, declared, profiles, said, context))
    return out


def record_dropped(runs: list[Run], detoks: list[Any], findings: list[Finding]) -> None:
    """Record, for detokenizers that decode through tokenizers, that unmapped ids were dropped."""
    spots = [(f.details["position"], f.details["id"]) for f in findings if f.code == "TA501"]
    for r, d in zip(runs, detoks):
        if d.drops_unknown:
            for p, token_id in spots:
                r.errors.append(StepError(p, token_id, "dropped", "silently dropped by tokenizers decode"))
