"""The GGUF rules: what llama.cpp does with a GGUF's tokenizer at load (TA207-TA209, TA307, TA308).

Each rule reads the state llama.cpp builds (:mod:`tokaudit.model.llamacpp_load`) and, when the HF files are
beside the GGUF, compares it with them: that is where a conversion drifts. The GGUF reader and the llama.cpp
port are imported where a rule meets a GGUF: a scan of HF files or a tiktoken file never loads them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import wraps
from typing import TYPE_CHECKING

from tokaudit.checks.common import find_content, is_placeholder, looks_control, turn_terminator
from tokaudit.checks.registry import rule
from tokaudit.ids import IdRanges
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Finding, Severity
from tokaudit.report.text import visible

if TYPE_CHECKING:
    from tokaudit.artifacts.gguf import GGUFTokenizer
    from tokaudit.model.llamacpp_load import LlamaCppLoad

    GGUFCheck = Callable[[TokenizerModel, GGUFTokenizer, LlamaCppLoad], Iterator[Finding]]

#: Runtimes that stop only on ``tokenizer.ggml.eos_token_id`` (research gguf-llamacpp.md §2.3, §3 rows 1 and 16).
EOS_ONLY_RUNTIMES = (
    "mistral.rs (EricLBuehler/mistral.rs#1012)",
    "node-llama-cpp v3 beta (withcatai/node-llama-cpp#169)",
    "rustformers llm (#446)",
    "Ollama before 0.1.37 (ollama/ollama#3759)",
)
#: A token that reads as a word (an added domain term), not a marker: letters, digits, ' and -, after an
#: optional space mark (Ġ, ▁ or a space). Compiled on first use: only a GGUF needs it.
_WORD = r"[ \u0120\u2581]?[^\W\d_][\w'\-]*"


def on_gguf(check: GGUFCheck) -> Callable[[TokenizerModel], Iterator[Finding]]:
    """A rule that runs only on a model with a GGUF, given the GGUF and what llama.cpp makes of it."""

    @wraps(check)
    def run(model: TokenizerModel) -> Iterator[Finding]:
        g = model.artifacts.gguf
        if g is None:
            return iter(())
        load = model.llamacpp
        assert load is not None  # the model has a GGUF
        return check(model, g, load)

    return run


def _text(g: GGUFTokenizer, i: int | None) -> str:
    if i is None or not 0 <= i < len(g.tokens):
        return "none"
    return f"{i} '{visible(g.tokens[i].decode('utf-8', 'replace'))}'"


#: HF pre-tokenizer regexes whose llama.cpp family is known: regex -> the families that split the same way.
HF_REGEX_FAMILIES: dict[str, frozenset[str]] = {
    # Llama 3 (tokenizer.json Split pattern)
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| "
    r"?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+": frozenset({"LLAMA3", "SMAUG"}),
    # GPT-2's ByteLevel(use_regex=True): llama.cpp's GPT-2 regex
    "gpt2-bytelevel": frozenset({"GPT2", "MPT", "OLMO", "JAIS"}),
}


def hf_regex(model: TokenizerModel) -> str | None:
    """The HF tokenizer.json's pre-tokenizer signature: its Split regex, or ``gpt2-bytelevel``."""
    tj = model.artifacts.tokenizer_json
    if tj is None:
        return None
    pre = tj.raw.get("pre_tokenizer") or {}
    parts = (pre.get("pretokenizers") if pre.get("type") == "Sequence" else [pre]) or []
    for part in parts:
        if isinstance(part, dict) and part.get("type") == "Split":
            pattern = part.get("pattern") or {}
            return pattern.get("Regex") if isinstance(pattern, dict) else None
    if (
        len(parts) == 1
        and isinstance(parts[0], dict)
        and parts[0].get("type") == "ByteLevel"
        and parts[0].get("use_regex", True)
    ):
        return "gpt2-bytelevel"
    return None


#: The llama.cpp whose ``tokenizer.ggml.pre`` names tokaudit's table holds (model/llamacpp_load.py).
LLAMACPP_MIRRORED = "llama.cpp as vendored by llama-cpp-python 0.3.36"


def _installed_llamacpp(g: GGUFTokenizer, state: str) -> tuple[bool | None, str]:
    """For a name outside tokaudit's table: (whether the installed llama.cpp loads the file, its version)."""
    if state != "unknown":
        return None, ""
    from tokaudit.backends.llamacpp_backend import installed_loads, version

    loads = installed_loads(g.path)
    return loads, version() if loads is not None else ""


@rule("TA307")
@on_gguf
def gguf_pre_tokenizer(model: TokenizerModel, g: GGUFTokenizer, load: LlamaCppLoad) -> Iterator[Finding]:
    where = g.source("tokenizer.ggml.pre") if g.pre is not None else g.source("tokenizer.ggml.model")
    loads, installed = _installed_llamacpp(g, load.pre_state)
    if loads:  # a newer llama.cpp than the table's knows the name: said, not refused
        yield gguf_pre_tokenizer.finding(
            f"{g.path.name} says tokenizer.ggml.pre = '{load.pre}', which tokaudit's table ({LLAMACPP_MIRRORED}) does "
            "not "
            f"know, but the installed llama-cpp-python {installed} loads it (a newer llama.cpp knows the name): the "
            "pre-tokenizer's regex family is not checked against the HF files.",
            severity=Severity.NOTE,
            location=where,
            details={
                "pre": load.pre,
                "state": "unknown-to-tokaudit",
                "model": g.model,
                "mirrors": LLAMACPP_MIRRORED,
                "installed_llamacpp": installed,
            },
        )
        return
    asked = (
        "; install llama-cpp-python to ask your own llama.cpp"
        if loads is None
        else f"; the installed llama-cpp-python {installed} refuses it too"
    )
    said = {
        "missing": "has no tokenizer.ggml.pre: llama.cpp logs \"missing pre-tokenizer type, using: 'default'\" and "
        '"GENERATION QUALITY WILL BE DEGRADED!", then splits text with its DEFAULT regexes, not the model\'s',
        "default": "says tokenizer.ggml.pre = 'default' (what Ollama's converter writes for a pre-tokenizer it does "
        "not "
        "recognise): llama.cpp splits text with its DEFAULT regexes, not the model's, and logs nothing",
        "unknown": f"says tokenizer.ggml.pre = '{load.pre}', which llama.cpp does not know: it refuses to load the "
        "file "
        f"(\"unknown pre-tokenizer type: '{load.pre}'\"; tokaudit's table mirrors {LLAMACPP_MIRRORED}"
        f"{asked})",
    }.get(load.pre_state)
    if said is not None:
        yield gguf_pre_tokenizer.finding(
            f"{g.path.name} is a BPE vocabulary that {said}. Token ids then differ from the model's training "
            "(digits, contractions, non-Latin text); regenerate it with convert_hf_to_gguf.py.",
            location=where,
            details={"pre": load.pre, "state": load.pre_state, "model": g.model},
        )
        return
    regex = hf_regex(model)
    families = HF_REGEX_FAMILIES.get(regex or "")
    if families is not None and load.pre_family is not None and load.pre_family not in families:
        yield gguf_pre_tokenizer.finding(
            f"{g.path.name} says tokenizer.ggml.pre = '{load.pre}' (llama.cpp's {load.pre_family} regexes), but "
            f"{model.artifacts.tokenizer_json.name} splits with {'GPT-2' if regex == 'gpt2-bytelevel' else 'another'} "  # type: ignore[union-attr]  # families is set only for a regex hf_regex read from tokenizer.json
            f"regex ({', '.join(sorted(families))} in llama.cpp): the GGUF tokenizes text differently from the HF "
            "files.",
            location=where,
            details={"pre": load.pre, "family": load.pre_family, "hf_regex": regex, "hf_families": sorted(families)},
        )


@rule("TA308")
@on_gguf
def gguf_merges_missing(model: TokenizerModel, g: GGUFTokenizer, load: LlamaCppLoad) -> Iterator[Finding]:
    if load.vocab_type != "BPE":
        return
    if not g.merges and load.load_error is not None and "merges" in load.load_error:
        yield gguf_merges_missing.finding(
            f"{g.path.name} is a BPE vocabulary ({g.model}) without tokenizer.ggml.merges: llama.cpp refuses to load "
            "it "
            '("cannot find tokenizer merges in model file"), and so do Ollama and LM Studio. Old gguf-py versions '
            "dropped "
            "merges that transformers 4.45+ writes as pairs; reconvert with a current convert_hf_to_gguf.py.",
            location=g.source("tokenizer.ggml.tokens"),
            details={"merges": 0, "model": g.model},
        )
        return
    tj = model.artifacts.tokenizer_json
    hf = tj.raw.get("model", {}).get("merges") if tj is not None else None
    if not isinstance(hf, list) or g.merges is None or len(hf) == len(g.merges):
        return
    hf_text = [m if isinstance(m, str) else " ".join(map(str, m)) for m in hf]
    first = next(
        (i for i, (a, b) in enumerate(zip(hf_text, g.merges)) if a.encode("utf-8") != b),
        min(len(hf_text), len(g.merges)),
    )
    yield gguf_merges_missing.finding(
        f"{g.path.name} holds {len(g.merges):,} merges and {tj.name} {len(hf_text):,}: the conversion lost or added "  # type: ignore[union-attr]  # hf is a list only when tj is set
        f"merges (first difference at merge {first}), so llama.cpp merges text into other tokens than the HF files.",
        location=g.source("tokenizer.ggml.merges"),
        details={"gguf_merges": len(g.merges), "hf_merges": len(hf_text), "first_difference": first},
    )


@rule("TA207")
@on_gguf
def eog_mismatch(model: TokenizerModel, g: GGUFTokenizer, load: LlamaCppLoad) -> Iterator[Finding]:
    term = turn_terminator(model)
    if term is None:
        return
    hit = find_content(model.files, term.text)
    term_id = hit[0] if hit is not None else None
    eos = load.id_of("eos")
    if term_id is None or term_id == eos or (g.eos_token_ids and term_id in g.eos_token_ids):
        return
    if load.special["eos"].origin == "default":
        return  # no eos key, or one out of range: TA209 / TA201 report that root cause
    in_eog = term_id in load.eog
    stops = (
        f"llama.cpp (and Ollama, LM Studio on current llama.cpp) stops on it ({load.eog[term_id]} makes it "
        "end-of-generation)"
        if in_eog
        else "llama.cpp does not stop on it either (it is not in llama.cpp's EOG set)"
    )
    yield eog_mismatch.finding(
        f"the chat template ends each turn with {term.text} ({term_id}), but {g.path.name}'s eos id is "
        f"{_text(g, eos)}: "
        f"{stops}; runtimes that stop only on tokenizer.ggml.eos_token_id never stop and run into a fake next turn: "
        f"{', '.join(EOS_ONLY_RUNTIMES)}. Set tokenizer.ggml.eos_token_id to {term_id} "
        '(the Llama 3 "never stops" bug).',
        location=g.source("tokenizer.ggml.eos_token_id")
        if "eos" in g.special_ids
        else g.source("tokenizer.ggml.tokens"),
        ids=IdRanges.from_ids([term_id] + ([eos] if eos is not None else [])),
        details={
            "template_end_of_turn": {"token": term.text, "id": term_id},
            "eos_id": eos,
            "llamacpp_eog": sorted(load.eog),
            "llamacpp_stops": in_eog,
            "eos_only_runtimes": list(EOS_ONLY_RUNTIMES),
        },
    )


def _word_like(text: bytes) -> bool:
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return bool(re.fullmatch(_WORD, decoded)) and not looks_control(decoded) and not is_placeholder(decoded)


@rule("TA208")
@on_gguf
def token_type_mismatch(model: TokenizerModel, g: GGUFTokenizer, load: LlamaCppLoad) -> Iterator[Finding]:
    from tokaudit.artifacts.gguf import CONTROL

    types = g.types or ()
    words = [i for i, t in enumerate(types) if t == CONTROL and _word_like(g.tokens[i])]
    if words:
        shown = ", ".join(_text(g, i) for i in words[:8]) + (" …" if len(words) > 8 else "")
        yield token_type_mismatch.finding(
            f"{len(words)} word token(s) typed CONTROL in {g.path.name}: {shown}. llama.cpp renders CONTROL tokens as "
            '"" '
            'unless specials are shown, so these words vanish from the output ("Under ****, where the  of an  ("); '
            "an added word must be USER_DEFINED.",
            severity=Severity.ERROR,
            location=g.source("tokenizer.ggml.token_type"),
            ids=IdRanges.from_ids(words),
            details={
                "subject": "word-typed-control",
                "tokens": {i: g.tokens[i].decode("utf-8", "replace") for i in words[:64]},
            },
        )
    overridden = sorted(load.control_override)
    if overridden:
        shown = ", ".join(f"{_text(g, i)} typed {g.type_name(i)}" for i in overridden[:8])
        yield token_type_mismatch.finding(
            f"{len(overridden)} control-looking token(s) in {g.path.name} are not typed CONTROL: {shown}. llama.cpp "
            "detects "
            'them by text, makes them CONTROL and logs "this is probably a bug in the model"; a reader that takes the '
            "type "
            "as written (transformers' GGUF loader, other runtimes) treats them as text, so they render and split "
            "differently.",
            location=g.source("tokenizer.ggml.token_type"),
            ids=IdRanges.from_ids(overridden),
            details={"subject": "control-override", "ids": overridden},
        )
    yield from _hf_flag_mismatches(model, g)


def type_flag_mismatches(model: TokenizerModel, g: GGUFTokenizer) -> list[tuple[int, str, str, bool]]:
    """(id, text, GGUF type, HF special flag) for each id whose GGUF type disagrees with the HF files: typed
    CONTROL/UNKNOWN but not special in the HF files (an added word, or a base token), or special there and typed
    otherwise. ``model`` is the HF side (its files table says which ids are special)."""
    from tokaudit.artifacts.gguf import CONTROL, UNKNOWN

    tokens, special = model.files.flat
    types = g.types or ()
    marked = {i for i, kind in enumerate(types) if kind in (CONTROL, UNKNOWN)}
    out = []
    for i in sorted((marked - special) | (set(special) - marked)):
        if i < len(types) and i in tokens:
            out.append((i, tokens[i].decode("utf-8", "replace"), g.type_name(i), i in special))
    return out


def _hf_flag_mismatches(model: TokenizerModel, g: GGUFTokenizer) -> Iterator[Finding]:
    if model.artifacts.gguf_only:
        return
    wrong = type_flag_mismatches(model, g)
    if not wrong:
        return
    shown = ", ".join(f"{i} {visible(c)} ({kind}, special: {str(s).lower()})" for i, c, kind, s in wrong[:8])
    severity = Severity.ERROR if any(kind == "CONTROL" and not s for _, _, kind, s in wrong) else Severity.WARNING
    yield token_type_mismatch.finding(
        f"{len(wrong)} added token(s) whose GGUF type disagrees with the HF special flag: {shown}. A non-special "
        "token typed "
        'CONTROL renders as "" in llama.cpp; a special one typed NORMAL/USER_DEFINED always renders and is split out '
        "of text.",
        severity=severity,
        location=g.source("tokenizer.ggml.token_type"),
        ids=IdRanges.from_ids(i for i, *_ in wrong),
        details={
            "subject": "hf-special-flag",
            "tokens": [{"id": i, "token": c, "type": kind, "special": s} for i, c, kind, s in wrong],
        },
    )


@rule("TA209")
@on_gguf
def default_special_id(model: TokenizerModel, g: GGUFTokenizer, load: LlamaCppLoad) -> Iterator[Finding]:
    from tokaudit.artifacts.gguf import CONTROL, UNKNOWN

    types = g.types or ()
    for name in ("bos", "eos", "unk", "sep", "pad", "mask"):
        s = load.special.get(name)
        if s is None or s.origin != "default" or s.id is None or s.bad_value is not None:
            continue  # an out-of-range value is TA201's finding, which names the default llama.cpp takes
        kind = types[s.id] if s.id < len(types) else 1
        if kind in (CONTROL, UNKNOWN):
            continue  # the default lands on a control token: what the family means by it
        used = (
            (name == "bos" and load.flags.get("add_bos"))
            or name == "eos"
            or (name == "sep" and load.flags.get("add_sep"))
        )
        what = {
            "bos": "put in front of every prompt (add_bos is on)" if load.flags.get("add_bos") else "the BOS id",
            "eos": "an end-of-generation id: generation stops on it",
            "sep": "the separator",
        }.get(name, f"the {name} id")
        yield default_special_id.finding(
            f"{g.path.name} sets no tokenizer.ggml.{name}_token_id: llama.cpp uses the {g.model} default "
            f"{_text(g, s.id)}, "
            f"a {g.type_name(s.id)} text token, as {what}. Set the key to the model's {name} token.",
            severity=Severity.ERROR if used else Severity.WARNING,
            location=g.source("tokenizer.ggml.model"),
            ids=IdRanges.from_ids([s.id]),
            details={"subject": name, "default_id": s.id, "model": g.model, "used": bool(used)},
        )


def gguf_special_out_of_range(model: TokenizerModel) -> Iterator[tuple[str, int, int | None, str]]:
    """(name, file value, the id llama.cpp uses instead, key) for each special-id key outside the GGUF's tokens."""
    g = model.artifacts.gguf
    if g is None:
        return
    from tokaudit.artifacts.gguf import SPECIAL_ID_KEYS

    load = model.llamacpp
    assert load is not None  # the model has a GGUF
    for name, s in load.special.items():
        if s.bad_value is not None:
            key = next(
                (
                    f"tokenizer.ggml.{k}"
                    for k, v in SPECIAL_ID_KEYS.items()
                    if v == name and f"tokenizer.ggml.{k}" in g.key_offsets
                ),
                f"tokenizer.ggml.{name}_token_id",
            )
            yield name, s.bad_value, s.id, key
