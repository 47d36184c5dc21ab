"""What the loaders detect in a model's files before they map ids: the remote tokenizer module, smg's and Dynamo's
Kimi rules, and the ids transformers and HF ``tokenizers`` really give added tokens (``loaders.py`` builds each
loader's view from them; checks read them too)."""

from __future__ import annotations

from typing import Any

from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.records import AddedToken

#: smg ``kimi_k2_tokenizer::matches``: these ``config.json`` model types select the Kimi rules.
SMG_KIMI_MODEL_TYPES = frozenset({"kimi_k2", "kimi_k25", "kimi_k3"})
#: Dynamo ``tiktoken.rs::from_file_auto``: model types it knows a regex for (anything else is an error).
DYNAMO_KIMI_MODEL_TYPES = frozenset({"kimi", "kimi_k2", "kimi_k25", "kimi_k3", "deepseek_v3"})


def _auto_map_strings(model: TokenizerModel) -> list[str]:
    tc = model.artifacts.tokenizer_config
    out: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)

    if tc is not None:
        walk(tc.auto_map)
        if tc.tokenizer_class:
            out.append(tc.tokenizer_class)
    return out


def remote_tokenizer_module(model: TokenizerModel) -> str | None:
    """``tokenization_kimi`` for ``auto_map.AutoTokenizer = ["tokenization_kimi.TikTokenTokenizer", null]``."""
    tc = model.artifacts.tokenizer_config
    if tc is None:
        return None
    value = tc.auto_map.get("AutoTokenizer")
    names = value if isinstance(value, (list, tuple)) else [value]
    for name in names:
        if isinstance(name, str) and "." in name:
            return name.split("--")[-1].rsplit(".", 1)[0]
    return None


def smg_detects_kimi(model: TokenizerModel) -> str | None:
    """Why smg applies its Kimi rules (Han-aware regex, 256 reserved slots), or ``None``."""
    for text in _auto_map_strings(model):
        if "tokenization_kimi" in text.split("--")[-1].split("."):
            return f"tokenizer_config.json names {text}"
    cfg = model.artifacts.config
    if cfg is not None and cfg.model_type in SMG_KIMI_MODEL_TYPES:
        return f"config.json model_type {cfg.model_type}"
    return None


def dynamo_regex_model_type(model: TokenizerModel) -> str | None:
    cfg = model.artifacts.config
    if cfg is not None and cfg.model_type in DYNAMO_KIMI_MODEL_TYPES:
        return cfg.model_type
    return None


def compacted_added_ids(model: TokenizerModel) -> dict[int, int]:
    """Declared id -> the id transformers v5's tiktoken conversion gives an added token.

    The converted ``TokenizersBackend`` appends ``added_tokens_decoder`` in id order right after the
    ranks (``add_tokens()``), so sparse ids are compacted (transformers #45356). Only for rank files
    without a tokenizer.json.
    """
    a = model.artifacts
    if a.tokenizer_json is not None or a.tiktoken is None or a.tokenizer_config is None:
        return {}
    ranks = a.tiktoken.by_id
    out: dict[int, int] = {}
    nxt = len(ranks)
    for tok in a.tokenizer_config.added_tokens_decoder:
        if tok.id is None or tok.id in ranks:
            continue
        out[tok.id] = nxt
        nxt += 1
    return out


def tokenizers_added_ids(model: TokenizerModel) -> list[tuple[AddedToken, int]]:
    """(added token, the id HF ``tokenizers`` really gives it) for tokenizer.json's ``added_tokens``.

    ``tokenizers`` ignores an added token's ``id``: content already in the vocabulary takes the
    vocabulary's id; new content gets ``max(added so far) + 1``, or the vocabulary size (number of
    entries) while that is larger, in list order (research/audit_tools.md 8.3).
    """
    tj = model.artifacts.tokenizer_json
    if tj is None:
        return []
    by_content = tj.first_id_by_content
    size = len(tj.vocab) + len(tj.duplicate_ids)  # the model's entry count, holes not counted
    assigned: dict[str, int] = {}
    top: int | None = None  # max(assigned.values()), kept as we go
    out: list[tuple[AddedToken, int]] = []
    for tok in tj.added_tokens:
        new = assigned.get(tok.content, by_content.get(tok.content))
        if new is None:
            new = size if top is None or (top < size and size > 0) else top + 1
        assigned[tok.content] = new
        top = new if top is None else max(top, new)
        out.append((tok, new))
    return out
