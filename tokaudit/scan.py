"""``scan``: load one target, build its model, run the selected rules."""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from tokaudit.artifacts.load import Artifacts, load_artifacts
from tokaudit.checks.registry import Rule, run_rules
from tokaudit.collector import collector_paused
from tokaudit.errors import InputError
from tokaudit.model.loaders import loader_views
from tokaudit.model.tokenizer_model import TokenizerModel, build_model
from tokaudit.report.finding import Finding
from tokaudit.report.report import TargetResult
from tokaudit.rules import all_rules
from tokaudit.source.resolve import resolve


def load_model(target: str, revision: str | None = None, pat_str: str | None = None) -> TokenizerModel:
    """``pat_str``: a --pat-str for the encoders built from this model (scan --deep, template)."""
    source = resolve(target, revision)
    # millions of containers (a 262k vocabulary, its merges), long-lived and acyclic: the collector would only
    # re-scan them (a third of a Gemma 3 load); frozen out of later collections (see tokaudit.collector)
    with collector_paused(freeze=True):
        model = build_model(load_artifacts(source.path), source.display)
    return replace(model, pat_str=pat_str, source=replace(source, primary=model.vocab_artifact or None))


def scan_model(model: TokenizerModel, rules: Iterable[Rule] | None = None) -> tuple[TargetResult, list[Finding]]:
    chosen = [r for r in all_rules() if not r.deep] if rules is None else list(rules)
    findings = list(run_rules(model, chosen))
    data = {
        "artifacts": artifact_summary(model.artifacts),
        "vocab": vocab_summary(model),
        "loaders": [view.to_json() for view in loader_views(model)],
        "rules": [{"code": r.code, "name": r.name} for r in chosen],
    }
    gguf = gguf_summary(model)
    if gguf is not None:
        data["gguf"] = gguf
    missing = not_checked(model)
    if missing:
        data["not_checked"] = missing
    return TargetResult(model.target, data, source=model.source), findings


def not_checked(model: TokenizerModel) -> list[str]:
    """What a scan of this model could not check for lack of an optional library (the report's headline says it)."""
    from tokaudit.model.fastokens_probe import installed
    from tokaudit.template.ollama import find_index, gguf_template

    out = []
    if model.artifacts.tokenizer_json is not None and not installed():
        out.append("Dynamo's fastokens encoder (fastokens is not installed: pip install 'tokaudit[fastokens]')")
    if gguf_template(model) is not None and find_index() is None:
        out.append(
            "Ollama's template substitution (no Ollama template index: set TOKAUDIT_OLLAMA_INDEX to its "
            "template/index.json)"
        )
    return out


def scan_targets(
    targets: Sequence[str],
    revision: str | None,
    rules: Sequence[Rule],
    jobs: int = 1,
    pat_str: str | None = None,
    keep_going: bool | None = None,
) -> tuple[list[TargetResult], list[Finding], dict[str, str]]:
    """Scan several targets (``jobs`` threads); results and findings in the order the targets were given, and
    the targets that could not be read (target -> error line): the others are scanned all the same, so a CI
    report (SARIF, JUnit) still covers them.

    Without ``keep_going`` (default: when there are several targets), a target that cannot be read raises its
    InputError.
    """
    going_on = len(targets) > 1 if keep_going is None else keep_going

    def one(target: str) -> tuple[TargetResult, list[Finding]] | InputError:
        try:
            return scan_model(load_model(target, revision, pat_str), rules)
        except InputError as exc:
            if not going_on:
                raise
            return exc

    if jobs <= 1 or len(targets) <= 1:
        outcomes = [one(t) for t in targets]
    else:
        from concurrent.futures import ThreadPoolExecutor  # only with --jobs: ~10 ms to import

        with ThreadPoolExecutor(max_workers=min(jobs, len(targets))) as pool:
            futures = [pool.submit(contextvars.copy_context().run, one, t) for t in targets]
            outcomes = [f.result() for f in futures]
    results = [o[0] for o in outcomes if not isinstance(o, InputError)]
    findings = [f for o in outcomes if not isinstance(o, InputError) for f in o[1]]
    unreadable = {t: str(o) for t, o in zip(targets, outcomes) if isinstance(o, InputError)}
    return results, findings, unreadable


def artifact_summary(a: Artifacts) -> list[dict[str, Any]]:
    """One row per parsed file: its kind and how many entries it holds."""
    rows = []
    for kind, record in a.present():
        rows.append({"file": record.name, "kind": kind, "entries": a.entries(kind, record)})  # type: ignore[attr-defined]
    return rows


def vocab_summary(model: TokenizerModel) -> dict[str, Any]:
    size = model.checked_size
    files = model.files.mapped
    unmapped = files.complement(size)
    return {
        "declared_size": model.declared.size,
        "declared_by": model.declared.basis,
        "declared_source": model.declared.source.to_json() if model.declared.source else None,
        "vocab_artifact": model.vocab_artifact,
        "mapped": files.count,
        "unmapped": unmapped.count,
        "sizes": model.sizes.to_json(),
        "profiles": {
            name: {
                "description": table.description,
                "mapped": table.mapped.count,
                "unmapped": table.mapped.complement(size).count,
                "unmapped_ids": table.mapped.complement(size).to_json(),
            }
            for name, table in model.profiles.items()
        },
    }


def gguf_summary(model: TokenizerModel) -> dict[str, Any] | None:
    """What llama.cpp makes of the target's GGUF: its flags, special ids and the three stop sets side by side
    (llama.cpp's EOG set, the eos id(s) other runtimes stop on, the chat template's end of turn)."""
    g = model.artifacts.gguf
    if g is None:
        return None
    from tokaudit.checks.common import find_content, turn_terminator

    load = model.llamacpp
    assert load is not None  # the model has a GGUF

    def token(i: int | None) -> dict[str, Any] | None:
        if i is None:
            return None
        text = g.tokens[i].decode("utf-8", "replace") if 0 <= i < len(g.tokens) else None
        return {"id": i, "token": text}

    eos = load.id_of("eos")
    eos_ids = sorted({eos} if eos is not None else set()) if not g.eos_token_ids else sorted(set(g.eos_token_ids))
    term = turn_terminator(model)
    hit = find_content(model.files, term.text) if term is not None else None
    term_id = hit[0] if hit is not None else None
    end_of_turn = (
        None
        if term is None
        else {
            "token": term.text,
            "id": term_id,
            "llamacpp_stops": term_id in load.eog if term_id is not None else False,
            "eos_only_runtimes_stop": term_id in eos_ids if term_id is not None else False,
        }
    )
    return {
        "file": g.path.name,
        "version": g.version,
        "byte_order": g.byte_order,
        "shards": g.shard_count,
        "bytes_read": g.bytes_read,
        "architecture": g.arch,
        "model": g.model,
        "vocab_type": load.vocab_type,
        "pre": load.pre,
        "pre_state": load.pre_state,
        "pre_family": load.pre_family,
        "flags": {k: {"value": v, "set_by": load.flag_origin.get(k)} for k, v in load.flags.items()},
        "special": {
            name: {**(token(s.id) or {"id": None, "token": None}), "origin": s.origin, "bad_value": s.bad_value}
            for name, s in load.special.items()
            if s.id is not None or s.bad_value is not None
        },
        "eog": [{**token(i), "why": why} for i, why in sorted(load.eog.items())],  # type: ignore[dict-item]
        "eos_ids": [token(i) for i in eos_ids],
        "end_of_turn": end_of_turn,
        "control_override": sorted(load.control_override),
        "templates": sorted(g.chat_templates),
        "load_error": load.load_error,
        "llamacpp_warnings": list(load.warnings),
    }
