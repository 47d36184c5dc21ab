"""Id-space rules (TA1xx): ids the model can produce that a loader cannot map, and size disagreements."""

from __future__ import annotations

from collections.abc import Iterator

from tokaudit.checks.registry import rule
from tokaudit.model.tokenizer_model import FILES, REMOTE_CODE, TokenizerModel
from tokaudit.report.finding import Finding, Severity

#: What known decoders do when asked to decode an id they have no token for (see research/gateways.md 1.7).
UNKNOWN_ID_BEHAVIOUR = {
    "tiktoken (Python)": "KeyError: Invalid token for decoding",
    "tiktoken-rs _decode_native_and_split (smg lossy path)": "panic: no entry found for key",
    "tiktoken-rs CoreBPE::decode": "Err(DecodeKeyError)",
    "tokenizers (HF fast)": "silently dropped from the text",
}


@rule("TA101", "vocab-gap", Severity.ERROR, "Ids inside the declared vocabulary that a files-only loader cannot map.")
def vocab_gap(model: TokenizerModel) -> Iterator[Finding]:
    size = model.checked_size
    gaps = model.files.mapped.complement(size)
    if not gaps:
        return
    fills = {
        name: (gaps.count - table.mapped.complement(size).count)
        for name, table in model.profiles.items()
        if name != FILES
    }
    filled_by = ""
    if fills.get(REMOTE_CODE):
        filled_by = f"; the model's remote code fills {fills[REMOTE_CODE]} of them"
        example = model.profiles[REMOTE_CODE].lookup(gaps.ranges[0][0])
        if example is not None:
            filled_by += f" (e.g. {gaps.ranges[0][0]} = {example.token.decode('utf-8', 'replace')})"
    declared = f"[0, {size})" if model.declared.size is not None else f"[0, {size}) (highest mapped id + 1)"
    yield vocab_gap.finding(
        f"{gaps.count} ids in {declared} have no token for a loader that reads only the data files "
        f"({model.vocab_artifact} and its added tokens, as tiktoken-rs and smg before PR #1482 do): "
        f"{gaps.describe()}{filled_by}. Decoding one crashes tiktoken-based gateways; the loader table "
        "shows which stacks fill these ids.",
        location=model.declared.source,
        ids=gaps,
        details={
            "declared_size": size,
            "declared_by": model.declared.basis,
            "profile": FILES,
            "filled_by_profile": fills,
            "decoder_behaviour": UNKNOWN_ID_BEHAVIOUR,
        },
    )


@rule("TA104", "size-mismatch", Severity.ERROR, "Mapped ids at or beyond the declared size, or embedding rows that differ from vocab_size.")
def size_mismatch(model: TokenizerModel) -> Iterator[Finding]:
    size = model.declared.size
    if size is not None:
        for name, table in model.profiles.items():
            beyond = table.mapped.at_or_above(size)
            if beyond:
                yield size_mismatch.finding(
                    f"{beyond.count} ids mapped in the {name} profile are at or beyond the declared size {size} "
                    f"({model.declared.basis}): {beyond.describe()}. The model can never produce them and "
                    "bound checks against vocab_size reject them.",
                    location=model.declared.source,
                    ids=beyond,
                    details={"profile": name, "declared_size": size, "declared_by": model.declared.basis},
                )
    sizes = model.sizes
    emb = model.artifacts.embedding
    if sizes.embedding_rows is not None and sizes.config_vocab_size is not None and sizes.embedding_rows != sizes.config_vocab_size:
        rows = emb.embedding or emb.lm_head if emb else None
        yield size_mismatch.finding(
            f"the embedding has {sizes.embedding_rows} rows but config vocab_size is {sizes.config_vocab_size}: "
            "the sampler and the tokenizer disagree on the id range.",
            location=rows.source if rows else None,
            details={"embedding_rows": sizes.embedding_rows, "config_vocab_size": sizes.config_vocab_size,
                     "tensor": rows.tensor if rows else None},
        )
