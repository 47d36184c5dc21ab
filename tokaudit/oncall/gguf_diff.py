"""``diff HF_DIR model.gguf`` (either order): the drift a HF -> GGUF conversion introduced.

Per id, the bytes the HF files decode it to against the bytes llama.cpp renders for it (TA701); each HF added
token's ``special`` flag against its GGUF type (TA208); the special ids and the add_bos/add_eos flags
(TA703); the merges (TA308) and the pre-tokenizer against the HF regex (TA307); the chat template text. A
faithful conversion diffs clean. Ids the GGUF has beyond the HF vocabulary (convert_hf_to_gguf pads up to
``vocab_size`` with ``[PAD<id>]``) are counted, not reported.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from tokaudit.artifacts.gguf import GGUFTokenizer
from tokaudit.checks.common import find_content
from tokaudit.checks.gguf_rules import HF_REGEX_FAMILIES, hf_regex, type_flag_mismatches
from tokaudit.ids import IdRanges
from tokaudit.model.llamacpp_load import LlamaCppLoad
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.oncall.diff import DiffResult
from tokaudit.oncall.diff_result import ConversionDiff, ConversionExample, MergesDiff, PreDiff, TemplateDiff
from tokaudit.oncall.codes import ID_TOKEN_MISMATCH, SPECIAL_TOKEN_DIVERGENCE
from tokaudit.report.finding import Finding, Severity
from tokaudit.report.text import plural, token_text, visible

EXAMPLES = 5
#: The special-token fields convert_hf_to_gguf carries over (tokenizer_config.json name -> llama.cpp name).
SPECIAL_FIELDS = {
    "bos_token": "bos",
    "eos_token": "eos",
    "unk_token": "unk",
    "pad_token": "pad",
    "sep_token": "sep",
    "mask_token": "mask",
}


def is_conversion_pair(a: TokenizerModel, b: TokenizerModel) -> bool:
    """One side is a GGUF alone and the other has HF files: a conversion to check, not a draft/target pair."""
    return a.artifacts.gguf_only != b.artifacts.gguf_only


def _hf_special_ids(hf: TokenizerModel) -> dict[str, tuple[int | None, str]]:
    """name -> (id, token text) of the special tokens the HF files name (tokenizer_config.json first, then
    special_tokens_map.json), as convert_hf_to_gguf's SpecialVocab reads them."""
    out: dict[str, tuple[int | None, str]] = {}
    for record in (hf.artifacts.special_tokens_map, hf.artifacts.tokenizer_config):
        if record is None:
            continue
        for field, tok in record.special.items():
            if field in SPECIAL_FIELDS:
                hit = find_content(hf.files, tok.content)
                out[SPECIAL_FIELDS[field]] = (hit[0] if hit else None, tok.content)
    return out


def _hf_template(hf: TokenizerModel) -> str | None:
    from tokaudit.checks.common import chat_template

    found = chat_template(hf)
    return None if found is None else found[0]


def _first_difference(a: Sequence[Any], b: Sequence[Any]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def _specials(hf: TokenizerModel, g: GGUFTokenizer, load: LlamaCppLoad) -> list[dict[str, Any]]:
    from tokaudit.template.serving import prepended

    rows = []
    for name, (hf_id, content) in _hf_special_ids(hf).items():
        if name == "unk" and load.vocab_type == "BPE":
            continue  # llama.cpp's BPE falls back to byte tokens, never to unk: the id is unused
        gguf_id = load.id_of(name)
        if hf_id != gguf_id:
            rows.append(
                {
                    "subject": f"{name}_id",
                    "hf": hf_id,
                    "hf_token": content,
                    "gguf": gguf_id,
                    "gguf_token": None if gguf_id is None else g.tokens[gguf_id].decode("utf-8", "replace"),
                    "gguf_origin": load.special[name].origin,
                }
            )
    hf_adds_bos = prepended(hf) is not None
    if hf_adds_bos != bool(load.flags.get("add_bos")):
        rows.append(
            {
                "subject": "add_bos",
                "id": load.id_of("bos"),
                "hf": hf_adds_bos,
                "gguf": load.flags.get("add_bos"),
                "gguf_origin": load.flag_origin.get("add_bos"),
            }
        )
    return rows


def conversion_diff(hf: TokenizerModel, gguf: TokenizerModel, display: str) -> tuple[DiffResult, list[Finding]]:
    g = gguf.artifacts.gguf
    load = gguf.llamacpp
    assert g is not None and load is not None
    a, _ = hf.files.flat
    b, _ = gguf.files.flat
    differ = sorted(i for i, token in a.items() if b.get(i) != token)
    gguf_only = sorted(i for i in b if i not in a)
    types = type_flag_mismatches(hf, g)
    specials = _specials(hf, g, load)
    tj = hf.artifacts.tokenizer_json
    hf_merges = tj.raw.get("model", {}).get("merges") if tj is not None else None
    merges = None
    if isinstance(hf_merges, list) or g.merges is not None:
        hf_text = [m if isinstance(m, str) else " ".join(map(str, m)) for m in hf_merges or []]
        gm = [m.decode("utf-8", "replace") for m in g.merges or ()]
        first = None if hf_text == gm else _first_difference(hf_text, gm)
        merges = MergesDiff(
            hf=len(hf_text),
            gguf=len(gm),
            first_difference=first,
            hf_at_first=hf_text[first] if first is not None and first < len(hf_text) else None,
            gguf_at_first=gm[first] if first is not None and first < len(gm) else None,
        )
    regex = hf_regex(hf)
    families = HF_REGEX_FAMILIES.get(regex or "")
    pre = PreDiff(
        gguf=load.pre,
        state=load.pre_state,
        family=load.pre_family,
        hf_regex=regex,
        matches=None if families is None or load.pre_family is None else load.pre_family in families,
    )
    hf_tpl, gguf_tpl = _hf_template(hf), g.chat_templates.get("default")
    both = hf_tpl is not None and gguf_tpl is not None
    template = TemplateDiff(
        hf=hf_tpl is not None,
        gguf=gguf_tpl is not None,
        same=hf_tpl == gguf_tpl if both else None,
        first_difference=_first_difference(hf_tpl, gguf_tpl) if hf_tpl and gguf_tpl and hf_tpl != gguf_tpl else None,
    )
    findings = _findings(g, a, b, differ, types, specials)
    from tokaudit.checks.gguf_rules import gguf_merges_missing, gguf_pre_tokenizer

    merged = replace(hf, artifacts=replace(hf.artifacts, gguf=g))  # the HF files with the GGUF beside them
    findings += list(gguf_merges_missing.check(merged)) + list(gguf_pre_tokenizer.check(merged))
    clean = not findings and (template.same in (None, True))
    compared = ConversionDiff(
        classification="faithful" if clean else "drifted",
        hf_path=hf.target,
        hf_vocab_artifact=hf.vocab_artifact,
        hf_mapped=len(a),
        gguf_path=gguf.target,
        gguf_file=g.path.name,
        gguf_mapped=len(b),
        gguf_model=g.model,
        same_bytes=len(a) - len(differ),
        mismatched=len(differ),
        gguf_only=len(gguf_only),
        mismatched_ids=IdRanges.from_ids(differ),
        examples=tuple(_example(i, a.get(i), b.get(i)) for i in differ[:EXAMPLES]),
        type_flag_mismatches=len(types),
        specials=tuple(specials),
        merges=merges,
        pre=pre,
        template=template,
    )
    return DiffResult(display, hf.source, compared), [f.with_target(display) for f in findings]


def _example(i: int, a: bytes | None, b: bytes | None) -> ConversionExample:
    return ConversionExample(i, None if a is None else token_text(a), None if b is None else token_text(b))


def _findings(
    g: GGUFTokenizer,
    a: dict[int, bytes],
    b: dict[int, bytes],
    differ: list[int],
    types: list[tuple[int, str, str, bool]],
    specials: list[dict[str, Any]],
) -> list[Finding]:
    from tokaudit.checks.gguf_rules import token_type_mismatch

    out = []
    if differ:
        ranges = IdRanges.from_ids(differ)
        examples = [_example(i, a.get(i), b.get(i)) for i in differ[:EXAMPLES]]
        shown = "; ".join(
            f"{e.id}: {e.hf if e.hf is not None else '(none)'} ≠ {e.gguf if e.gguf is not None else '(none)'}"
            for e in examples[:3]
        )
        out.append(
            Finding(
                ID_TOKEN_MISMATCH.code,
                ID_TOKEN_MISMATCH.name,
                ID_TOKEN_MISMATCH.severity,
                f"{plural(len(differ), 'id')} of the HF files decode to other bytes in {g.path.name} (as llama.cpp "
                f"renders them): {ranges.describe()}; e.g. {shown}. The GGUF model reads and writes other text for "
                "these ids.",
                g.source("tokenizer.ggml.tokens"),
                ranges,
                {"examples": [e.to_json() for e in examples]},
            )
        )
    if types:
        ranges = IdRanges.from_ids(i for i, *_ in types)
        shown = ", ".join(f"{i} {visible(c)} ({kind}, special: {str(s).lower()})" for i, c, kind, s in types[:5])
        severity = Severity.ERROR if any(kind == "CONTROL" and not s for _, _, kind, s in types) else Severity.WARNING
        out.append(
            token_type_mismatch.finding(
                f"{plural(len(types), 'added token')} whose GGUF type disagrees with the HF special flag: "
                f"{ranges.describe()}; {shown}",
                severity=severity,
                location=g.source("tokenizer.ggml.token_type"),
                ids=ranges,
                details={"tokens": [{"id": i, "token": c, "type": kind, "special": s} for i, c, kind, s in types[:64]]},
            )
        )
    if specials:
        ids = [
            v
            for row in specials
            for v in (row.get("hf"), row.get("gguf"), row.get("id"))
            if isinstance(v, int) and not isinstance(v, bool)
        ]
        shown = "; ".join(_special_text(row) for row in specials)
        out.append(
            Finding(
                SPECIAL_TOKEN_DIVERGENCE.code,
                SPECIAL_TOKEN_DIVERGENCE.name,
                SPECIAL_TOKEN_DIVERGENCE.severity,
                f"special tokens differ between the HF files and {g.path.name}: {shown}. The GGUF adds, stops on or "
                "skips other ids than the HF model.",
                g.source(_special_key(specials[0]["subject"])),
                IdRanges.from_ids(ids) if ids else None,
                {"specials": specials},
            )
        )
    return out


def _special_text(row: dict[str, Any]) -> str:
    if row["subject"] == "add_bos":
        gguf_adds = "does" if row["gguf"] else "does not"
        return f"add_bos: HF {'adds' if row['hf'] else 'does not add'} BOS, the GGUF {gguf_adds} ({row['gguf_origin']})"
    gguf = "none" if row["gguf"] is None else f"{row['gguf']} {visible(row['gguf_token'] or '')}"
    origin = f", llama.cpp's {row['gguf_origin']}" if row["gguf_origin"] and row["gguf_origin"] != "file" else ""
    return f"{row['subject']}: HF {row['hf']} {visible(row['hf_token'])} vs GGUF {gguf}{origin}"


def _special_key(subject: str) -> str:
    """The GGUF key of a special-token difference: ``eos_id`` -> tokenizer.ggml.eos_token_id."""
    return (
        "tokenizer.ggml.add_bos_token"
        if subject == "add_bos"
        else f"tokenizer.ggml.{subject.removesuffix('_id')}_token_id"
    )
