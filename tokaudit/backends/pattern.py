"""Which pre-tokenizer regex a model uses, and where that fact comes from."""

from __future__ import annotations

from dataclasses import dataclass

from tokaudit.model.tokenizer_model import TokenizerModel

#: cl100k_base's pattern: what transformers' tiktoken conversion falls back to when it knows none.
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""
)


@dataclass(frozen=True)
class Pattern:
    regex: str
    #: "tokenization_kimi.py:12 (pat_str)", "tekken.json config.pattern", "--pat-str", ...
    source: str


def find_pattern(model: TokenizerModel, override: str | None = None) -> Pattern | None:
    """The model's own pattern, by precedence; ``None`` when nothing declares one (never a guess)."""
    if override:
        return Pattern(override, "--pat-str")
    a = model.artifacts
    for rc in a.remote_code:
        if rc.pat_str is not None:
            return Pattern(rc.pat_str, f"{rc.pat_str_source} ({rc.pat_str_source.key})" if rc.pat_str_source else rc.name)
    if a.tekken and a.tekken.pattern:
        return Pattern(a.tekken.pattern, f"{a.tekken.name} config.pattern")
    if a.tokenizer_json and len(a.tokenizer_json.patterns) == 1:
        return Pattern(a.tokenizer_json.patterns[0], f"{a.tokenizer_json.name} pre_tokenizer")
    return None
