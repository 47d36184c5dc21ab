"""TA210 special-addition-divergence: which BOS/EOS tokens each backend adds with add_special_tokens=True.

Each backend that has a prompt encode (``encode_prompt``: tokenizers with tokenizer.json's post_processor,
transformers' class, llama.cpp with the GGUF's add flags) encodes one probe text with and without special
tokens; what it adds at the start and the end is compared across them. A serving stack's completions
endpoint encodes a prompt with add_special_tokens=True, so two stacks on the same files then prompt the
model differently (a missing or doubled BOS).
"""

from __future__ import annotations

from typing import Any

from tokaudit.backends.base import call
from tokaudit.backends.registry import LoadedBackend
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.compare.codes import SPECIAL_ADDITION_DIVERGENCE as CODE
from tokaudit.report.finding import Finding
from tokaudit.report.text import visible

PROBE = "Hello world"
#: Who encodes prompts the way each backend does.
STACKS = {
    "hf": "tokenizers: TGI, smg, Dynamo",
    "transformers-fast": "transformers: vLLM, SGLang",
    "transformers-slow": "transformers' slow class",
    "llama.cpp": "llama.cpp server, Ollama, LM Studio",
}


def _added(backend: Any) -> tuple[list[int], list[int]] | None:
    """(ids added before the text, ids added after it), or None when the backend's prompt encode fails or does
    not contain the plain encode as one run."""
    plain, prompt = call(backend.encode, PROBE), call(backend.encode_prompt, PROBE)
    if not (plain.ok and prompt.ok):
        return None
    ids, full = list(plain.value), list(prompt.value)
    for start in range(len(full) - len(ids) + 1):
        if full[start : start + len(ids)] == ids:
            return full[:start], full[start + len(ids) :]
    return None


def special_addition_findings(model: TokenizerModel, loaded: list[LoadedBackend]) -> list[Finding]:
    added: dict[str, tuple[list[int], list[int]]] = {}
    for lb in loaded:
        backend = lb.backend
        if backend is None or not hasattr(backend, "encode_prompt") or lb.subset:
            continue
        if lb.name == "hf" and lb.detail != (
            model.artifacts.tokenizer_json.name if model.artifacts.tokenizer_json else None
        ):
            continue  # a tokenizer tokaudit rebuilt from ranks or a vocabulary has no post_processor of the model's
        found = _added(backend)
        if found is not None:
            added[lb.name] = found
    if len({(tuple(a), tuple(b)) for a, b in added.values()}) < 2:
        return []

    def shown(ids: list[int]) -> str:
        names = []
        for i in ids:
            found = model.files.lookup(i)
            names.append(f"{i} {visible(found.token.decode('utf-8', 'replace')) if found else '(unmapped)'}")
        return " ".join(names) if names else "nothing"

    groups: dict[tuple[tuple[int, ...], tuple[int, ...]], list[str]] = {}
    for name, (start, end) in added.items():
        groups.setdefault((tuple(start), tuple(end)), []).append(f"{name} ({STACKS.get(name, name)})")
    rows = [
        f"{' and '.join(names)} add{'s' if len(names) == 1 else ''} {shown(list(start))} before the text and "
        f"{shown(list(end))} after it"
        for (start, end), names in groups.items()
    ]
    return [
        Finding(
            CODE.code,
            CODE.name,
            CODE.severity,
            f"encoding {PROBE!r} with add_special_tokens=True, the backends add different special tokens: "
            f"{'; '.join(rows)}. "
            "A completions endpoint tokenizes prompts this way, so stacks on these files prompt the model with a "
            "different "
            "(or no, or a doubled) BOS/EOS.",
            None,
            None,
            {"probe": PROBE, "added": {name: {"start": start, "end": end} for name, (start, end) in added.items()}},
            model.target,
        )
    ]
