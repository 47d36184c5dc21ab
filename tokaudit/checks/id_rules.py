"""Id-space rules about *which* token an id holds (TA102, TA103, TA105)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokaudit.checks.common import is_placeholder
from tokaudit.checks.registry import rule
from tokaudit.ids import IdRanges
from tokaudit.model.id_table import Layer
from tokaudit.model.text import TokenText
from tokaudit.model.detection import (
    compacted_added_ids,
    remote_tokenizer_module,
    smg_detects_kimi,
    tokenizers_added_ids,
)
from tokaudit.model.tokenizer_model import REMOTE_CODE, TokenizerModel
from tokaudit.report.finding import Finding
from tokaudit.report.text import plural, token_text


def _claim(layer: Layer, token: bytes) -> dict[str, Any]:
    return {"artifact": layer.artifact, "rule": layer.rule, "token": token_text(token)}


@rule("TA102")
def id_collision(model: TokenizerModel) -> Iterator[Finding]:
    claims: dict[int, list[dict[str, Any]]] = {}

    def add(token_id: int, entries: list[dict[str, Any]]) -> None:
        if len({e["token"] for e in entries}) > 1 and token_id not in claims:
            claims[token_id] = entries

    # Claims compare as the decoder sees them: an added token's content goes through the decoder chain
    # like a vocabulary entry (Gemma's added "▁▁" and its vocab entry "▁▁" are one token).
    text = TokenText(model)
    # within one profile: an added/special layer on an id another layer already holds with other bytes
    for table in model.profiles.values():
        small = [layer for layer in table.layers if layer is not model.base]
        for layer in small:
            for i, token in layer.tokens.items():
                others = [
                    (other, other.tokens[i]) for other in table.layers if other is not layer and i in other.tokens
                ]
                mine = text.claim_bytes(layer, token)
                if any(text.claim_bytes(o, t) != mine for o, t in others):
                    add(i, [_claim(layer, token)] + [_claim(o, t) for o, t in others])
    a = model.artifacts
    tj = a.tokenizer_json
    if tj is not None:
        for i, first, other in tj.duplicate_ids:
            add(
                i,
                [
                    {"artifact": tj.name, "rule": "model.vocab", "token": first},
                    {"artifact": tj.name, "rule": "model.vocab", "token": other},
                ],
            )
        for tok, loaded in tokenizers_added_ids(model):
            holder = tj.vocab.get(loaded)
            if tok.id is not None and loaded != tok.id and holder is not None and holder != tok.content:
                add(
                    loaded,
                    [
                        {
                            "artifact": tj.name,
                            "rule": f"added_tokens (declared id {tok.id}, tokenizers assigns {loaded})",
                            "token": tok.content,
                        },
                        {"artifact": tj.name, "rule": "model.vocab", "token": holder},
                    ],
                )
        if a.tokenizer_config is not None:
            for tok in a.tokenizer_config.added_tokens_decoder:
                if tok.id is None:
                    continue
                found = model.files.lookup(tok.id)
                if found is not None and text.claim_bytes(found.layer, found.token) != text.content_piece(tok.content):
                    add(
                        tok.id,
                        [
                            _claim(found.layer, found.token),
                            {"artifact": a.tokenizer_config.name, "rule": "added_tokens_decoder", "token": tok.content},
                        ],
                    )
    if not claims:
        return
    ids = IdRanges.from_ids(claims)
    first_ids = sorted(claims)[:3]
    examples = "; ".join(
        f"{i}: " + " vs ".join(f"{c['token']} ({c['artifact']} {c['rule']})" for c in claims[i]) for i in first_ids
    )
    where = model.files.lookup(first_ids[0])
    yield id_collision.finding(
        f"{plural(ids.count, 'id')} {'is' if ids.count == 1 else 'are'} claimed by two different tokens: {examples}. "
        "Which one a loader decodes depends on its "
        "lookup order, so encode and decode disagree.",
        location=where.source if where else None,
        ids=ids,
        details={"examples": [{"id": i, "claims": claims[i]} for i in sorted(claims)[:20]]},
    )


@rule("TA103")
def id_drift(model: TokenizerModel) -> Iterator[Finding]:
    a = model.artifacts
    drifts: dict[str, list[dict[str, Any]]] = {}
    tj = a.tokenizer_json
    if tj is not None:
        for tok, loaded in tokenizers_added_ids(model):
            if tok.id is not None and loaded != tok.id and tj.vocab.get(loaded) in (None, tok.content):
                drifts.setdefault("tokenizers (tokenizer.json added_tokens)", []).append(
                    {"token": tok.content, "declared": tok.id, "loaded": loaded, "source": tok.source.to_json()}
                )
        if a.tokenizer_config is not None:
            loaded_ids = {tok.content: loaded for tok, loaded in tokenizers_added_ids(model)}
            for tok in a.tokenizer_config.added_tokens_decoder:
                loaded_id = loaded_ids.get(tok.content)
                if tok.id is not None and loaded_id is not None and loaded_id != tok.id:
                    drifts.setdefault("transformers (tokenizer.json over tokenizer_config.json)", []).append(
                        {"token": tok.content, "declared": tok.id, "loaded": loaded_id, "source": tok.source.to_json()}
                    )
    compact = compacted_added_ids(model)
    if compact and a.tokenizer_config is not None:
        by_id = {t.id: t for t in a.tokenizer_config.added_tokens_decoder}
        moved: list[dict[str, Any]] = [
            {"token": by_id[d].content, "declared": d, "loaded": n, "source": by_id[d].source.to_json()}
            for d, n in sorted(compact.items())
            if d != n
        ]
        if moved:
            drifts[f"transformers v5 conversion of {model.vocab_artifact} (no tokenizer.json)"] = moved
    for loader, moved in drifts.items():
        ids = IdRanges.from_ids(m["declared"] for m in moved)

        def fmt(part: list[dict[str, Any]]) -> str:
            return ", ".join(f"{m['token']} {m['declared']} → {m['loaded']}" for m in part)

        shown = fmt(moved) if len(moved) <= 5 else f"{fmt(moved[:3])}, … ({len(moved) - 5} more), {fmt(moved[-2:])}"
        extra = ""
        if "conversion" in loader:
            extra = (
                f" It appends the {len(compact)} added tokens right after the ranks instead of keeping their sparse "
                "ids "
                "(transformers #45356, fixed by #45359/#48446)."
            )
        yield id_drift.finding(
            f"{len(moved)} added tokens get a different id under {loader} than the files declare: {shown}.{extra} "
            "Ids the model was trained with then decode to other tokens.",
            location=_first_source(moved),
            ids=ids,
            details={"subject": loader, "loader": loader, "moved": moved},
        )


def _first_source(moved: list[dict[str, Any]]) -> Any:
    from tokaudit.records import Provenance

    src = moved[0]["source"]
    return Provenance(src["file"], src.get("line"), src.get("key"))


@rule("TA105")
def placeholder_encodable(model: TokenizerModel) -> Iterator[Finding]:
    found: dict[int, bytes] = {}
    by_profile: dict[str, int] = {}
    source = None
    for name, table in model.profiles.items():
        count = 0
        for layer in table.layers:
            if layer is model.base or not layer.special:
                continue
            for i, token in layer.tokens.items():
                if is_placeholder(token.decode("utf-8", "replace")):
                    count += 1
                    if i not in found:
                        found[i] = token
                        source = source or layer.locate(i)
        if count:
            by_profile[name] = count
    if not found:
        return
    ids = IdRanges.from_ids(found)
    example_id = ids.first(1)[0]
    example = found[example_id].decode("utf-8", "replace")
    who = []
    if REMOTE_CODE in by_profile and remote_tokenizer_module(model):
        who.append("transformers with the remote code (trust_remote_code)")
    elif REMOTE_CODE in by_profile:  # code no auto_map names (Meta's tokenizer.py): its own Tokenizer class
        who.append(f"the model's own tokenizer code ({', '.join(rc.name for rc in model.artifacts.remote_code)})")
    if "files" in by_profile:
        who.append("every loader of the data files (HF tokenizers matches added tokens in text)")
    if smg_detects_kimi(model):
        who.append(
            "smg and Dynamo, which synthesize <|reserved_token_N|> for Kimi and always encode with special tokens"
        )
    yield placeholder_encodable.finding(
        f"{ids.count} reserved placeholder tokens (e.g. {example} = {example_id}) are registered as special tokens by "
        f'{"; ".join(who)}. User text containing "{example}" encodes to control id {example_id}, an untrained '
        "embedding: filter these strings from user input or encode with split_special_tokens.",
        location=source,
        ids=ids,
        details={"by_profile": by_profile, "example": example},
    )
