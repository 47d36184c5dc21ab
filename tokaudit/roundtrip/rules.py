"""TA820-TA825 inside ``scan``: the parser round trip of the model's own templates, in one line per template (which
parsers of each stack recover its calls) plus the prompt's reasoning findings; with ``tool-parser`` /
``reasoning-parser`` in ``[tool.tokaudit]``, that deploy's failures as errors.

The round trip costs a tokenizer load and a few hundred parses; its findings are kept in the result cache under the
templates, the tokenizer files' content and the modules' source, so a rescan reads them back.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokaudit.records import Provenance
from tokaudit.checks.registry import rule
from tokaudit.model.memo import ModelMemo
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Finding, Severity
from tokaudit.result_cache import OneOf, cache_key, conforms, digest, load, store
from tokaudit.roundtrip.choice import CODES, ParserChoice
from tokaudit.template.renders import Budget
from tokaudit.template.source import model_templates, special_token_context

#: The deploy's parsers when ``[tool.tokaudit]`` names them (set by the scan command before the rules run).
CHOICE = ParserChoice()
SCAN_BUDGET = Budget(seconds=1.0, fuel=10_000_000, total_seconds=5.0)

#: The rules share one round trip per live model (held weakly: a fleet scan must not keep its models alive).
_memo: ModelMemo[list[Finding]] = ModelMemo()

#: the profile modules: each stack's turn renders through its profile
_PROFILE_MODULES = ("transformers", "vllm", "sglang", "smg", "tgi", "mistralrs", "llamacpp", "dynamo")
_MODULES = (
    "tokaudit.jinja_generation",
    "tokaudit.parsers.families",
    "tokaudit.parsers.reasoning_table",
    "tokaudit.parsers.tool_table",
    "tokaudit.parsers.calls",
    "tokaudit.parsers.grammars",
    "tokaudit.parsers.grammars_json",
    "tokaudit.parsers.grammars_python",
    "tokaudit.parsers.grammars_xml",
    "tokaudit.parsers.parse",
    "tokaudit.parsers.toggle",
    "tokaudit.roundtrip.analysis",
    "tokaudit.roundtrip.choice",
    "tokaudit.roundtrip.case",
    "tokaudit.roundtrip.decode",
    "tokaudit.roundtrip.findings",
    "tokaudit.roundtrip.lookup",
    "tokaudit.roundtrip.parser_run",
    "tokaudit.roundtrip.run",
    "tokaudit.template.turn",
    "tokaudit.template.serving",
    "tokaudit.template.engines",
    "tokaudit.template.engine_base",
    "tokaudit.template.engine_jinja2",
    "tokaudit.template.engine_minijinja",
    "tokaudit.template.tojson",
    "tokaudit.template.stacks.engines",
    "tokaudit.template.renders",
    "tokaudit.template.rendering",
    "tokaudit.template.requests",
    "tokaudit.template.prefill",
    "tokaudit.template.source",
    "tokaudit.template.isolated",
    "tokaudit.template.llamacpp_engine",
    "tokaudit.template.llamacpp_build",
    "tokaudit.template",
    "tokaudit.template.stacks",
    "tokaudit.template.stacks.facts",
    "tokaudit.template.stacks.context",
    "tokaudit.template.stacks.profile",
    "tokaudit.template.stacks.rewrites",
    *(f"tokaudit.template.stacks.{m}" for m in _PROFILE_MODULES),
    "tokaudit.stream.detokenizers",
    *(f"tokaudit.stream.detokenizers.{m}" for m in ("core", "offsets", "decodestream", "naive", "runs", "utf8_bytes")),
    "tokaudit.parsers.installed",
    "tokaudit.worker",
    "tokaudit.roundtrip.installed",
    __name__,
)


def configure(choice: ParserChoice) -> None:
    """The scan command's ``[tool.tokaudit]`` stacks and parsers (one choice per process)."""
    global CHOICE
    CHOICE = choice


def _vocabulary_digest(model: TokenizerModel) -> list[str]:
    a = model.artifacts
    out = []
    for record in (a.tokenizer_json, a.tiktoken):
        if record is not None:
            out.append(record.digest)
    for config in (a.tokenizer_config, a.special_tokens_map):
        if config is not None and config.path.is_file():
            out.append(digest(config.path.read_bytes()))
    return out


#: A cached finding: code, severity, message, details, and its location (file, line, key) or None.
_FINDING = (str, str, str, {str: object}, OneOf(None, (str, {int, None}, {str, None})))


def _to_json(f: Finding) -> list[Any]:
    loc = f.location
    return [f.code, f.severity.value, f.message, f.details, None if loc is None else [loc.file, loc.line, loc.key]]


def _from_json(rows: Any) -> list[Finding] | None:
    try:
        out = []
        for code, severity, message, details, loc in rows:
            where = None if loc is None else Provenance(loc[0], line=loc[1], key=loc[2])
            out.append(CODES[code].finding(message, severity=Severity(severity), details=details, location=where))
        return out
    except (KeyError, TypeError, ValueError):
        return None


def round_trip_findings(model: TokenizerModel) -> list[Finding]:
    """The TA82x findings of a model's own templates (per live model object, and in the result cache)."""
    return _memo.get(model, lambda: _round_trip_findings(model))


def _round_trip_findings(model: TokenizerModel) -> list[Finding]:
    templates = model_templates(model)
    found: list[Finding] = []
    choice = CHOICE
    if (
        templates
        and choice.chosen_stacks()
        and any(k in t.text for t in templates for k in ("tool", "think", "reasoning"))
    ):
        inputs = {
            "templates": [[t.name, t.text, str(t.location)] for t in templates],
            "special": special_token_context(model),
            "vocabulary": _vocabulary_digest(model),
            "choice": [choice.chosen_stacks(), choice.tool_parser, choice.reasoning_parser, list(choice.grammars)],
        }
        ck = cache_key("parser-round-trip", inputs, _MODULES)
        cached = _from_json(load(ck, lambda v: conforms(v, [_FINDING]) and all(row[0] in CODES for row in v)))
        if cached is not None:
            found = cached
        else:
            from tokaudit.roundtrip.analysis import model_templates_runs
            from tokaudit.roundtrip.findings import parser_findings

            found = parser_findings(model_templates_runs(model, templates, choice, budget=SCAN_BUDGET), choice)
            store(ck, [_to_json(f) for f in found])
    return found


def _register(code: str) -> None:
    def check(model: TokenizerModel) -> Iterator[Finding]:
        yield from (f for f in round_trip_findings(model) if f.code == code)

    check.__name__ = CODES[code].name.replace("-", "_")
    rule(code)(check)


for _code in CODES:
    _register(_code)
