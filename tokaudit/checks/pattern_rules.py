"""Pre-tokenizer patterns across regex engines (TA305 pattern-portability)."""

from __future__ import annotations

from collections.abc import Iterator

from tokaudit.artifacts.base import Provenance
from tokaudit.artifacts.pattern import Pattern, search_pattern
from tokaudit.backends.pattern import ENGINES, divergences, shrink, translate_for_onig
from tokaudit.checks.registry import rule
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Finding, Severity
from tokaudit.report.text import visible

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
            out.setdefault(regex, Pattern(regex, f"{a.tokenizer_json.name} pre_tokenizer",
                                          Provenance(a.tokenizer_json.name, key="pre_tokenizer"), "oniguruma"))
    return list(out.values())


def _who(engine: str) -> str:
    return {"fancy-regex": "tiktoken (fancy-regex)", "oniguruma": "tokenizers (Oniguruma)", "regex": "Python regex"}[engine]


@rule("TA305")
def pattern_portability(model: TokenizerModel) -> Iterator[Finding]:
    for pattern in _patterns(model):
        if len(pattern.regex) > MAX_PATTERN_CHARS:
            yield pattern_portability.finding(
                f"the pattern from {pattern.source} is {len(pattern.regex)} characters long (limit {MAX_PATTERN_CHARS}): "
                "not probed, so whether tiktoken, tokenizers and Python regex split text the same way is unknown.",
                severity=Severity.NOTE, location=pattern.location,
                details={"source": pattern.source, "probed": False, "length": len(pattern.regex)},
            )
            continue
        found, rejected, complete = divergences(pattern.regex, budget_seconds=BUDGET_SECONDS)
        engines_run = [e for e in ENGINES if e not in rejected]
        if rejected and pattern.engine not in rejected:
            names = ", ".join(f"{_who(e)}: {why}" for e, why in rejected.items())
            yield pattern_portability.finding(
                f"the pattern from {pattern.source} runs in {_who(pattern.engine)} but other engines reject it ({names}): "
                "a loader that converts it to another engine cannot load this tokenizer.",
                location=pattern.location,
                details={"source": pattern.source, "pattern": pattern.regex, "rejected": rejected, "engines": engines_run},
            )
        if not found:
            if not complete:
                yield pattern_portability.finding(
                    f"probing the pattern from {pattern.source} ran out of its {BUDGET_SECONDS:g} s budget: "
                    "its portability across regex engines is unknown.",
                    severity=Severity.NOTE, location=pattern.location,
                    details={"source": pattern.source, "probed": False},
                )
            continue
        example = shrink(pattern.regex, found[0].text) or found[0]
        translated = translate_for_onig(pattern.regex)
        fixed, _, _ = divergences(pattern.regex, ("fancy-regex", "oniguruma"), onig_regex=translated,
                                  budget_seconds=BUDGET_SECONDS)
        split = "; ".join(f"{_who(e)} {[visible(p) for p in pieces]}" for e, pieces in example.pieces.items())
        fix = (" tokaudit's hf backend runs the translated pattern (possessive intervals as atomic groups, $ and ^ "
               "anchored to the text); transformers' TikTokenConverter does not translate it."
               if not fixed and translated != pattern.regex else "")
        yield pattern_portability.finding(
            f"the pattern from {pattern.source} splits {visible(example.text)!r} differently across regex engines: {split} "
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
