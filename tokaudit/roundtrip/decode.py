"""A case's output ids decoded as the stacks decode them: the whole decode (the non-streaming text) and the
``offsets`` window detokenizer of vLLM, SGLang, TGI and smg fed in steps of N ids (the streamed deltas)."""

from __future__ import annotations

from typing import Any

from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.roundtrip.case import Case
from tokaudit.roundtrip.lookup import vocab_lookup
from tokaudit.roundtrip.run import Decoder
from tokaudit.stream.detokenizers import Offsets
from tokaudit.stream.replay import decode_context, load_tokenizer


def text_decoder(case: Case) -> Decoder:
    """No tokenizer: the rendered text is the output, every marker taken as one token that survives."""
    return Decoder(case, None, None, lambda marker: 0)


def model_decoder(case: Case, model: TokenizerModel, tokenizer: Any = None) -> Decoder:
    """``tokenizer``: the ``tokenizers.Tokenizer`` the prompt was encoded with, when there is one (else one is
    built)."""
    if case.output_ids is None or case.prompt_ids is None:
        return text_decoder(case)
    if tokenizer is None:
        tokenizer = load_tokenizer(model).tokenizer
    contexts: dict[bool, Any] = {}
    ids, prompt = case.output_ids, case.prompt_ids

    def ctx(skip: bool) -> Any:
        if skip not in contexts:
            contexts[skip] = decode_context(model, tokenizer, skip)
        return contexts[skip]

    def whole(skip: bool) -> str:
        return str(tokenizer.decode(ids, skip_special_tokens=skip))

    def steps(skip: bool, size: int) -> list[tuple[str, list[int]]]:
        detok = Offsets(ctx(skip), prompt)
        batches = [ids[i : i + size] for i in range(0, len(ids), size)]
        chunks, _ = detok.feed(batches, track_held=False)
        out = [(c, list(b)) for c, b in zip(chunks, batches)]
        tail = detok.flush()
        if tail:
            out.append((tail, []))
        return out

    return Decoder(case, steps, whole, vocab_lookup(model, tokenizer))
