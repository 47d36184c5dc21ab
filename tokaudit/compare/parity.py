"""Parity of two backend runs: encode ids, decode text, round trips, with triage and first examples.

Work beyond each backend's own encode and decode is done only where ids differ: there each
backend also decodes the other's ids (cross decode), which is what a hybrid deployment does
(a fast encoder next to another engine's decoder).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tokaudit.backends.base import call, decode_rewrite
from tokaudit.compare.corpus import Case
from tokaudit.compare.runs import BackendRun
from tokaudit.report.text import token_text, visible

#: Tokens of context shown before the first difference, and at most this many tokens per side.
CONTEXT_TOKENS = 2
WINDOW_TOKENS = 12
SNIPPET_CHARS = 24


@dataclass
class PairResult:
    a: str
    b: str
    #: "encode" when both backends encode, "decode" when one is decode-only.
    kind: str
    cases: int = 0
    encode_mismatch: int = 0
    benign: int = 0
    real: int = 0
    decode_mismatch: int = 0
    #: decode differences that are only one side's known rewrite of the other's text (llama.cpp's space cleanup)
    decode_rewritten: int = 0
    roundtrip_failure: int = 0
    #: Cross round trips (encode with one, decode with the other) that fail while both own round trips hold.
    cross_roundtrip_failure: int = 0
    examples: dict[str, list[dict[str, Any]]] = field(
        default_factory=lambda: {"encode": [], "decode": [], "roundtrip": [], "rewritten": []}
    )

    def to_json(self) -> dict[str, Any]:
        return {
            "backends": [self.a, self.b],
            "kind": self.kind,
            "cases": self.cases,
            "encode_mismatch": self.encode_mismatch if self.kind == "encode" else None,
            "encode_mismatch_benign": self.benign if self.kind == "encode" else None,
            "encode_mismatch_real": self.real if self.kind == "encode" else None,
            "decode_mismatch": self.decode_mismatch,
            "decode_rewritten": self.decode_rewritten,
            "roundtrip_failure": self.roundtrip_failure if self.kind == "encode" else None,
            "cross_roundtrip_failure": self.cross_roundtrip_failure if self.kind == "encode" else None,
            "examples": self.examples,
        }


class TokenView:
    """Token text for display: the files profile's bytes of an id, made visible."""

    def __init__(self, tokens: dict[int, bytes]) -> None:
        self.tokens = tokens

    def __call__(self, i: int) -> str:
        token = self.tokens.get(i)
        return "?" if token is None else token_text(token)

    def byte_length(self, ids: list[int]) -> int:
        return sum(len(self.tokens.get(i, b"")) for i in ids)


def _decoded(run: BackendRun, ids: list[int]) -> str:
    """Cross decode; an exception becomes a text that cannot equal any real decode."""
    out = call(run.backend.decode, ids)
    return out.value if out.ok else f"\x00<{out.error_type}: {out.error}>"


def _shown(text: str | None) -> str:
    if text is None:
        return "—"
    if text.startswith("\x00<"):
        return text[1:]
    return visible(text)


def _first_difference(x: str, y: str) -> int:
    n = min(len(x), len(y))
    for k in range(n):
        if x[k] != y[k]:
            return k
    return n


def _snippet(text: str, at: int) -> str:
    """The text from a little before ``at`` (where two versions first differ), made visible."""
    lo = max(0, at - SNIPPET_CHARS // 3)
    hi = at + SNIPPET_CHARS
    return ("…" if lo else "") + visible(text[lo:hi]) + ("…" if hi < len(text) else "")


def _side(ids: list[int], lo: int, hi: int, view: TokenView) -> dict[str, Any]:
    window = ids[lo : min(hi, lo + WINDOW_TOKENS)]
    return {"ids": window, "tokens": [view(i) for i in window], "truncated": hi - lo > WINDOW_TOKENS}


def shown_tokens(side: dict[str, Any]) -> str:
    """'ab' 'c' (ids 1, 2): the tokens around a difference (one side of :func:`encode_example`) and their ids."""
    more = " …" if side["truncated"] else ""
    return " ".join(f"'{t}'" for t in side["tokens"]) + f"{more} (ids {', '.join(map(str, side['ids']))}{more})"


def encode_example(
    case: Case,
    ids_a: list[int],
    ids_b: list[int],
    text_a: str,
    text_b: str,
    view: TokenView,
    benign: bool | None = None,
) -> dict[str, Any]:
    """The tokens around the first difference, side by side, and where in the text it is. ``benign``: the
    decoded texts agree (by default: they are equal)."""
    p = 0
    n = min(len(ids_a), len(ids_b))
    while p < n and ids_a[p] == ids_b[p]:
        p += 1
    s = 0
    while s < n - p and ids_a[-1 - s] == ids_b[-1 - s]:
        s += 1
    lo = max(0, p - CONTEXT_TOKENS)
    prefix_bytes = view.byte_length(ids_a[:p])
    at = len(case.text.encode("utf-8")[:prefix_bytes].decode("utf-8", "ignore"))
    out = {
        "case": case.source,
        "text": _snippet(case.text, at),
        "char_offset": at,
        "token_index": p,
        "class": "benign" if (text_a == text_b if benign is None else benign) else "real",
        "a": _side(ids_a, lo, len(ids_a) - s, view),
        "b": _side(ids_b, lo, len(ids_b) - s, view),
    }
    if text_a != text_b:
        k = _first_difference(text_a, text_b)
        out["decoded"] = {"a": _snippet(text_a, k), "b": _snippet(text_b, k)}
    return out


def text_example(
    case: Case, ids: list[int], text_a: str | None, text_b: str | None, label_a: str, label_b: str
) -> dict[str, Any]:
    k = _first_difference(text_a or "", text_b or "")
    return {
        "case": case.source,
        "ids": ids[:WINDOW_TOKENS],
        "ids_truncated": len(ids) > WINDOW_TOKENS,
        "char_offset": k,
        label_a: _shown(text_a) if text_a is None or text_a.startswith("\x00<") else _snippet(text_a, k),
        label_b: _shown(text_b) if text_b is None or text_b.startswith("\x00<") else _snippet(text_b, k),
    }


def rewritten(run: BackendRun) -> Any:
    """``holds(expected, got)``: ``got`` is ``expected``, or what the run's backend's known decode rewrite makes of
    it."""
    rewrite = decode_rewrite(run.backend)
    if rewrite is None:
        return lambda expected, got: expected == got
    return lambda expected, got: expected == got or rewrite(expected) == got


def compare_encoders(a: BackendRun, b: BackendRun, cases: list[Case], view: TokenView, max_examples: int) -> PairResult:
    assert a.ids is not None and b.ids is not None
    res = PairResult(a.name, b.name, "encode")
    ex = res.examples
    holds_a, holds_b = rewritten(a), rewritten(b)

    def alike(text_a: str, text_b: str) -> bool:
        """a's decode and b's decode of the same ids agree, up to either backend's known rewrite."""
        return holds_b(text_a, text_b) or holds_a(text_b, text_a)

    def keep(kind: str, make: Any) -> None:
        if len(ex[kind]) < max_examples:
            ex[kind].append(make())

    for i, case in enumerate(cases):
        ids_a, ids_b, own_a, own_b = a.ids[i], b.ids[i], a.texts[i], b.texts[i]
        if ids_a is None or ids_b is None or own_a is None or own_b is None:
            continue  # a crash: reported as backend-crash
        res.cases += 1
        x = case.text
        if ids_a == ids_b:
            if own_a != own_b and alike(own_a, own_b):
                res.decode_rewritten += 1
                keep("rewritten", lambda: text_example(case, ids_a, own_a, own_b, a.name, b.name))
            elif own_a != own_b:
                res.decode_mismatch += 1
                keep("decode", lambda: text_example(case, ids_a, own_a, own_b, a.name, b.name))
            if not holds_a(x, own_a) or not holds_b(x, own_b):
                res.roundtrip_failure += 1
                bad = a if own_a != x else b
                keep(
                    "roundtrip",
                    lambda: {
                        **text_example(case, ids_a, x, own_a if bad is a else own_b, "input", "output"),
                        "encode": bad.name,
                        "decode": bad.name,
                    },
                )
            continue
        res.encode_mismatch += 1
        if alike(own_a, own_b):
            res.benign += 1
        else:
            res.real += 1
        keep("encode", lambda: encode_example(case, ids_a, ids_b, own_a, own_b, view, alike(own_a, own_b)))
        b_of_a, a_of_b = _decoded(b, ids_a), _decoded(a, ids_b)
        if not alike(own_a, b_of_a) or not alike(a_of_b, own_b):
            res.decode_mismatch += 1
            if not alike(own_a, b_of_a):
                keep("decode", lambda: text_example(case, ids_a, own_a, b_of_a, a.name, b.name))
            else:
                keep("decode", lambda: text_example(case, ids_b, a_of_b, own_b, a.name, b.name))
        combos = [
            (a.name, a.name, own_a, holds_a),
            (b.name, b.name, own_b, holds_b),
            (a.name, b.name, b_of_a, holds_b),
            (b.name, a.name, a_of_b, holds_a),
        ]
        failing = [(e, d, t) for e, d, t, holds in combos if not holds(x, t)]
        if failing:
            res.roundtrip_failure += 1
            if holds_a(x, own_a) and holds_b(x, own_b):
                res.cross_roundtrip_failure += 1
            e, d, t = failing[0]
            keep(
                "roundtrip",
                lambda: {
                    **text_example(case, a.ids[i] if e == a.name else b.ids[i], x, t, "input", "output"),  # type: ignore[arg-type]  # both encoded the case
                    "encode": e,
                    "decode": d,
                },
            )
    return res


def compare_decoder(
    enc: BackendRun, dec: BackendRun, cases: list[Case], primary: BackendRun, max_examples: int
) -> PairResult:
    """An encoding backend against a decode-only one, on the primary encoder's ids."""
    assert primary.ids is not None
    res = PairResult(enc.name, dec.name, "decode")
    for i, case in enumerate(cases):
        ids, text_d = primary.ids[i], dec.texts[i]
        if ids is None or text_d is None:
            continue
        if enc is primary or (enc.ids is not None and enc.ids[i] == ids):
            text_e = enc.texts[i]
        else:
            text_e = _decoded(enc, ids)
        if text_e is None:
            continue
        res.cases += 1
        if text_e != text_d:
            res.decode_mismatch += 1
            if len(res.examples["decode"]) < max_examples:
                res.examples["decode"].append(text_example(case, ids, text_e, text_d, enc.name, dec.name))
    return res
