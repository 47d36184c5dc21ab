"""What each backend does when asked to decode an id it may not know: the unknown-id table.

Probes: the first id in a gap inside the declared range, the last declared id, the declared size
(first id beyond it), 2**32 (beyond u32) and -1. Each backend's answer is classified as text,
dropped (empty string), an exception type, or a Rust panic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tokaudit.backends.base import Backend, Outcome, call
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.text import visible


#: tokaudit's own backends (yardsticks, not libraries a server loads the model with).
OWN_BACKENDS = frozenset({"strict", "reference"})


@dataclass(frozen=True)
class Probe:
    label: str
    id: int


@dataclass(frozen=True)
class Answer:
    #: "text", "dropped", "error" or "panic"
    kind: str
    #: the text, or the exception type and first line of its message
    value: str
    outcome: Outcome

    def key(self) -> tuple[str, str]:
        """What must agree across backends: the kind, and the text itself for text answers."""
        return (self.kind, self.value if self.kind == "text" else "")

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "value": self.value}


def probes(model: TokenizerModel) -> list[Probe]:
    size = model.checked_size
    mapped = model.files.mapped
    out = []
    gap = mapped.complement(size)
    if gap:
        out.append(Probe("gap", gap.ranges[0][0]))
    if size > 0:
        out.append(Probe("last declared", size - 1))
    out += [Probe("declared size", size), Probe("2**32", 2**32), Probe("negative", -1)]
    # two probes on one id (a gap at the very end) say the same thing: keep the first
    seen: set[int] = set()
    return [p for p in out if not (p.id in seen or seen.add(p.id))]  # type: ignore[func-returns-value]  # set.add's None keeps the first of each id


def answer(backend: Backend, token_id: int) -> Answer:
    out = call(backend.decode, [token_id])
    if out.panic:
        return Answer("panic", f"PanicException: {out.error}", out)
    if not out.ok:
        return Answer("error", f"{out.error_type}: {out.error}", out)
    return Answer("dropped", "", out) if out.value == "" else Answer("text", visible(str(out.value)), out)


@dataclass(frozen=True)
class UnknownIdTable:
    probes: list[Probe]
    #: backend name -> one answer per probe
    answers: dict[str, list[Answer]]

    def _differing(self, names: list[str]) -> list[Probe]:
        out = []
        for k, probe in enumerate(self.probes):
            if len({self.answers[name][k].key() for name in names}) > 1:
                out.append(probe)
        return out

    def differing(self) -> list[Probe]:
        """Probes on which the model's own backends (the libraries that serve it) do not all answer
        alike. tokaudit's strict and reference backends are yardsticks, not loaders of the model: a
        disagreement only they have is not a finding about the model."""
        return self._differing([name for name in self.answers if name not in OWN_BACKENDS])

    def own_differing(self) -> list[Probe]:
        """Probes on which only tokaudit's own backends answer differently from the libraries."""
        real = set(self.differing())
        return [p for p in self._differing(list(self.answers)) if p not in real]

    def to_json(self) -> dict[str, Any]:
        return {
            "probes": [{"label": p.label, "id": p.id} for p in self.probes],
            "backends": {name: [a.to_json() for a in answers] for name, answers in self.answers.items()},
            "differing": [p.label for p in self.differing()],
            "differing_only_tokaudit_backends": [p.label for p in self.own_differing()],
        }


def unknown_id_table(model: TokenizerModel, backends: list[Backend]) -> UnknownIdTable:
    table = probes(model)
    return UnknownIdTable(table, {b.name: [answer(b, p.id) for p in table] for b in backends})
