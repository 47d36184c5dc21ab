"""The records of a scan's result (``scan/result.py``), read from a target's model."""

from __future__ import annotations

from tokaudit.artifacts.load import Artifacts
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.scan.records import (
    ArtifactRow,
    EndOfTurn,
    EogToken,
    GgufFlag,
    GgufSpecial,
    GgufSummary,
    GgufToken,
    ProfileSummary,
    VocabSummary,
)


def artifact_summary(a: Artifacts) -> tuple[ArtifactRow, ...]:
    """One row per parsed file: its kind and how many entries it holds."""
    return tuple(
        ArtifactRow(record.name, kind, a.entries(kind, record))  # type: ignore[attr-defined]  # every record has a name
        for kind, record in a.present()
    )


def vocab_summary(model: TokenizerModel) -> VocabSummary:
    size = model.checked_size
    files = model.files.mapped
    return VocabSummary(
        declared_size=model.declared.size,
        declared_by=model.declared.basis,
        declared_source=model.declared.source,
        vocab_artifact=model.vocab_artifact,
        mapped=files.count,
        unmapped=files.complement(size).count,
        sizes=model.sizes,
        profiles=tuple(
            ProfileSummary(name, table.description, table.mapped.count, table.mapped.complement(size))
            for name, table in model.profiles.items()
        ),
    )


def gguf_summary(model: TokenizerModel) -> GgufSummary | None:
    """What llama.cpp makes of the target's GGUF (None without one)."""
    g = model.artifacts.gguf
    if g is None:
        return None
    from tokaudit.checks.common import find_content, turn_terminator

    load = model.llamacpp
    assert load is not None  # the model has a GGUF

    def text(i: int) -> str | None:
        return g.tokens[i].decode("utf-8", "replace") if 0 <= i < len(g.tokens) else None

    eos = load.id_of("eos")
    eos_ids = sorted({eos} if eos is not None else set()) if not g.eos_token_ids else sorted(set(g.eos_token_ids))
    term = turn_terminator(model)
    hit = find_content(model.files, term.text) if term is not None else None
    term_id = hit[0] if hit is not None else None
    end_of_turn = (
        None
        if term is None
        else EndOfTurn(
            token=term.text,
            id=term_id,
            llamacpp_stops=term_id in load.eog if term_id is not None else False,
            eos_only_runtimes_stop=term_id in eos_ids if term_id is not None else False,
        )
    )
    return GgufSummary(
        file=g.path.name,
        version=g.version,
        byte_order=g.byte_order,
        shards=g.shard_count,
        bytes_read=g.bytes_read,
        architecture=g.arch,
        model=g.model,
        vocab_type=load.vocab_type,
        pre=load.pre,
        pre_state=load.pre_state,
        pre_family=load.pre_family,
        flags=tuple(GgufFlag(k, v, load.flag_origin.get(k)) for k, v in load.flags.items()),
        special=tuple(
            GgufSpecial(name, s.id, None if s.id is None else text(s.id), s.origin, s.bad_value)
            for name, s in load.special.items()
            if s.id is not None or s.bad_value is not None
        ),
        eog=tuple(EogToken(i, text(i), why) for i, why in sorted(load.eog.items())),
        eos_ids=tuple(GgufToken(i, text(i)) for i in eos_ids),
        end_of_turn=end_of_turn,
        control_override=tuple(sorted(load.control_override)),
        templates=tuple(sorted(g.chat_templates)),
        load_error=load.load_error,
        llamacpp_warnings=tuple(load.warnings),
    )
