"""The findings of a comparison: each pair of backends that disagree (TA6xx, with the first case and its likely
cause), a backend's own round trip, crashes, unknown ids, fallbacks to another tokenizer and the concurrency race."""

from __future__ import annotations

from typing import Any

from tokaudit.backends.base import decode_rewrite
from tokaudit.backends.registry import LoadedBackend
from tokaudit.compare import codes
from tokaudit.compare.corpus import Case
from tokaudit.compare.parity import PairResult, shown_tokens
from tokaudit.compare.race import RaceResult
from tokaudit.compare.runs import BackendRun
from tokaudit.compare.triage import NORMALIZER, REAL, UNKNOWN, Triage
from tokaudit.compare.unknown_ids import UnknownIdTable
from tokaudit.records import Provenance
from tokaudit.ids import IdRanges
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Finding, Severity
from tokaudit.report.text import plural, visible

#: A decode difference explained by a backend's known rewrite (:func:`tokaudit.backends.base.decode_rewrite`).
REWRITE = "rewrite"
REWRITE_WHAT = (
    "llama.cpp's space cleanup (llama_detokenize applies HF's clean_up_tokenization_spaces rules to this "
    'vocabulary: " ," -> ",", " \'s" -> "\'s"; HF tokenizers does not)'
)


def finding(
    code: codes.Code, message: str, target: str, details: dict[str, Any], ids: IdRanges | None = None
) -> Finding:
    return Finding(code.code, code.name, code.severity, message, None, ids, details, target)


def pair_findings(pair: PairResult, target: str) -> list[Finding]:
    out = []
    name = f"{pair.a} vs {pair.b}"
    base = {"backends": [pair.a, pair.b], "cases": pair.cases}
    if pair.encode_mismatch:
        ex = pair.examples["encode"][0]
        out.append(
            finding(
                codes.ENCODE_MISMATCH,
                f"{name}: {pair.encode_mismatch} of {plural(pair.cases, 'case')} encode to different ids "
                f"({pair.benign} benign: same decoded text, different ids; {pair.real} real: the decoded text "
                "differs). "
                f'First, {ex["case"]} at "{ex["text"]}": {pair.a} {shown_tokens(ex["a"])} vs {pair.b} '
                f"{shown_tokens(ex['b'])}",
                target,
                {
                    **base,
                    "mismatches": pair.encode_mismatch,
                    "benign": pair.benign,
                    "real": pair.real,
                    "examples": pair.examples["encode"],
                },
            )
        )
    if pair.decode_mismatch:
        ex = pair.examples["decode"][0]
        out.append(
            finding(
                codes.DECODE_MISMATCH,
                f"{name}: the same ids decode to different text in {pair.decode_mismatch} of "
                f"{plural(pair.cases, 'case')}. "
                f'First, {ex["case"]}: {pair.a} "{ex[pair.a]}" vs {pair.b} "{ex[pair.b]}"',
                target,
                {**base, "mismatches": pair.decode_mismatch, "examples": pair.examples["decode"]},
            )
        )
    if pair.decode_rewritten:
        ex = pair.examples["rewritten"][0]
        out.append(
            Finding(
                codes.DECODE_MISMATCH.code,
                codes.DECODE_MISMATCH.name,
                Severity.NOTE,
                f"{name}: in {pair.decode_rewritten} of {plural(pair.cases, 'case')} the same ids decode to text that "
                "differs only by "
                f'{REWRITE_WHAT}. First, {ex["case"]}: {pair.a} "{ex[pair.a]}" vs {pair.b} "{ex[pair.b]}"',
                None,
                None,
                {
                    **base,
                    "subject": "rewrite",
                    "mismatches": pair.decode_rewritten,
                    "examples": pair.examples["rewritten"],
                },
                target,
            )
        )
    if pair.cross_roundtrip_failure:
        ex = pair.examples["roundtrip"][0]
        out.append(
            finding(
                codes.ROUNDTRIP_FAILURE,
                f"{name}: encoding with one and decoding with the other loses the text in "
                f"{pair.cross_roundtrip_failure} of "
                f"{plural(pair.cases, 'case')} where each backend alone round-trips. First, {ex['case']} "
                f'(encode {ex["encode"]}, decode {ex["decode"]}): "{ex["input"]}" -> "{ex["output"]}"',
                target,
                {**base, "failures": pair.cross_roundtrip_failure, "examples": pair.examples["roundtrip"]},
            )
        )
    return out


def own_roundtrip_findings(
    runs: list[BackendRun],
    cases: list[Case],
    target: str,
    max_examples: int,
    triage: Triage | None = None,
    losses: dict[str, list[int]] | None = None,
) -> list[Finding]:
    """TA603 per backend for real losses; what the model's normalizer does (or its unknown token
    stands for) is the same for every backend and case, so it is one note for the model.
    ``losses``, when given, receives each backend's real losses (case indices)."""
    from tokaudit.compare.parity import text_example

    out: list[Finding] = []
    benign: dict[str, dict[str, list[int]]] = {NORMALIZER: {}, UNKNOWN: {}, REWRITE: {}}
    losses = {} if losses is None else losses
    for run in runs:
        if not run.encodes or run.ids is None:
            continue
        bad = [
            i
            for i, (c, t) in enumerate(zip(cases, run.texts))
            if t is not None and run.ids[i] is not None and t != c.text
        ]
        rewrite = decode_rewrite(run.backend)
        if rewrite is not None:  # llama.cpp's space cleanup: the same for every case, one note
            hits = [i for i in bad if rewrite(cases[i].text) == run.texts[i]]
            if hits:
                benign[REWRITE][run.name] = hits
            bad = [i for i in bad if i not in set(hits)]
        if triage is not None:
            kinds = {i: triage.classify(cases[i].text, run.texts[i]) for i in bad}  # type: ignore[arg-type]  # the run decoded: texts are set
            for kind in benign:
                hits = [i for i in bad if kinds[i] == kind]
                if hits:
                    benign[kind][run.name] = hits
            bad = [i for i in bad if kinds[i] == REAL]
        if not bad:
            continue
        losses[run.name] = bad
        examples = [
            {
                **text_example(cases[i], run.ids[i], cases[i].text, run.texts[i], "input", "output"),  # type: ignore[arg-type]  # the run encoded and decoded
                "encode": run.name,
                "decode": run.name,
            }
            for i in bad[:max_examples]
        ]
        ex = examples[0]
        out.append(
            finding(
                codes.ROUNDTRIP_FAILURE,
                f"{run.name}: decode(encode(text)) differs from the text in {len(bad)} of "
                f"{plural(len(cases), 'case')}. "
                f'First, {ex["case"]}: "{ex["input"]}" -> "{ex["output"]}"',
                target,
                {"backend": run.name, "failures": len(bad), "examples": examples},
            )
        )
    if triage is not None or benign[REWRITE]:
        out += _benign_roundtrips(benign, runs, cases, target, max_examples, triage)
    return out


def _benign_roundtrips(
    benign: dict[str, dict[str, list[int]]],
    runs: list[BackendRun],
    cases: list[Case],
    target: str,
    max_examples: int,
    triage: Triage | None,
) -> list[Finding]:
    from tokaudit.compare.parity import text_example

    out: list[Finding] = []
    by_name = {r.name: r for r in runs}
    for kind, per_backend in benign.items():
        if not per_backend:
            continue
        first_backend = next(iter(per_backend))
        run = by_name[first_backend]
        shown = per_backend[first_backend][:max_examples]
        examples = [
            {
                **text_example(cases[i], run.ids[i], cases[i].text, run.texts[i], "input", "output"),  # type: ignore[arg-type, index]  # the run encoded and decoded
                "encode": run.name,
                "decode": run.name,
            }
            for i in shown
        ]
        ex = examples[0]
        counts = ", ".join(f"{name} {len(ids)}" for name, ids in per_backend.items())
        most = max(len(ids) for ids in per_backend.values())
        if kind == REWRITE:
            message = (
                f"decode(encode(text)) differs from the text in {most} of {plural(len(cases), 'case')} only by "
                f"{REWRITE_WHAT}"
            )
        elif triage is None:
            continue
        elif kind == NORMALIZER:
            what = triage.normalizer or "the normalizer"
            if triage.whitespace:
                what += f"; {triage.whitespace}"
            if triage.segment_prefix:
                what += f"; {triage.segment_prefix}, so decode shows a space after each"
            message = (
                f"decode(encode(text)) differs from the text in {most} of {plural(len(cases), 'case')} only by what "
                "the "
                f"model's normalizer does ({what}), the same for every backend"
            )
        else:
            message = (
                f"decode(encode(text)) shows {triage.unk_token} in {most} of {plural(len(cases), 'case')}: the "
                "vocabulary "
                "has no token for some characters (the model sees the unknown token there)"
            )
        if triage is not None and triage.assumption and not out:  # said once
            message += f". {triage.assumption}"
        out.append(
            Finding(
                codes.ROUNDTRIP_FAILURE.code,
                codes.ROUNDTRIP_FAILURE.name,
                Severity.NOTE,
                f'{message}. Per backend: {counts}. First, {ex["case"]}: "{ex["input"]}" -> "{ex["output"]}"',
                None,
                None,
                {
                    "subject": kind,
                    "normalizer": triage and triage.normalizer,
                    "whitespace": triage and triage.whitespace,
                    "unk_token": triage and triage.unk_token,
                    "assumption": triage and triage.assumption,
                    "backends": {name: len(ids) for name, ids in per_backend.items()},
                    "failures": most,
                    "examples": examples,
                },
                target,
            )
        )
    return out


def crash_findings(runs: list[BackendRun], cases: list[Case], target: str, max_examples: int) -> list[Finding]:
    out = []
    for run in runs:
        if not run.crashes:
            continue
        first = run.crashes[0]
        examples = [
            {
                "case": cases[c.case].source,
                "operation": c.operation,
                "input": visible(cases[c.case].text[:80]),
                "error_type": "PanicException" if c.outcome.panic else c.outcome.error_type,
                "error": c.outcome.error,
            }
            for c in run.crashes[:max_examples]
        ]
        ex = examples[0]
        out.append(
            finding(
                codes.BACKEND_CRASH,
                f"{run.name}: {first.operation} raised in {plural(len(run.crashes), 'case')}. First, {ex['case']} "
                f'("{ex["input"]}"): {ex["error_type"]}: {ex["error"]}',
                target,
                {"backend": run.name, "crashes": len(run.crashes), "examples": examples},
            )
        )
    return out


def unknown_id_findings(table: UnknownIdTable, target: str) -> list[Finding]:
    out: list[Finding] = []
    differing = table.differing()
    if differing:
        rows = []
        for probe in differing:
            k = table.probes.index(probe)
            shown = ", ".join(f"{name} {_short(answers[k])}" for name, answers in table.answers.items())
            rows.append(f"{probe.label} ({probe.id}): {shown}")
        out.append(
            finding(
                codes.UNKNOWN_ID_BEHAVIOUR,
                "backends disagree on ids they may not know: " + "; ".join(rows),
                target,
                table.to_json(),
                IdRanges.from_ids(p.id for p in differing if p.id >= 0),
            )
        )
    for name, answers in table.answers.items():
        for probe, a in zip(table.probes, answers):
            if a.kind == "panic":
                out.append(
                    finding(
                        codes.BACKEND_CRASH,
                        f"{name}: decode([{probe.id}]) ({probe.label}) panicked: {a.value}",
                        target,
                        {
                            "backend": name,
                            "crashes": 1,
                            "examples": [
                                {
                                    "case": f"unknown id {probe.label}",
                                    "operation": "decode",
                                    "input": f"[{probe.id}]",
                                    "error_type": "PanicException",
                                    "error": a.outcome.error,
                                }
                            ],
                        },
                    )
                )
    return out


def _short(a: Any) -> str:
    """An unknown-id answer in a few words: "dropped", "text 'x'", "KeyError", "panic"."""
    if a.kind == "text":
        return f"text '{a.value}'"
    if a.kind == "error":
        return a.value.split(":", 1)[0]
    return a.kind


def fallback_findings(model: TokenizerModel, loaded: list[LoadedBackend]) -> list[Finding]:
    """TA306 when fastokens was asked for and refuses the model's tokenizer.json (Dynamo's silent fallback)."""
    tj = model.artifacts.tokenizer_json
    if tj is None or not any(lb.name == "fastokens" and lb.unavailable for lb in loaded):
        return []
    from tokaudit.model.fastokens_probe import cached_probe, fallback_details, fallback_message
    from tokaudit.report.finding import catalog_code

    probe = cached_probe(tj.path)
    if probe is None or probe.error is None:  # not installed, or not the file's fault
        return []
    code = catalog_code("TA306")  # the scan rule's code: the same fallback, found by compare's own load
    return [
        Finding(
            code.code,
            code.name,
            code.severity,
            fallback_message(probe, tj.name),
            Provenance(tj.name),
            None,
            fallback_details(probe),
            model.target,
        )
    ]


def race_findings(races: list[RaceResult], target: str) -> list[Finding]:
    out = []
    for r in races:
        failures = r.failures()
        if failures:
            f = failures[0]
            out.append(
                finding(
                    codes.BACKEND_CRASH,
                    f"{r.backend}: {len(failures)} of {r.concurrency * 2} concurrent loads failed. First, {f.mode} "
                    f"{f.index}: {f.error}",
                    target,
                    {"backend": r.backend, "crashes": len(failures), "race": r.to_json()},
                )
            )
        groups = r.groups()
        ok_groups = {sig for sig in groups if sig[2] is None}
        if len(ok_groups) > 1:
            desc = "; ".join(f"{len(groups[sig])} load(s) produced {sig[0]}" for sig in ok_groups)
            out.append(
                finding(
                    codes.ENCODE_MISMATCH,
                    f"{r.backend}: concurrent loads of the same files produced different tokenizers: {desc}",
                    target,
                    {"backend": r.backend, "race": r.to_json()},
                )
            )
    return out


# -- result ---------------------------------------------------------------------------------------
