"""Id-space rules (TA1xx): ids the model can produce that a loader cannot map, and size disagreements."""

from __future__ import annotations

from collections.abc import Iterator

from tokaudit.checks.registry import rule
from tokaudit.ids import IdRanges
from tokaudit.model.loaders import loader_views, loaders_seeing
from tokaudit.model.tokenizer_model import FILES, REMOTE_CODE, TokenizerModel
from tokaudit.report.finding import Finding, Severity

#: What known decoders do when asked to decode an id they have no token for (see research/gateways.md 1.7).
UNKNOWN_ID_BEHAVIOUR = {
    "tiktoken (Python)": "KeyError: Invalid token for decoding",
    "tiktoken-rs _decode_native_and_split (smg lossy path)": "panic: no entry found for key",
    "tiktoken-rs CoreBPE::decode": "Err(DecodeKeyError)",
    "tokenizers (HF fast)": "silently dropped from the text",
}
#: How TA101's severity is derived (also in the README's rules table).
SEVERITY_RULE = (
    "from what the loaders that see the ids do with one, wherever the ids sit (holes below the last token any "
    "loader profile maps, or trailing padding up to the declared size): error when a loader that would serve "
    "these files decodes with tiktoken/tiktoken-rs (KeyError, panic); warning when every loader that sees them "
    "decodes with tokenizers, which drops them silently"
)


@rule("TA101")
def vocab_gap(model: TokenizerModel) -> Iterator[Finding]:
    size = model.checked_size
    gaps = model.files.mapped.complement(size)
    if not gaps:
        return
    # The last token any loader profile knows: ids below it are holes, ids above it are padding of the embedding.
    last = max((t.mapped.ranges[-1][1] for t in model.profiles.values() if t.mapped), default=-1)
    holes = IdRanges(tuple((f, min(hi, last)) for f, hi in gaps.ranges if f <= last))
    trailing = gaps.at_or_above(last + 1)
    views = loader_views(model)
    seen_holes, seen_trailing = loaders_seeing(views, holes), loaders_seeing(views, trailing)
    crash_holes = sorted(n for n, d in seen_holes.items() if d == "crash")
    crash_trailing = sorted(n for n, d in seen_trailing.items() if d == "crash")
    # what the loader does decides, not where the id sits: untrained rows are still sampled (Kimi's reserved
    # rows: 16 times in 1390 requests), and tiktoken-rs panics on a padding id as on a hole
    severity = Severity.ERROR if crash_holes or crash_trailing else Severity.WARNING
    # a bare published rank file laid out as tiktoken's registry lays it out (cl100k_base: no token at 100256 nor
    # 100261-100275): tiktoken.get_encoding has the same holes, and no file of the target claims a larger model
    published = model.published_layout
    if published:
        severity = Severity.NOTE
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
    parts = []
    if holes:
        parts.append(f"{holes.count} holes among the tokens ({holes.describe()})")
    if trailing:
        parts.append(f"{trailing.count} ids of trailing padding after the last token {last} ({trailing.describe()})")
    if crash_holes or crash_trailing:
        crashers = ", ".join(crash_holes or crash_trailing)
        impact = f"decoding one raises or panics in {crashers} (tiktoken: KeyError; tiktoken-rs: panic)"
        if not holes:
            impact += "; padding rows are untrained, yet a sampler still picks them now and then"
    else:
        impact = "loaders that see them decode them through tokenizers, which drops them silently"
        if not holes:
            impact += " (the text has a hole no one sees when a sampler picks an untrained padding row)"
    if published:
        impact += (
            "; this is the layout of tiktoken's own published encoding (its registry's special tokens after "
            "the ranks), which tiktoken.get_encoding has too"
        )
    yield vocab_gap.finding(
        f"{gaps.count} ids in {declared} have no token for a loader that reads only the data files "
        f"({model.vocab_artifact} and its added tokens, as tiktoken-rs and smg before PR #1482 do): "
        f"{gaps.describe()}{filled_by}. Of these, {' and '.join(parts)}: {impact}. The loader table shows which "
        "stacks fill these ids.",
        severity=severity,
        location=model.declared.source,
        ids=gaps,
        details={
            "declared_size": size,
            "declared_by": model.declared.basis,
            "profile": FILES,
            "filled_by_profile": fills,
            "last_token_id": last,
            "holes": {"ids": holes.to_json(), "count": holes.count, "seen_by": seen_holes},
            "trailing_padding": {"ids": trailing.to_json(), "count": trailing.count, "seen_by": seen_trailing},
            "severity_rule": SEVERITY_RULE,
            "decoder_behaviour": UNKNOWN_ID_BEHAVIOUR,
        },
    )


@rule("TA104")
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
        base_count = len(model.base.tokens)
        for rc in model.artifacts.remote_code:
            n = rc.num_reserved_special_tokens
            if n and base_count + n > size:
                # kept as a range: the slots are never materialised past the declared size
                past = IdRanges.span(max(size, base_count), base_count + n)
                yield size_mismatch.finding(
                    f"{rc.name} declares num_reserved_special_tokens = {n}: reserved slots [{base_count}, "
                    f"{base_count + n}) "
                    f"reach past the declared size {size} ({model.declared.basis}); {past.count} of them can never be "
                    "produced, and tokaudit keeps them as a range instead of building them.",
                    location=rc.num_reserved_source,
                    ids=past,
                    details={
                        "profile": REMOTE_CODE,
                        "declared_size": size,
                        "num_reserved_special_tokens": n,
                        "first_reserved_id": base_count,
                    },
                )
    sizes = model.sizes
    emb = model.artifacts.embedding
    if (
        sizes.embedding_rows is not None
        and sizes.config_vocab_size is not None
        and sizes.embedding_rows != sizes.config_vocab_size
    ):
        rows = emb.embedding or emb.lm_head if emb else None
        yield size_mismatch.finding(
            f"the embedding has {sizes.embedding_rows} rows but config vocab_size is {sizes.config_vocab_size}: "
            "the sampler and the tokenizer disagree on the id range.",
            location=rows.source if rows else None,
            details={
                "embedding_rows": sizes.embedding_rows,
                "config_vocab_size": sizes.config_vocab_size,
                "tensor": rows.tensor if rows else None,
            },
        )
