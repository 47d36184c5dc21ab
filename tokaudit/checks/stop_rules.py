"""Generation settings that keep the model from stopping (TA220 stop-token-suppressed).

generation_config.json can forbid ids outright (``suppress_tokens``, one-token ``bad_words_ids``, a strongly
negative ``sequence_bias``), at the first step (``begin_suppress_tokens``), after a prefix (longer ``bad_words_ids``)
or for the first N tokens (``min_new_tokens``, ``min_length``). Only transformers' ``generate`` applies these keys:
vLLM reads temperature, top_k, top_p, min_p, repetition_penalty and max_new_tokens from the file
(``ModelConfig.get_diff_sampling_param``), and llama.cpp none of them. A GGUF has no such key: llama.cpp reads
``general.sampling.*`` (top_k, top_p, min_p, temp, xtc, penalties, mirostat, the sampler sequence), none of which
biases a token, and ``--ignore-eos`` is a command-line flag, not metadata.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokaudit.records import Provenance
from tokaudit.checks.common import turn_terminator
from tokaudit.checks.registry import rule
from tokaudit.checks.special_tokens import content_id, eos_sets, token_text
from tokaudit.ids import IdRanges
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Finding, Severity

#: A sequence_bias at or below this makes the token practically unsampleable (logits rarely span 10 nats).
SUPPRESSING_BIAS = -10.0
STACKS = ["transformers"]
_ONLY = (
    "only transformers' generate applies it (vLLM reads temperature, top_k, top_p, min_p, repetition_penalty and "
    "max_new_tokens from this file; llama.cpp, TGI and the Rust gateways none of these keys)"
)


def stop_ids(model: TokenizerModel) -> dict[int, str]:
    """id -> text of every id that ends generation: the eos ids of every file, and the template's turn terminator."""
    out: dict[int, str] = {}
    for entry in eos_sets(model):
        for i, text in zip(entry["ids"], entry["tokens"]):
            out[i] = text
    term = turn_terminator(model)
    if term is not None:
        term_id = content_id(model, term.text)[0]
        if term_id is not None:
            out.setdefault(term_id, term.text)
    return out


def _names(model: TokenizerModel, ids: list[int], known: dict[int, str]) -> str:
    return ", ".join(f"{i} ({known.get(i) or token_text(model, i) or '?'})" for i in ids)


@rule("TA220")
def stop_token_suppressed(model: TokenizerModel) -> Iterator[Finding]:
    gen = model.artifacts.generation_config
    if gen is None:
        return
    stops = stop_ids(model)
    if not stops:
        return
    s = gen.stop
    forbidden: dict[str, list[int]] = {
        "suppress_tokens": sorted(set(s.suppress_tokens) & set(stops)),
        "bad_words_ids": sorted({seq[0] for seq in s.bad_words_ids if len(seq) == 1} & set(stops)),
        "sequence_bias": sorted(
            {seq[0] for seq, bias in s.sequence_bias if len(seq) == 1 and bias <= SUPPRESSING_BIAS} & set(stops)
        ),
    }
    blocked = {i for ids in forbidden.values() for i in ids}
    every = blocked >= set(stops)
    left = sorted(set(stops) - blocked)
    for key, ids in forbidden.items():
        if not ids:
            continue
        how = {
            "suppress_tokens": "sets its logit to -inf at every step",
            "bad_words_ids": "bans it as a one-token bad word at every step",
            "sequence_bias": f"biases it by {SUPPRESSING_BIAS:g} or less at every step",
        }[key]
        outcome = (
            "no stop id is left, so generation runs until max_new_tokens"
            if every
            else f"generation can still stop on {_names(model, left, stops)}"
        )
        yield _finding(
            gen.name,
            key,
            ids,
            Severity.ERROR if every else Severity.WARNING,
            f"{gen.name} {key} holds {_names(model, ids, stops)}, which ends generation: transformers' generate "
            f"{how}; {outcome}. {_ONLY[0].upper()}{_ONLY[1:]}.",
        )
    after = sorted({(seq[:-1], seq[-1]) for seq in s.bad_words_ids if len(seq) > 1 and seq[-1] in stops})
    if after:
        ids = sorted({i for _, i in after})
        prefixes = "; ".join(f"after {list(prefix)}" for prefix, _ in after[:3])
        yield _finding(
            gen.name,
            "bad_words_ids",
            ids,
            Severity.WARNING,
            f"{gen.name} bad_words_ids bans {_names(model, ids, stops)}, which ends generation, after a prefix "
            f"({prefixes}): there the model cannot stop; {_ONLY}.",
            subject="bad_words_ids:sequences",
        )
    lowered = sorted(
        {seq[0] for seq, bias in s.sequence_bias if len(seq) == 1 and SUPPRESSING_BIAS < bias < 0} & set(stops)
    )
    if lowered:
        yield _finding(
            gen.name,
            "sequence_bias",
            lowered,
            Severity.WARNING,
            f"{gen.name} sequence_bias lowers {_names(model, lowered, stops)}, which ends generation: answers run "
            f"longer than the model was trained to write; {_ONLY}.",
            subject="sequence_bias:lowered",
        )
    first = sorted(set(s.begin_suppress_tokens) & set(stops))
    if first:
        yield _finding(
            gen.name,
            "begin_suppress_tokens",
            first,
            Severity.NOTE,
            f"{gen.name} begin_suppress_tokens holds {_names(model, first, stops)}, which ends generation: the "
            f"first generated token cannot end the answer (an empty answer is impossible; later steps are not "
            f"affected); {_ONLY}.",
        )
    for key, value in (("min_new_tokens", s.min_new_tokens), ("min_length", s.min_length)):
        if value:
            counted = "new tokens" if key == "min_new_tokens" else "tokens, prompt included"
            yield _finding(
                gen.name,
                key,
                sorted(stops),
                Severity.WARNING,
                f"{gen.name} {key} is {value}: transformers' generate masks {_names(model, sorted(stops), stops)} "
                f"until {value} {counted}, so every answer is at least that long; {_ONLY}.",
            )


def _finding(
    file: str, key: str, ids: list[int], severity: Severity, message: str, subject: str | None = None
) -> Finding:
    return stop_token_suppressed.finding(
        message,
        severity=severity,
        location=Provenance(file, key=key),
        ids=IdRanges.from_ids(ids),
        details={"subject": subject or key, "key": key, "stacks": STACKS},
    )
