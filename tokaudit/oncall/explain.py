"""``explain``: everything known about an id (or the token whose content is a given string)."""

from __future__ import annotations

import re
from typing import Any

from tokaudit.artifacts.token_bytes import is_partial_utf8
from tokaudit.backends.registry import LoadedBackend
from tokaudit.compare.unknown_ids import answer
from tokaudit.errors import InputError, shorten
from tokaudit.model.text import TokenText
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.oncall.tokens import in_declared_range, token_info
from tokaudit.report.report import TargetResult

_INT = re.compile(r"[+-]?[0-9]+")  # ASCII digits only ("١٠٥" is text, not id 105)


def backend_names(value: str | None, all_backends: bool) -> list[str]:
    """``--backends`` / ``--all-backends``: by default every backend that applies except the
    transformers ones (loading transformers is seconds an on-call question does not wait for) and
    fastokens (its decode is HF tokenizers on the same tokenizer.json, the ``hf`` row's answer, while
    loading its encoder takes 10-25 s on a 150k-200k vocabulary)."""
    from tokaudit.backends.registry import DefaultBackends, parse_backend_list

    if value and all_backends:
        raise InputError("give --backends or --all-backends, not both", key="--all-backends")
    names = parse_backend_list(value)
    if isinstance(names, DefaultBackends) and not all_backends:
        return DefaultBackends(n for n in names if not n.startswith("transformers-") and n != "fastokens")
    return names


def resolve(model: TokenizerModel, queries: list[str]) -> list[tuple[str, int]]:
    """``(query, id)`` pairs: an integer is an id; any other string selects every id whose token is that string."""
    out: list[tuple[str, int]] = []
    for query in queries:
        if _INT.fullmatch(query.strip()):
            if len(query.strip().lstrip("+-")) > 20:  # beyond any id (int() of 5000 digits is refused)
                raise InputError(f"id {shorten(query.strip(), 40)} is out of range (more than 20 digits)", key="ID")
            out.append((query, int(query)))
            continue
        ids = ids_of_content(model, query.encode("utf-8"))
        if not ids:
            raise InputError(
                f"no token in any profile is {query!r} (give an id or a token's exact text)", file=model.target
            )
        out.extend((query, i) for i in ids)
    return out


def ids_of_content(model: TokenizerModel, content: bytes) -> list[int]:
    """Every id that some layer of some profile maps to exactly ``content``."""
    found: set[int] = set()
    seen: set[int] = set()
    for table in model.profiles.values():
        for layer in table.layers:
            if id(layer) in seen:
                continue
            seen.add(id(layer))
            found.update(i for i, token in layer.tokens.items() if token == content)
    return sorted(found)


def explain_id(model: TokenizerModel, backends: list[LoadedBackend], query: str, token_id: int) -> dict[str, Any]:
    info = token_info(model, token_id)
    # what the id adds to a text through the tokenizer's decoder (Gemma's added "▁▁" is two spaces)
    piece = TokenText(model).piece(token_id)
    token = info.token if piece is None else piece
    sources = []
    for profile, lk in info.lookups.items():
        if lk is None:
            continue
        src = lk.source
        sources.append(
            {
                "profile": profile,
                "artifact": lk.layer.artifact,
                **src.to_json(),
                "rule": lk.layer.rule,
                "special": lk.layer.special,
                "text": lk.token.decode("utf-8", "replace"),
                "bytes_hex": lk.token.hex(),
                "partial_utf8": is_partial_utf8(lk.token),
            }
        )
    return {
        "query": query,
        "id": token_id,
        "in_declared_range": in_declared_range(model, token_id),
        "mapped": {profile: lk is not None for profile, lk in info.lookups.items()},
        "sources": sources,
        "bytes_hex": None if token is None else token.hex(),
        "text": None if token is None else token.decode("utf-8", "replace"),
        "special": info.special,
        "partial_utf8": token is not None and is_partial_utf8(token),
        "backends": {lb.name: backend_answer(lb, token_id) for lb in backends},
    }


def backend_answer(lb: LoadedBackend, token_id: int) -> dict[str, Any]:
    """What one backend's ``decode([id])`` returns: text, dropped (empty), an exception, a panic."""
    if lb.backend is None:
        return {"available": False, "reason": lb.unavailable}
    a = answer(lb.backend, token_id)
    out = a.outcome
    return {
        "available": True,
        "kind": a.kind,
        "text": out.value if out.ok else None,
        "dropped": a.kind == "dropped",
        "exception": None if out.ok else out.error_type,
        "message": None if out.ok else out.error,
        "panic": out.panic,
    }


def explain(model: TokenizerModel, backends: list[LoadedBackend], pairs: list[tuple[str, int]]) -> TargetResult:
    """``pairs`` come from :func:`resolve` (called before the backends are loaded, so bad input fails fast)."""
    return TargetResult(
        model.target,
        source=model.source,
        data={
            "declared_size": model.declared.size,
            "declared_by": model.declared.basis,
            "checked_size": model.checked_size,
            "profiles": {name: table.description for name, table in model.profiles.items()},
            "backends": [lb.to_json() for lb in backends],
            "ids": [explain_id(model, backends, q, i) for q, i in pairs],
        },
    )
