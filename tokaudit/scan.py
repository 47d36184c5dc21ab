"""``scan``: load one target, build its model, run the selected rules."""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from tokaudit.artifacts.load import Artifacts, load_artifacts
from tokaudit.checks.registry import Rule, run_rules
from tokaudit.model.loaders import loader_views
from tokaudit.model.tokenizer_model import TokenizerModel, build_model
from tokaudit.report.finding import Finding
from tokaudit.report.report import TargetResult
from tokaudit.rules import all_rules
from tokaudit.source.resolve import resolve


def load_model(target: str, revision: str | None = None, pat_str: str | None = None) -> TokenizerModel:
    """``pat_str``: a --pat-str for the encoders built from this model (scan --deep, template)."""
    source = resolve(target, revision)
    model = build_model(load_artifacts(source.path), source.display)
    return replace(model, pat_str=pat_str) if pat_str else model


def scan_model(model: TokenizerModel, rules: Iterable[Rule] | None = None) -> tuple[TargetResult, list[Finding]]:
    chosen = [r for r in all_rules() if not r.deep] if rules is None else list(rules)
    findings = list(run_rules(model, chosen))
    data = {
        "artifacts": artifact_summary(model.artifacts),
        "vocab": vocab_summary(model),
        "loaders": [view.to_json() for view in loader_views(model)],
        "rules": [{"code": r.code, "name": r.name} for r in chosen],
    }
    return TargetResult(model.target, data), findings


def scan_targets(
    targets: Sequence[str], revision: str | None, rules: Sequence[Rule], jobs: int = 1, pat_str: str | None = None
) -> tuple[list[TargetResult], list[Finding]]:
    """Scan several targets (``jobs`` threads); results and findings in the order the targets were given.

    The first target that cannot be read raises its InputError, as a single target would.
    """

    def one(target: str) -> tuple[TargetResult, list[Finding]]:
        return scan_model(load_model(target, revision, pat_str), rules)

    if jobs <= 1 or len(targets) <= 1:
        outcomes = [one(t) for t in targets]
    else:
        from concurrent.futures import ThreadPoolExecutor  # only with --jobs: ~10 ms to import

        with ThreadPoolExecutor(max_workers=min(jobs, len(targets))) as pool:
            futures = [pool.submit(contextvars.copy_context().run, one, t) for t in targets]
            outcomes = [f.result() for f in futures]
    results = [r for r, _ in outcomes]
    findings = [f for _, found in outcomes for f in found]
    return results, findings


def artifact_summary(a: Artifacts) -> list[dict[str, Any]]:
    """One row per parsed file: its kind and how many entries it holds."""
    rows = []
    for kind, record in a.present():
        rows.append({"file": record.name, "kind": kind, "entries": _entries(kind, record)})  # type: ignore[attr-defined]
    return rows


def _entries(kind: str, record: Any) -> int | None:
    if kind in ("tiktoken", "tekken", "sentencepiece"):
        return len(record.by_id)
    if kind in ("tokenizer_json", "vocab_json", "vocab_txt"):
        return len(record.vocab) + len(getattr(record, "added_tokens", ()))
    if kind == "tokenizer_config":
        return len(record.added_tokens_decoder)
    if kind == "merges":
        return len(record.merges)
    if kind == "remote_code":
        return sum(len(lst.tokens) for lst in record.special_token_lists) + (record.num_reserved_special_tokens or 0)
    return None


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
