"""``scan``: load each target's model, run the selected rules, and build its result."""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Sequence

from tokaudit.checks.registry import Rule, run_rules
from tokaudit.errors import InputError
from tokaudit.model.load import load_model
from tokaudit.model.loaders import loader_views
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Finding
from tokaudit.rules import all_rules
from tokaudit.scan.result import ScanResult
from tokaudit.scan.summary import artifact_summary, gguf_summary, vocab_summary


def scan_model(model: TokenizerModel, rules: Iterable[Rule] | None = None) -> tuple[ScanResult, list[Finding]]:
    chosen = [r for r in all_rules() if not r.deep] if rules is None else list(rules)
    findings = list(run_rules(model, chosen))
    result = ScanResult(
        model.target,
        model.source,
        artifacts=artifact_summary(model.artifacts),
        vocab=vocab_summary(model),
        loaders=tuple(loader_views(model)),
        rules=tuple((r.code, r.name) for r in chosen),
        gguf=gguf_summary(model),
        not_checked=tuple(not_checked(model)),
    )
    return result, findings


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
) -> tuple[list[ScanResult], list[Finding], dict[str, str]]:
    """Scan several targets (``jobs`` threads); results and findings in the order the targets were given, and
    the targets that could not be read (target -> error line): the others are scanned all the same, so a CI
    report (SARIF, JUnit) still covers them.

    Without ``keep_going`` (default: when there are several targets), a target that cannot be read raises its
    InputError.
    """
    going_on = len(targets) > 1 if keep_going is None else keep_going

    def one(target: str) -> tuple[ScanResult, list[Finding]] | InputError:
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
