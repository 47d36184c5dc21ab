"""``explain``: everything known about an id (or the token whose content is a given string)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tokaudit.artifacts.token_bytes import is_partial_utf8
from tokaudit.backends.registry import LoadedBackend
from tokaudit.compare.unknown_ids import answer
from tokaudit.errors import InputError, shorten
from tokaudit.model.text import TokenText
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.oncall.records import BackendAnswer, ExplainedId, IdSource
from tokaudit.oncall.tokens import in_declared_range, token_info

if TYPE_CHECKING:
    from rich.console import Console

    from tokaudit.report.policy import PolicyCounts

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


@dataclass(frozen=True)
class ExplainResult:
    """One target's explain (a :class:`tokaudit.report.report.CommandResult`)."""

    target: str
    #: where the target's files came from (a :class:`tokaudit.source.resolve.Source`)
    source: Any
    declared_size: int | None
    declared_by: str
    checked_size: int
    #: profile name -> its description
    profiles: Mapping[str, str]
    backends: tuple[LoadedBackend, ...]
    ids: tuple[ExplainedId, ...]
    not_checked: tuple[str, ...] = ()
    policy: PolicyCounts | None = None
    rules: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "declared_size": self.declared_size,
            "declared_by": self.declared_by,
            "checked_size": self.checked_size,
            "profiles": dict(self.profiles),
            "backends": [lb.to_json() for lb in self.backends],
            "ids": [e.to_json() for e in self.ids],
        }

    def rich(self, console: Console) -> None:
        from tokaudit.oncall.view import explain_view

        explain_view(console, self.declared_size, self.declared_by, self.checked_size, self.ids)


def explain_id(model: TokenizerModel, backends: list[LoadedBackend], query: str, token_id: int) -> ExplainedId:
    info = token_info(model, token_id)
    # what the id adds to a text through the tokenizer's decoder (Gemma's added "▁▁" is two spaces)
    piece = TokenText(model).piece(token_id)
    token = info.token if piece is None else piece
    sources = [
        IdSource(
            profile,
            lk.layer.artifact,
            lk.source,
            lk.layer.rule,
            lk.layer.special,
            lk.token.decode("utf-8", "replace"),
            lk.token.hex(),
            is_partial_utf8(lk.token),
        )
        for profile, lk in info.lookups.items()
        if lk is not None
    ]
    return ExplainedId(
        query=query,
        id=token_id,
        in_declared_range=in_declared_range(model, token_id),
        mapped={profile: lk is not None for profile, lk in info.lookups.items()},
        sources=tuple(sources),
        bytes_hex=None if token is None else token.hex(),
        text=None if token is None else token.decode("utf-8", "replace"),
        special=info.special,
        partial_utf8=token is not None and is_partial_utf8(token),
        backends={lb.name: backend_answer(lb, token_id) for lb in backends},
    )


def backend_answer(lb: LoadedBackend, token_id: int) -> BackendAnswer:
    """What one backend's ``decode([id])`` returns: text, dropped (empty), an exception, a panic."""
    if lb.backend is None:
        return BackendAnswer(False, lb.unavailable)
    a = answer(lb.backend, token_id)
    out = a.outcome
    return BackendAnswer(
        True,
        kind=a.kind,
        text=out.value if out.ok else None,
        exception=None if out.ok else out.error_type,
        message=None if out.ok else out.error,
        panic=out.panic,
    )


def explain(model: TokenizerModel, backends: list[LoadedBackend], pairs: list[tuple[str, int]]) -> ExplainResult:
    """``pairs`` come from :func:`resolve` (called before the backends are loaded, so bad input fails fast)."""
    return ExplainResult(
        model.target,
        model.source,
        declared_size=model.declared.size,
        declared_by=model.declared.basis,
        checked_size=model.checked_size,
        profiles={name: table.description for name, table in model.profiles.items()},
        backends=tuple(backends),
        ids=tuple(explain_id(model, backends, q, i) for q, i in pairs),
    )
