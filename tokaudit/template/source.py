"""Which chat templates a target ships, and what the serving stack puts in their context."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tokaudit.artifacts.safe_files import read_text
from tokaudit.artifacts.strict_json import read_json_object
from tokaudit.records import Provenance
from tokaudit.errors import InputError
from tokaudit.model.tokenizer_model import TokenizerModel

#: Special-token fields transformers passes to every template render (``**self.special_tokens_map``).
CONTEXT_FIELDS = ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token")


@dataclass(frozen=True)
class TemplateSource:
    """One chat template: its text, its name (``default``, ``tool_use``, ...) and where it came from."""

    name: str
    text: str
    location: Provenance

    @property
    def file(self) -> str:
        return self.location.file

    def to_json(self) -> dict[str, object]:
        return {"source": str(self.location), "name": self.name}


def _from_config(model: TokenizerModel) -> list[TemplateSource]:
    cfg = model.artifacts.tokenizer_config
    if cfg is None or cfg.chat_template is None:
        return []
    name = cfg.name
    if not cfg.path.is_file():  # a single-file target: the record is all there is
        return [TemplateSource("default", cfg.chat_template, Provenance(name, key="chat_template"))]
    raw = read_json_object(cfg.path).get("chat_template")
    if isinstance(raw, list):  # the list-of-named-templates form: every one is rendered
        out = []
        for i, entry in enumerate(raw):
            if (
                isinstance(entry, dict)
                and isinstance(entry.get("name"), str)
                and isinstance(entry.get("template"), str)
            ):
                out.append(
                    TemplateSource(
                        entry["name"], entry["template"], Provenance(name, key=f"chat_template[{i}].template")
                    )
                )
        return out
    return [TemplateSource("default", cfg.chat_template, Provenance(name, key="chat_template"))]


def model_templates(model: TokenizerModel) -> list[TemplateSource]:
    """``chat_template.jinja`` (which transformers prefers), else tokenizer_config.json's ``chat_template``."""
    a = model.artifacts
    if a.chat_template is not None:
        return [TemplateSource("default", a.chat_template.text, Provenance(a.chat_template.name, line=1))]
    if a.gguf_only:  # tokenizer.chat_template and the named tokenizer.chat_template.NAME (llama.cpp reads tool_use)
        g = a.gguf
        assert g is not None  # gguf_only: a GGUF is there
        return [
            TemplateSource(name, text, g.source("tokenizer.chat_template" + ("" if name == "default" else f".{name}")))
            for name, text in g.chat_templates.items()
        ]
    return _from_config(model)


def file_template(path: Path) -> TemplateSource:
    """``--template FILE``: a Jinja template file, which replaces the target's own templates."""
    text = read_text(path)
    if not text.strip():
        raise InputError("the template file is empty", file=str(path), key="--template")
    return TemplateSource(path.stem, text, Provenance(path.name, line=1))


def special_token_context(model: TokenizerModel) -> dict[str, str]:
    """bos_token, eos_token, ... as their text (the ``content`` of AddedToken dicts), as transformers passes them."""
    out: dict[str, str] = {}
    if model.artifacts.gguf_only:  # llama.cpp's server passes bos_token and eos_token, as the tokens' text
        g = model.artifacts.gguf
        load = model.llamacpp  # set: the model is a GGUF
        assert g is not None and load is not None
        for name in ("bos", "eos"):
            i = load.id_of(name)
            if i is not None:
                out[f"{name}_token"] = g.tokens[i].decode("utf-8", "replace")
        return out
    for record in (model.artifacts.special_tokens_map, model.artifacts.tokenizer_config):
        if record is not None:
            out.update({k: v.content for k, v in record.special.items() if k in CONTEXT_FIELDS})
    return out


def add_bos_token(model: TokenizerModel) -> bool | None:
    """tokenizer_config.json ``add_bos_token`` (what transformers' slow and Llama classes honour), if set."""
    cfg = model.artifacts.tokenizer_config
    if cfg is None or not cfg.path.is_file():
        return None
    value = read_json_object(cfg.path).get("add_bos_token")
    return value if isinstance(value, bool) else None


@dataclass(frozen=True)
class Disagreement:
    """TA808: the template sources a target ships disagree."""

    message: str
    location: Provenance
    details: dict[str, object]


#: Which source each loader reads, first found first. transformers 5.24 (and vLLM and SGLang, which load the
#: tokenizer through it): chat_template.jinja replaces tokenizer_config.json's (tokenization_utils_base.py:1824-1839;
#: chat_template.json is a processor's file, processing_utils.py:1398). smg: chat_template.json, then
#: chat_template.jinja (crates/tokenizer/src/factory.rs:234-263 @f8daa88), then tokenizer_config.json. TGI:
#: chat_template.json replaces tokenizer_config.json's; chat_template.jinja is never read (router/src/server.rs:
#: 1605-1689 @db931fc). llama.cpp: the GGUF's tokenizer.chat_template.
READERS: dict[str, tuple[str, ...]] = {
    "transformers": ("chat_template.jinja", "tokenizer_config.json"),
    "vllm": ("chat_template.jinja", "tokenizer_config.json"),
    "sglang": ("chat_template.jinja", "tokenizer_config.json"),
    "smg": ("chat_template.json", "chat_template.jinja", "tokenizer_config.json"),
    "tgi": ("chat_template.json", "tokenizer_config.json"),
    "llama.cpp": ("gguf",),
}


def template_sources(model: TokenizerModel) -> dict[str, tuple[str, Provenance]]:
    """The default chat template of each source the target ships: source -> (text, where)."""
    a = model.artifacts
    out: dict[str, tuple[str, Provenance]] = {}
    if a.chat_template is not None:
        out["chat_template.jinja"] = (a.chat_template.text, Provenance(a.chat_template.name, line=1))
    cfg = a.tokenizer_config
    if cfg is not None and cfg.chat_template is not None:
        default = next((t for t in _from_config(model) if t.name == "default"), None)
        if default is not None:
            out["tokenizer_config.json"] = (default.text, default.location)
    if cfg is not None and cfg.path.is_file():
        path = cfg.path.parent / "chat_template.json"
        if path.is_file():
            try:
                value = read_json_object(path).get("chat_template")
            except InputError:
                value = None
            if isinstance(value, str):
                out["chat_template.json"] = (value, Provenance(path.name, key="chat_template"))
    g = a.gguf
    if g is not None and "default" in g.chat_templates and not a.gguf_only:
        out["gguf"] = (g.chat_templates["default"], g.source("tokenizer.chat_template"))
    return out


def source_disagreements(model: TokenizerModel) -> list[Disagreement]:
    """One finding when the sources' texts differ (trailing whitespace aside): which loader reads which."""
    sources = template_sources(model)
    if len(sources) < 2:
        return []
    texts = {name: text.rstrip() for name, (text, _) in sources.items()}
    if len(set(texts.values())) < 2:
        return []
    picks = {stack: next((s for s in order if s in sources), None) for stack, order in READERS.items()}
    reads = {stack: s for stack, s in picks.items() if s is not None}
    reference = reads.get("transformers") or next(iter(sources))
    stacks = [stack for stack, s in reads.items() if texts[s] != texts[reference]]
    names = list(sources)
    a, b = names[0], next(n for n in names[1:] if texts[n] != texts[names[0]])
    n = min(len(texts[a]), len(texts[b]))
    at = next((i for i in range(n) if texts[a][i] != texts[b][i]), n)
    by_source: dict[str, list[str]] = {}
    for stack, s in reads.items():
        by_source.setdefault(s, []).append(stack)
    who = "; ".join(f"{', '.join(st)} read{'s' if len(st) == 1 else ''} {s}" for s, st in by_source.items())
    where = sources[b][1]
    return [
        Disagreement(
            f"the chat template sources disagree: {a} and {b} differ from character {at} "
            f"({texts[a][max(0, at - 20) : at + 20]!r} vs "
            f"{texts[b][max(0, at - 20) : at + 20]!r}). {who}: {', '.join(stacks) or 'no stack'} render"
            f"{'s' if len(stacks) == 1 else ''} another template than transformers.",
            where,
            {
                "subject": ",".join(sorted(sources)),
                "stacks": stacks,
                "sources": names,
                "reads": reads,
                "position": at,
                "differing": [a, b],
            },
        )
    ]
