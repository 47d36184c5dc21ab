"""The pipeline a loader really runs over tokenizer.json (TA309 loader-rebuild, TA310 decoder-mismatch).

TA309 mirrors transformers 5.24.0's ``AutoTokenizer.from_pretrained`` for a local directory without remote
code (``models/auto/tokenization_auto.py``): the class named by tokenizer_config.json's ``tokenizer_class``
is loaded, except that a ``LlamaTokenizer`` whose tokenizer.json is byte-level is loaded as
``TokenizersBackend`` (the guard present since 5.23). A class whose ``__init__`` builds its own
normalizer / pre-tokenizer / decoder over tokenizer.json's vocabulary and merges replaces the file's
pipeline: :data:`REBUILDS` holds the ones tokaudit models, each as the components its ``__init__`` sets. The
finding is raised only when the rebuilt pipeline encodes a probe text to other ids than tokenizer.json's
own (both run by ``tokenizers``), so a class that rebuilds the same pipeline (Gemma, GPT-2's own file) is
silent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from tokaudit.records import Provenance
from tokaudit.artifacts.tokenizer_json import TokenizerJson
from tokaudit.checks.registry import rule
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Finding
from tokaudit.report.text import visible

#: The transformers release whose class resolution and class pipelines TA309 mirrors.
TRANSFORMERS_MIRRORED = "5.24.0"
#: Texts both pipelines encode: leading and repeated spaces, contractions, digits, scripts, code, emoji.
PROBES = (
    "Hello world",
    "  leading and trailing spaces  ",
    "I'm sure you've seen 1234567 of them.",
    "北京天气很好，東京は晴れ。 مرحبا بالعالم",
    "def f(x):\n    return x  # 🚀\n",
    "naïve café — “quoted”",
)


def _types(component: Any) -> list[str]:
    if not isinstance(component, dict):
        return []
    parts = component.get("pretokenizers") or component.get("decoders") or component.get("normalizers")
    if component.get("type") == "Sequence" and isinstance(parts, list):
        return [t for sub in parts for t in _types(sub)]
    return [str(component.get("type"))]


def _flag(model: TokenizerModel, key: str, default: bool) -> bool:
    cfg = model.artifacts.tokenizer_config
    value = cfg.loader_flags.get(key) if cfg is not None else None
    return default if value is None else value


def _llama(model: TokenizerModel) -> dict[str, Any]:
    """LlamaTokenizer.__init__: no normalizer, Metaspace (prepend 'first', or 'always' when legacy, 'never'
    without add_prefix_space; split off), decoder ▁ -> space, byte fallback, fuse, strip one leading space."""
    add_prefix_space = _flag(model, "add_prefix_space", True)
    scheme = ("first" if not _flag(model, "legacy", False) else "always") if add_prefix_space else "never"
    decoders: list[dict[str, Any]] = [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
        {"type": "ByteFallback"},
        {"type": "Fuse"},
    ]
    if add_prefix_space:
        decoders.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
    return {
        "normalizer": None,
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": scheme, "split": False},
        "decoder": {"type": "Sequence", "decoders": decoders},
    }


def _gpt2(model: TokenizerModel) -> dict[str, Any]:
    """GPT2Tokenizer.__init__: no normalizer, ByteLevel with GPT-2's own regex, ByteLevel decoder."""
    byte_level = {
        "type": "ByteLevel",
        "add_prefix_space": _flag(model, "add_prefix_space", False),
        "trim_offsets": True,
        "use_regex": True,
    }
    return {"normalizer": None, "pre_tokenizer": byte_level, "decoder": {**byte_level, "add_prefix_space": True}}


#: Class (tokenizer_class without "Fast") -> the pipeline its __init__ builds over tokenizer.json's model.
REBUILDS: dict[str, Callable[[TokenizerModel], dict[str, Any]]] = {"LlamaTokenizer": _llama, "GPT2Tokenizer": _gpt2}


def transformers_class(model: TokenizerModel) -> tuple[str | None, str]:
    """(the class transformers' AutoTokenizer builds from these files, why), as 5.24.0 resolves it for a
    directory with a tokenizer.json; None when remote code or no tokenizer_class decides."""
    a = model.artifacts
    cfg = a.tokenizer_config
    if cfg is None or cfg.tokenizer_class is None:
        return None, "no tokenizer_class: TokenizersBackend reads tokenizer.json as it is"
    if "AutoTokenizer" in cfg.auto_map:
        return None, "auto_map: the model's own class"
    name = cfg.tokenizer_class.removesuffix("Fast")
    tj = a.tokenizer_json
    if (
        name == "LlamaTokenizer"
        and tj is not None
        and "ByteLevel" in _types(tj.raw.get("pre_tokenizer")) + _types(tj.raw.get("decoder"))
    ):
        return (
            "TokenizersBackend",
            "tokenizer_class LlamaTokenizer over a byte-level tokenizer.json is loaded as TokenizersBackend",
        )
    return name, f"{cfg.name} tokenizer_class {cfg.tokenizer_class}"


def _same(rebuilt: dict[str, Any], tj: TokenizerJson) -> bool:
    return all(tj.raw.get(key) == value for key, value in rebuilt.items() if key != "decoder")


def _rebuilt_differs(tj: TokenizerJson, rebuilt: dict[str, Any]) -> tuple[str, list[int], list[int]] | None:
    """The first probe the rebuilt pipeline encodes to other ids than tokenizer.json's: (text, file ids, rebuilt
    ids). One tokenizer is built from the parsed file; the probes are encoded, its normalizer and pre-tokenizer
    swapped for the class's (taken from a vocabulary-less shell), and encoded again. The answer is kept in the
    result cache under the file's hash and the rebuilt components."""
    from tokaudit.result_cache import cache_key, conforms, installed_version, load, store

    key = cache_key(
        "loader-rebuild",
        {"file": tj.digest, "rebuilt": rebuilt, "tokenizers": installed_version("tokenizers"), "probes": PROBES},
        ("tokaudit.checks.pipeline_rules",),
    )
    hit = load(
        key, lambda v: conforms(v, {"text": None}) or conforms(v, {"text": str, "file": [int], "rebuilt": [int]})
    )
    if hit is not None:
        return (hit["text"], hit["file"], hit["rebuilt"]) if hit["text"] is not None else None
    found = _encode_both(tj, rebuilt)
    store(key, {"text": found[0], "file": found[1], "rebuilt": found[2]} if found else {"text": None})
    return found


def _encode_both(tj: TokenizerJson, rebuilt: dict[str, Any]) -> tuple[str, list[int], list[int]] | None:
    import json

    from tokenizers import Tokenizer

    from tokaudit.backends.hf_backend import tokenizer_from_parsed

    tok = tokenizer_from_parsed(tj)
    if tok is None:
        return None
    original = [tok.encode(text, add_special_tokens=False).ids for text in PROBES]
    shell = Tokenizer.from_str(
        json.dumps(
            {
                "version": "1.0",
                "truncation": None,
                "padding": None,
                "added_tokens": [],
                "post_processor": None,
                **rebuilt,
                "model": {"type": "BPE", "vocab": {}, "merges": []},
            }
        )
    )
    tok.normalizer = shell.normalizer
    tok.pre_tokenizer = shell.pre_tokenizer
    for text, ids in zip(PROBES, original):
        other = tok.encode(text, add_special_tokens=False).ids
        if other != ids:
            return text, ids, other
    return None


@rule("TA309")
def loader_rebuild(model: TokenizerModel) -> Iterator[Finding]:
    tj = model.artifacts.tokenizer_json
    if tj is None or tj.model_type != "BPE":
        return
    name, why = transformers_class(model)
    build = REBUILDS.get(name or "")
    if build is None:
        return
    rebuilt = build(model)
    if _same(rebuilt, tj):
        return
    try:
        differs = _rebuilt_differs(tj, rebuilt)
    except Exception:  # noqa: BLE001 - tokenizers raises plain Exception; compare reports a file it cannot load
        return
    if differs is None:
        return
    text, ids, other = differs
    cfg = model.artifacts.tokenizer_config
    assert cfg is not None
    described = ", ".join(
        f"{key} {(rebuilt[key] or {}).get('type', 'none')}" for key in ("normalizer", "pre_tokenizer")
    )
    yield loader_rebuild.finding(
        f"transformers {TRANSFORMERS_MIRRORED}'s AutoTokenizer builds {name} ({why}), whose constructor replaces "
        f"{tj.name}'s normalizer and pre-tokenizer with its own ({described}): {visible(repr(text))} encodes to "
        f"{other[:12]} instead of {ids[:12]}. transformers, and vLLM and SGLang through it, then tokenize differently "
        f'from tokenizers, TGI and smg on the same files. Setting tokenizer_class to "TokenizersBackend" in {cfg.name} '
        "makes transformers read tokenizer.json as it is.",
        location=Provenance(cfg.name, key="tokenizer_class"),
        details={
            "transformers": TRANSFORMERS_MIRRORED,
            "class": name,
            "why": why,
            "rebuilt": rebuilt,
            "example": {"text": text, "tokenizer_json": ids, "rebuilt": other},
            "prevented_by": f"{cfg.name} tokenizer_class: TokenizersBackend",
        },
    )


@rule("TA310")
def decoder_mismatch(model: TokenizerModel) -> Iterator[Finding]:
    tj = model.artifacts.tokenizer_json
    if tj is None:
        return
    pre = _types(tj.raw.get("pre_tokenizer"))
    decoder = tj.raw.get("decoder")
    dec = _types(decoder)
    normalizers = tj.raw.get("normalizer")
    metaspace = "Metaspace" in pre or any(
        isinstance(n, dict) and n.get("type") == "Replace" and n.get("content") == "\u2581"
        for n in ([normalizers] + (normalizers.get("normalizers") or [] if isinstance(normalizers, dict) else []))
    )
    if "ByteLevel" in pre and "ByteLevel" not in dec:
        shown = "null" if decoder is None else " → ".join(dec) or "none"
        example = "'Ġhello' for ' hello', 'âĢĻ' for '’'"
        why = f"its pre-tokenizer is ByteLevel (bytes spelled as printable characters) but its decoder is {shown}"
    elif decoder is None and metaspace:
        example = "'▁Hello▁world' for ' Hello world'"
        why = "its text has spaces as ▁ (Metaspace or a Replace normalizer) but its decoder is null"
    else:
        return
    yield decoder_mismatch.finding(
        f"{tj.name} decodes to the wrong text: {why}, so tokenizers, transformers and every Rust gateway decode "
        f"ids to the spelled-out token strings ({example}). Give tokenizer.json the decoder its pre-tokenizer needs.",
        location=Provenance(tj.name, key="decoder"),
        details={"pre_tokenizer": pre, "decoder": dec if decoder is not None else None},
    )
