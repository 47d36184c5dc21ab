"""What llama.cpp makes of a GGUF's tokenizer when it loads it (``llama_vocab::impl::load`` in
src/llama-vocab.cpp, as vendored by llama-cpp-python 0.3.36), computed from the keys alone.

The port covers what decides serving behaviour: the per-model default special ids, the pre-tokenizer
name and the flags it forces (``add_bos`` for the llama-bpe family), EOT/EOM/FIM detection by token
text, the "control-looking token" type override, the EOG (end-of-generation) set with its exceptions,
and the reasons llama.cpp refuses to load a file. tests/real/test_gguf_real.py checks it against
llama-cpp-python on llama.cpp's 19 vocab GGUFs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tokaudit.artifacts.gguf import CONTROL
from tokaudit.model.llamacpp_vocab import (
    ATTR_CONTROL,
    ATTR_NORMAL,
    ATTR_UNKNOWN,
    ATTR_UNUSED,
    ATTR_USER_DEFINED,
    TYPE_ATTR,
    VOCAB_TYPES,
    NotEmulated,
    PieceAbort,
    PieceRules,
    byte_level_pieces,
    token_piece,
)

if TYPE_CHECKING:
    from tokaudit.artifacts.gguf import GGUFTokenizer

#: tokenizer.ggml.model -> special ids llama.cpp uses when the file sets none (``LLAMA_TOKEN_NULL`` left out).
# fmt: off
MODEL_DEFAULT_IDS: dict[str, dict[str, int]] = {
    "llama": {"bos": 1, "eos": 2, "unk": 0},
    "bert": {"bos": 101, "unk": 100, "sep": 102, "pad": 0, "mask": 103},
    "gpt2": {"bos": 11, "eos": 11}, "hybriddna": {"bos": 11, "eos": 11}, "whitespace": {"bos": 11, "eos": 11},
    "t5": {"eos": 1, "unk": 2, "pad": 0},
    "plamo2": {"bos": 1, "eos": 2, "unk": 0, "pad": 3},
    "gemma4": {}, "rwkv": {},
}
# fmt: on
#: vocabulary type -> the add flags llama.cpp starts from (then the pre-tokenizer's, then the file's keys).
# fmt: off
TYPE_FLAGS: dict[str, dict[str, bool]] = {
    "SPM": {"add_bos": True, "add_eos": False, "add_sep": False, "add_space_prefix": True, "clean_spaces": False},
    "WPM": {"add_bos": True, "add_eos": False, "add_sep": True, "add_space_prefix": False, "clean_spaces": True},
    "UGM": {"add_bos": False, "add_eos": True, "add_sep": False, "add_space_prefix": False, "clean_spaces": False},
    "RWKV": {"add_bos": False, "add_eos": False, "add_sep": False, "add_space_prefix": False, "clean_spaces": False},
    "BPE": {"add_bos": False, "add_eos": False, "add_sep": False, "add_space_prefix": False, "clean_spaces": True},
    "PLAMO2": {"add_bos": False, "add_eos": False, "add_sep": False, "add_space_prefix": False, "clean_spaces": False},
}
# fmt: on


def _pre_table() -> dict[str, tuple[str, frozenset[str]]]:
    """``tokenizer.ggml.pre`` name -> (llama.cpp's regex family, the flags it sets): ``ignore_merges``,
    ``add_bos`` (forced on), ``no_clean_spaces``, ``add_sep``, ``escape_whitespaces``, ``no_bos``."""
    # fmt: off
    rows: list[tuple[str, str, str]] = [
        ("default", "DEFAULT", ""), ("minicpm5", "MINICPM5", "ignore_merges"),
        ("llama3 llama-v3 llama-bpe falcon3 falcon-h1 pixtral midm-2.0 lfm2 jina-v5-nano", "LLAMA3",
         "ignore_merges add_bos"),
        ("deepseek-llm", "DEEPSEEK_LLM", "no_clean_spaces"), ("deepseek-coder", "DEEPSEEK_CODER", "no_clean_spaces"),
        ("deepseek-v3", "DEEPSEEK3_LLM", "no_clean_spaces"), ("spark2_5", "SPARK2_5", "no_clean_spaces"),
        ("youtu", "YOUTU", "no_clean_spaces ignore_merges"), ("falcon", "FALCON", ""), ("mpt", "MPT", ""),
        ("starcoder", "STARCODER", ""),
        ("gpt-2 phi-2 jina-es jina-de gigachat jina-v2-es jina-v2-de a.x-4.0 mellum modern-bert exaone4", "GPT2", ""),
        ("jais-2", "JAIS2", ""), ("gemma4 granite-embed-multi-311m", "GEMMA4", "escape_whitespaces"),
        ("sarvam-moe", "SARVAM_MOE", "escape_whitespaces no_clean_spaces"),
        ("jina-v1-en jina-v2-code roberta-bpe", "GPT2", "add_sep"), ("whitespace", "WHITESPACE", ""),
        ("refact", "REFACT", ""), ("command-r", "COMMAND_R", "no_clean_spaces"),
        ("qwen2 deepseek-r1-qwen kormo f2llmv2", "QWEN2", "no_clean_spaces"), ("qwen35", "QWEN35", "no_clean_spaces"),
        ("stablelm2", "STABLELM2", ""), ("olmo", "OLMO", ""), ("dbrx", "DBRX", ""), ("smaug-bpe", "SMAUG", ""),
        ("poro-chat", "PORO", "no_clean_spaces"), ("chatglm-bpe", "CHATGLM4", "no_bos"),
        ("glm4 glm5", "CHATGLM4", "no_bos ignore_merges"), ("viking", "VIKING", "no_clean_spaces"),
        ("jais", "JAIS", ""),
        ("tekken", "TEKKEN", "no_clean_spaces ignore_merges add_bos"), ("smollm", "SMOLLM", "no_clean_spaces"),
        ("codeshell", "CODESHELL", ""), ("bloom", "BLOOM", ""), ("gpt3-finnish", "GPT3_FINNISH", ""),
        ("exaone", "EXAONE", ""), ("exaone-moe", "EXAONE_MOE", ""),
        ("chameleon", "CHAMELEON", "add_bos no_clean_spaces"),
        ("minerva-7b", "MINERVA", ""), ("megrez", "QWEN2", ""),
        ("gpt-4o llama4 kanana2 talkie", "GPT4O", "no_clean_spaces"),
        ("granite-embed-multi-97m", "GRANITE_EMB_MULTI", "no_clean_spaces ignore_merges"),
        ("tiny_aya cohere2moe", "TINY_AYA", "no_clean_spaces"), ("superbpe", "SUPERBPE", "no_clean_spaces"),
        ("trillion", "TRILLION", "no_clean_spaces"), ("granite-docling", "GRANITE_DOCLING", "no_clean_spaces"),
        ("bailingmoe bailingmoe2 llada-moe", "BAILINGMOE", "no_clean_spaces"),
        ("seed-coder", "SEED_CODER", "no_clean_spaces"),
        ("hunyuan", "HUNYUAN", "no_clean_spaces"), ("hunyuan-dense", "HUNYUAN_DENSE", "no_clean_spaces"),
        ("hy_v4", "HY_V4", "no_clean_spaces"), ("joyai-llm", "JOYAI_LLM", "no_clean_spaces"),
        ("kimi-k2", "KIMI_K2", "no_clean_spaces"), ("ufakzeka", "UFAKZEKA", "no_clean_spaces"),
        ("grok-2", "GROK_2", "no_clean_spaces"), ("afmoe", "AFMOE", "no_clean_spaces"),
        ("laguna", "LAGUNA", "no_clean_spaces"),
        ("minimax-m2", "MINIMAX_M2", "no_clean_spaces"), ("solar-open", "SOLAR_OPEN", "no_clean_spaces"),
        ("mellum2", "MELLUM2", ""),
    ]
    # fmt: on
    return {name: (family, frozenset(flags.split())) for names, family, flags in rows for name in names.split()}


PRE_TOKENIZERS = _pre_table()

#: EOT candidates by text, in llama.cpp's order (it iterates an unordered_map; the first of these found wins
#: in practice: Llama 3 128009 <|eot_id|>, Qwen2 151645 <|im_end|>, Phi-3 32007 <|end|>).
# fmt: off
EOT_TEXTS = ("<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>",
             "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>")
DETECTED: dict[str, tuple[str, ...]] = {
    "eot": EOT_TEXTS,
    "eom": ("<|eom_id|>",),
    "fim_pre": ("<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>",
                "<|code_prefix|>", "<|prefix|>"),
    "fim_suf": ("<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>",
                "<|code_suffix|>", "<|suffix|>"),
    "fim_mid": ("<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>",
                "<|middle|>"),
    "fim_pad": ("<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"),
    "fim_rep": ("<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"),
    "fim_sep": ("<|file_sep|>",),
}
# fmt: on
#: Tokens llama.cpp makes end-of-generation by their text alone.
# fmt: off
EOG_TEXTS = ("<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
             "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
             "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~[")
# fmt: on
#: gpt-oss's markers, always rendered (llama.cpp forces them USER_DEFINED).
ALWAYS_RENDERED = ("<|channel|>", "<|message|>", "<|start|>", "<|constrain|>")
#: Every special id llama.cpp resolves, in its order.
# fmt: off
SPECIAL_NAMES = ("bos", "eos", "eot", "eom", "unk", "sep", "pad", "mask", "fim_pre", "fim_suf", "fim_mid", "fim_pad",
                 "fim_rep", "fim_sep")
# fmt: on


@dataclass(frozen=True)
class SpecialId:
    """One special id as llama.cpp resolves it, and where it came from: ``file`` (the GGUF key), ``default``
    (the model family's default: the file sets none, or an out-of-range value), ``detected`` (by token text)."""

    name: str
    id: int | None
    origin: str | None
    #: The file's value when it is out of range (llama.cpp warns "bad special token" and keeps the default).
    bad_value: int | None = None


@dataclass(frozen=True)
class LlamaCppLoad:
    model: str
    vocab_type: str | None
    #: ``tokenizer.ggml.pre`` as llama.cpp reads it (gemma4 forces its own), and its state: ``ok``, ``missing``,
    #: ``default`` (both use llama.cpp's DEFAULT regexes), ``unknown`` (llama.cpp refuses the file), ``n/a`` (not BPE).
    pre: str | None
    pre_state: str
    pre_family: str | None
    flags: Mapping[str, bool]
    #: flag -> what set it: "GGUF key", "pre-tokenizer <name>", "<type> default", "Gemma 4 workaround".
    flag_origin: Mapping[str, str]
    special: Mapping[str, SpecialId]
    #: id -> why llama.cpp stops on it.
    eog: Mapping[int, str]
    #: id -> the attribute llama.cpp gives it instead of its type's (control-looking overrides, gpt-oss, exceptions).
    attr_override: Mapping[int, int]
    #: ids made CONTROL although the GGUF types them otherwise (llama.cpp: "this is probably a bug in the model").
    control_override: frozenset[int]
    #: Why llama.cpp refuses to load the file (it throws), else None.
    load_error: str | None = None
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def id_of(self, name: str) -> int | None:
        s = self.special.get(name)
        return None if s is None else s.id


#: Every token text the load looks up (detection, EOG, the gpt-oss markers, the exceptions' markers).
_LOOKED_UP = frozenset(
    t.encode()
    for t in (*(t for texts in DETECTED.values() for t in texts), *EOG_TEXTS, *ALWAYS_RENDERED, "<|plamo:eos|>")
)


def _text_ids(tokens: Sequence[bytes]) -> dict[bytes, int]:
    """llama.cpp's ``token_to_id`` for the texts the load looks up: text -> the last id with that text."""
    wanted = _LOOKED_UP
    return {t: i for i, t in enumerate(tokens) if t in wanted}


def _pre(g: GGUFTokenizer, vocab_type: str | None) -> tuple[str | None, str, str | None, frozenset[str]]:
    if vocab_type != "BPE":
        return g.pre, "n/a", None, frozenset()
    pre = "gemma4" if g.model == "gemma4" else g.pre
    if not pre:
        return None, "missing", "DEFAULT", frozenset()
    if pre == "default":
        return pre, "default", "DEFAULT", frozenset()
    row = PRE_TOKENIZERS.get(pre)
    if row is None:
        return pre, "unknown", None, frozenset()
    return pre, "ok", row[0], row[1]


def _flags(
    g: GGUFTokenizer, vocab_type: str | None, pre: str | None, pre_flags: frozenset[str], pre_family: str | None
) -> tuple[dict[str, bool], dict[str, str]]:
    flags = dict(TYPE_FLAGS.get(vocab_type or "", TYPE_FLAGS["BPE"]))
    origin = {k: f"{vocab_type} default" for k in flags}
    for flag in ("add_bos", "add_sep"):
        if flag in pre_flags:
            flags[flag], origin[flag] = True, f"pre-tokenizer {pre}"
    if "no_clean_spaces" in pre_flags:
        flags["clean_spaces"], origin["clean_spaces"] = False, f"pre-tokenizer {pre}"
    for flag in ("add_space_prefix", "add_bos", "add_eos", "add_sep"):
        if flag in g.flags:
            flags[flag], origin[flag] = g.flags[flag], "GGUF key"
    if pre_family == "GEMMA4" and not flags["add_bos"]:
        flags["add_bos"], origin["add_bos"] = True, "Gemma 4 workaround (llama.cpp overrides add_bos_token to true)"
    return flags, origin


def llamacpp_load(g: GGUFTokenizer) -> LlamaCppLoad:
    """The tokenizer state llama.cpp builds from this GGUF at load."""
    model = g.model or ""
    vocab_type = VOCAB_TYPES.get(model)
    pre, pre_state, pre_family, pre_flags = _pre(g, vocab_type)
    flags, flag_origin = _flags(g, vocab_type, pre, pre_flags, pre_family)
    n = len(g.tokens)
    warnings: list[str] = []
    load_error = None
    if vocab_type is None and model not in ("no_vocab", "none"):
        load_error = f"unknown tokenizer: '{model}'"
    elif vocab_type == "BPE" and not g.merges and not (model != "gemma4" and pre == "kimi-k2"):
        load_error = "cannot find tokenizer merges in model file"
    elif pre_state == "unknown":
        load_error = f"unknown pre-tokenizer type: '{pre}'"
    if pre_state == "missing":
        warnings.append("missing pre-tokenizer type, using: 'default' … GENERATION QUALITY WILL BE DEGRADED!")

    special: dict[str, SpecialId] = {}
    defaults = dict(MODEL_DEFAULT_IDS.get(model, {}))
    if "no_bos" in pre_flags:
        defaults.pop("bos", None)
    for name in SPECIAL_NAMES:
        value = defaults.get(name)
        origin = "default" if value is not None else None
        if value is not None and value >= n:
            warnings.append(f"default special token '{name}' = {value} out of vocab range, disabling")
            value, origin = None, None
        file_value = g.special_ids.get(name)
        bad = None
        if file_value is not None:
            if 0 <= file_value < n:
                value, origin = file_value, "file"
            else:
                bad = file_value
                warnings.append(
                    f"bad special token: '{name}' = {file_value}, using default id {value if value is not None else -1}"
                )
        special[name] = SpecialId(name, value, origin, bad)

    types = g.types

    def base_attr(i: int) -> int:
        return TYPE_ATTR.get(types[i], 0) if types is not None else ATTR_NORMAL

    #: id -> the attribute llama.cpp sets in place of its type's
    attrs: dict[int, int] = {}
    text_ids = _text_ids(g.tokens)

    def make_control(i: int) -> None:
        attr = attrs.get(i, base_attr(i))
        if not attr & ATTR_CONTROL:
            warnings.append(
                f"control-looking token: {i} '{g.tokens[i].decode('utf-8', 'replace')}' was not control-type; "
                "this is probably a bug in the model. its type will be overridden"
            )
            attrs[i] = attr | ATTR_CONTROL

    for name, texts in DETECTED.items():
        if special[name].id is not None:
            continue
        found = next((text_ids[t.encode()] for t in texts if t.encode() in text_ids), None)
        if found is not None:
            special[name] = SpecialId(name, found, "detected")
            make_control(found)
    # CONTROL tokens whose text says "unused" become UNUSED too
    control_typed = (i for i, kind in enumerate(types) if kind == CONTROL) if types is not None else iter(())
    for i in {*control_typed, *attrs}:
        attr = attrs.get(i, base_attr(i))
        if attr & ATTR_CONTROL and b"unused" in g.tokens[i]:
            attrs[i] = attr | ATTR_UNUSED

    eog: dict[int, str] = {}
    for name in ("fim_pad", "fim_rep", "fim_sep"):
        if (tid := special[name].id) is not None:
            eog.setdefault(tid, f"{name} id")
    for t in EOG_TEXTS:
        tid = text_ids.get(t.encode())
        if tid is not None:
            eog.setdefault(tid, f"its text {t}")
            make_control(tid)
    for t in ALWAYS_RENDERED:
        if (tid := text_ids.get(t.encode())) is not None:
            attrs[tid] = ATTR_USER_DEFINED
    for name in ("eos", "eot", "eom"):
        tid = special[name].id
        if tid is not None and tid not in eog:
            eog[tid] = f"the {name} id"
            warnings.append(f"special_{name}_id is not in special_eog_ids - the tokenizer config may be incorrect")
    eog_texts = {g.tokens[tid]: tid for tid in eog if 0 <= tid < n}
    if b"<|end|>" in eog_texts and (
        (b"<|return|>" in eog_texts and (b"<|call|>" in eog_texts or b"<|calls|>" in eog_texts))
        or ((b"<|call|>" in eog_texts or b"<|calls|>" in eog_texts) and b"<|flush|>" in eog_texts)
    ):
        end = eog_texts[b"<|end|>"]
        del eog[end]
        attrs[end] = ATTR_USER_DEFINED
    if b"</s>" in eog_texts and (b"<|tool_response>" in eog_texts or b"<|plamo:eos|>" in eog_texts):
        s = eog_texts[b"</s>"]
        del eog[s]
        attrs[s] = ATTR_NORMAL
    override = {i: a for i, a in sorted(attrs.items()) if a != base_attr(i)}
    control = frozenset(i for i, a in override.items() if a & ATTR_CONTROL and not base_attr(i) & ATTR_CONTROL)
    return LlamaCppLoad(
        model,
        vocab_type,
        pre,
        pre_state,
        pre_family,
        flags,
        flag_origin,
        special,
        eog,
        override,
        control,
        load_error,
        tuple(warnings),
    )


def special_cache(g: GGUFTokenizer, load: LlamaCppLoad) -> dict[str, int]:
    """text -> id of llama.cpp's special-token cache: every CONTROL, USER_DEFINED or UNKNOWN token after the
    load-time overrides (``load``: :attr:`TokenizerModel.llamacpp`); ``llama_tokenize(parse_special=true)`` splits
    these out of text whole."""
    types = g.types
    marked = ATTR_CONTROL | ATTR_USER_DEFINED | ATTR_UNKNOWN
    out: dict[str, int] = {}
    for i, token in enumerate(g.tokens):
        attr = load.attr_override.get(i, TYPE_ATTR.get(types[i], 0) if types is not None else ATTR_NORMAL)
        if attr & marked:
            out.setdefault(token.decode("utf-8", "replace"), i)
    return out


def piece_rules(g: GGUFTokenizer, load: LlamaCppLoad) -> PieceRules:
    """The piece rules of a GGUF as llama.cpp loads it (``load``, with its control-looking overrides)."""
    return PieceRules.from_gguf(g.tokens, g.types, g.model or "", g.pre, load.control_override, load.attr_override)


def gguf_pieces(g: GGUFTokenizer, load: LlamaCppLoad) -> dict[int, bytes]:
    """id -> the bytes llama.cpp renders for it with specials on. A vocabulary whose pieces tokaudit does not
    emulate (RWKV, PLaMo-2, an unknown model) keeps each token's raw bytes; a piece llama.cpp aborts making
    keeps them too (the backend reports the abort)."""
    try:
        rules = piece_rules(g, load)
    except NotEmulated:
        return dict(enumerate(g.tokens))
    out: list[bytes | None] = [None] * len(g.tokens)
    if rules.vocab_type == "BPE" and not rules.escape_whitespaces:  # byte-level text: decoded in one pass
        changed = {*rules.attr_override, *rules.control_override}
        kinds = rules.types if rules.types is not None else [1] * len(g.tokens)
        bulk = [i for i, (token, kind) in enumerate(zip(g.tokens, kinds)) if token and kind == 1 and i not in changed]
        for i, piece in zip(bulk, byte_level_pieces([g.tokens[i] for i in bulk])):
            out[i] = piece
    for i in [i for i, piece in enumerate(out) if piece is None]:
        try:
            out[i] = token_piece(rules, i, True)
        except (NotEmulated, PieceAbort):
            out[i] = g.tokens[i]
    return dict(enumerate(out))  # type: ignore[arg-type]  # the loop above filled every None
