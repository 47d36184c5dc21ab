"""One round-trip case: the assistant turn a template teaches (:mod:`tokaudit.template.turn`), tokenized as the
serving stack tokenizes the prompt, cut after the generation prompt at token level and at the model's end of
turn, and decoded as the stack's detokenizer decodes it (with and without special tokens, whole and in steps).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.parsers.parse import template_state
from tokaudit.roundtrip.lookup import vocab_lookup
from tokaudit.template.serving import ServingEncoder
from tokaudit.template.turn import Turn

#: Tokens a model ends its turn with (besides the model's own eos): the output is cut before the first.
END_OF_TURN = (
    "<|im_end|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<｜end▁of▁sentence｜>",
    "<|return|>",
    "<|call|>",
    "<end_of_turn>",
    "<|end_of_text|>",
    "<|endoftext|>",
    "</s>",
    "<|END_OF_TURN_TOKEN|>",
    "<turn|>",
    "<|end▁of▁sentence|>",
)


@dataclass
class Case:
    """One template's assistant turn, as text and (with a tokenizer) as ids."""

    template: str
    turn: Turn
    #: the output text as the template renders it (cut at the end of turn)
    text: str
    prompt_ids: list[int] | None = None
    output_ids: list[int] | None = None
    #: why there are no ids, or how the cut was made
    tokenizer_note: str | None = None
    #: the marker that ended the output (an end-of-turn token), if any
    stop: str | None = None
    decoded: dict[bool, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def prompt_state(self) -> str | None:
        """What the generation prompt does to reasoning (the template's markers): "open", "closed" or None."""
        return template_state(self.turn.prompt)


def _cut_text(text: str, stops: tuple[str, ...]) -> tuple[str, str | None]:
    hits = [(text.find(s), s) for s in stops if s and text.find(s) >= 0]
    if not hits:
        return text, None
    at, stop = min(hits)
    return text[:at], stop


def end_tokens(model: TokenizerModel | None, special: dict[str, str]) -> tuple[str, ...]:
    eos = special.get("eos_token")
    return tuple(dict.fromkeys([*END_OF_TURN, *([eos] if eos else [])]))


def build_case(
    name: str, turn: Turn, model: TokenizerModel | None, encoder: ServingEncoder | None, special: dict[str, str]
) -> Case:
    """The case of one turn: the text always; the ids when the model's tokenizer encodes both renders."""
    stops = end_tokens(model, special)
    text, stop = _cut_text(turn.output, stops)
    case = Case(name, turn, text, stop=stop)
    if model is None or encoder is None:
        case.tokenizer_note = "no tokenizer: the output is the rendered text"
        return case
    prompt_ids, full_ids = encoder.encode(turn.prompt), encoder.encode(turn.full)
    if prompt_ids is None or full_ids is None:
        case.tokenizer_note = f"the tokenizer failed: {encoder.error}"
        return case
    n = len(prompt_ids)
    if full_ids[:n] != prompt_ids:
        n = next(i for i, (a, b) in enumerate(zip(prompt_ids, full_ids)) if a != b)
        case.tokenizer_note = f"the prompt's ids are not a prefix of the turn's: cut at id {n}"
    id_of = vocab_lookup(model, encoder.tokenizer)
    stop_ids = {i for s in stops for i in [id_of(s)] if i is not None}
    out = full_ids[len(prompt_ids) :] if n == len(prompt_ids) else full_ids[n:]
    cut = next((i for i, t in enumerate(out) if t in stop_ids), len(out))
    case.prompt_ids, case.output_ids = prompt_ids, out[:cut]
    return case
