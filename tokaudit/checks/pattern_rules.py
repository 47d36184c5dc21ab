"""Pre-tokenizer patterns across regex engines (TA305 pattern-portability)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from tokaudit.records import Provenance
from tokaudit.artifacts.pattern import Pattern, search_pattern
from tokaudit.backends.pattern import ENGINES, Divergence, divergences, shrink, translate_for_onig
from tokaudit.checks.registry import rule
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Finding, Severity
from tokaudit.report.text import visible
from tokaudit.result_cache import cache_key, conforms, load, store

#: Longest pattern probed (real ones are under 2 KB); longer ones are reported as not probed.
MAX_PATTERN_CHARS = 20_000
#: Wall-clock budget for probing one pattern on every engine.
BUDGET_SECONDS = 2.0


def _patterns(model: TokenizerModel) -> list[Pattern]:
    """The model's own pattern and every pattern tokenizer.json ships, once each."""
    a = model.artifacts
    out: dict[str, Pattern] = {}
    own = search_pattern(a).pattern
    if own is not None:
        out[own.regex] = own
    if a.tokenizer_json is not None:
        for regex in a.tokenizer_json.patterns:
            out.setdefault(
                regex,
                Pattern(
                    regex,
                    f"{a.tokenizer_json.name} pre_tokenizer",
                    Provenance(a.tokenizer_json.name, key="pre_tokenizer"),
                    "oniguruma",
                ),
            )
    return list(out.values())


def _who(engine: str) -> str:
    return {"fancy-regex": "tiktoken (fancy-regex)", "oniguruma": "tokenizers (Oniguruma)", "regex": "Python regex"}[
        engine
    ]


def probe_pattern(regex: str) -> dict[str, Any]:
    """What TA305 computes from one pattern, as JSON: the probes the engines split differently, the engines
    that reject it, whether the probes ran within the budget and, when some differ, the shrunk example, the
    Oniguruma translation and whether it still differs. A pure function of the pattern and the engines'
    versions, kept in the result cache when it ran well within every time limit."""
    from tokaudit.report.report import installed_version

    inputs = {
        "regex": regex,
        "budget": BUDGET_SECONDS,
        "versions": {dist: installed_version(dist) for dist in ("tiktoken", "tokenizers", "regex")},
    }
    key = cache_key("ta305-probe", inputs, (__name__, "tokaudit.backends.pattern"))
    hit = load(key, lambda v: conforms(v, _PROBE) and (not v["found"] or "example" in v))
    if hit is not None:
        return hit
    import regex as _regex, tiktoken as _tiktoken, tokenizers as _tokenizers  # noqa: F401, E401 - loaded before the clock starts

    start = time.perf_counter()
    found, rejected, complete = divergences(regex, budget_seconds=BUDGET_SECONDS)
    out: dict[str, Any] = {"found": [[d.text, d.pieces] for d in found], "rejected": rejected, "complete": complete}
    if found:
        example = shrink(regex, found[0].text) or found[0]
        translated = translate_for_onig(regex)
        fixed, _, fixed_complete = divergences(
            regex, ("fancy-regex", "oniguruma"), onig_regex=translated, budget_seconds=BUDGET_SECONDS
        )
        out.update(example=[example.text, example.pieces], translated=translated, fixed=bool(fixed))
        complete = complete and fixed_complete
    # complete: no engine call was cut short by its clock; and well within the budget, so a loaded machine could not
    # have changed the result
    if complete and time.perf_counter() - start < 0.5:
        store(key, out)
    return out


#: A cached probe: each divergence is a text and each engine's pieces of it.
_DIVERGENCE = (str, {str: [str]})
_PROBE = {
    "found": [_DIVERGENCE],
    "rejected": {str: str},
    "complete": bool,
    "example?": _DIVERGENCE,
    "translated?": str,
    "fixed?": bool,
}


@rule("TA305")
def pattern_portability(model: TokenizerModel) -> Iterator[Finding]:
    for pattern in _patterns(model):
        if len(pattern.regex) > MAX_PATTERN_CHARS:
            yield pattern_portability.finding(
                f"the pattern from {pattern.source} is {len(pattern.regex)} characters long (limit "
                f"{MAX_PATTERN_CHARS}): "
                "not probed, so whether tiktoken, tokenizers and Python regex split text the same way is unknown.",
                severity=Severity.NOTE,
                location=pattern.location,
                details={"source": pattern.source, "probed": False, "length": len(pattern.regex)},
            )
            continue
        probe = probe_pattern(pattern.regex)
        found = [Divergence(text, pieces) for text, pieces in probe["found"]]
        rejected: dict[str, str] = probe["rejected"]
        complete: bool = probe["complete"]
        engines_run = [e for e in ENGINES if e not in rejected]
        if rejected and pattern.engine not in rejected:
            names = ", ".join(f"{_who(e)}: {why}" for e, why in rejected.items())
            yield pattern_portability.finding(
                f"the pattern from {pattern.source} runs in {_who(pattern.engine)} but other engines reject it "
                f"({names}): "
                "a loader that converts it to another engine cannot load this tokenizer.",
                location=pattern.location,
                details={
                    "source": pattern.source,
                    "pattern": pattern.regex,
                    "rejected": rejected,
                    "engines": engines_run,
                },
            )
        if not found:
            if not complete:
                yield pattern_portability.finding(
                    f"probing the pattern from {pattern.source} ran out of its {BUDGET_SECONDS:g} s budget: "
                    "its portability across regex engines is unknown.",
                    severity=Severity.NOTE,
                    location=pattern.location,
                    details={"source": pattern.source, "probed": False},
                )
            continue
        example = Divergence(*probe["example"])
        translated: str = probe["translated"]
        fixed: bool = probe["fixed"]
        split = "; ".join(f"{_who(e)} {[visible(p) for p in pieces]}" for e, pieces in example.pieces.items())
        fix = (
            " tokaudit's hf backend runs the translated pattern (possessive intervals as atomic groups, $ and ^ "
            "anchored to the text); transformers' TikTokenConverter does not translate it."
            if not fixed and translated != pattern.regex
            else ""
        )
        yield pattern_portability.finding(
            f"the pattern from {pattern.source} splits {visible(example.text)!r} differently across regex engines: "
            f"{split} "
            f"({len(found)} of the probe strings differ). Loaders running it in different engines give different "
            f"token ids for the same text.{fix}",
            location=pattern.location,
            details={
                "source": pattern.source,
                "pattern": pattern.regex,
                "engine": pattern.engine,
                "example": {"text": example.text, "pieces": example.pieces},
                "differing_probes": [d.text for d in found],
                "translation": translated if not fixed else None,
                "rejected": rejected,
            },
        )
