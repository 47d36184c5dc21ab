"""What the common loaders make of a model directory, emulated statically.

Each serving stack picks files by its own documented precedence and fills (or does not fill)
reserved slots by its own rule (research/gateways.md 1.5, 1.6, catalog #1, #2, #16, #17).
Everything here works on id *ranges*, never per-id sets, so a declared size of 10**12 is cheap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tokaudit.ids import IdRanges
from tokaudit.model.detection import (
    compacted_added_ids,
    dynamo_regex_model_type,
    remote_tokenizer_module,
    smg_detects_kimi,
)
from tokaudit.model.tokenizer_model import FILES, REMOTE_CODE, TokenizerModel

#: Reserved slots smg and Dynamo synthesize after the ranks for Kimi-detected models.
GATEWAY_RESERVED_SLOTS = 256

LOADERS = ("files-only", "smg", "vLLM", "Dynamo", "transformers", "llama.cpp")


@dataclass(frozen=True)
class LoaderView:
    """The ids one loader would map for this target, and why."""

    loader: str
    #: Files the loader reads, in the order its precedence rule considers them (empty: cannot load).
    files: tuple[str, ...]
    #: The rule that chose them, e.g. "tiktoken.model + tokenizer_config.json (Kimi detected: model_type kimi_k25)".
    rule: str
    mapped: IdRanges
    #: Ids in [0, checked size) the loader cannot map; ``None`` when the loader cannot load the target at all.
    unmapped: IdRanges | None
    #: Pre-tokenizer regex the loader uses, by source ("remote code pat_str", "cl100k fallback", ...).
    pattern: str

    @property
    def sees_gap(self) -> bool | None:
        return None if self.unmapped is None else bool(self.unmapped)

    @property
    def unknown_id_decode(self) -> str:
        """What this loader's decoder does with an id it has no token for: "crash" (tiktoken's KeyError,
        tiktoken-rs' panic) or "drop" (tokenizers skips it silently)."""
        names = " ".join(self.files) + " " + self.rule
        if "tokenizer.json" in names or "converted" in names or "vocab.json" in names or "vocab.txt" in names:
            return "drop"
        return "crash"

    def to_json(self) -> dict[str, Any]:
        return {
            "loader": self.loader,
            "files": list(self.files),
            "rule": self.rule,
            "mapped": self.mapped.count,
            "sees_gap": self.sees_gap,
            "unmapped": None if self.unmapped is None else self.unmapped.count,
            "unmapped_ids": None if self.unmapped is None else self.unmapped.to_json(),
            "pattern": self.pattern,
        }


def loaders_seeing(views: list[LoaderView], ids: IdRanges) -> dict[str, str]:
    """Loader -> "crash"/"drop", for each loader that can load the target and leaves some of ``ids`` unmapped."""
    return {v.loader: v.unknown_id_decode for v in views if v.unmapped is not None and v.unmapped.intersects(ids)}


def _span(first: int, count: int) -> IdRanges:
    return IdRanges.span(first, first + count)


def loader_views(model: TokenizerModel) -> list[LoaderView]:
    """One row per loader: which files it reads and which ids it maps."""
    a = model.artifacts
    size = model.checked_size
    files_table = model.files
    files_mapped = files_table.mapped
    cfg_name = [a.tokenizer_config.name] if a.tokenizer_config else []
    rows: list[LoaderView] = []

    def view(loader: str, files: list[str], rule: str, mapped: IdRanges | None, pattern: str) -> LoaderView:
        if mapped is None:
            return LoaderView(loader, tuple(files), rule, IdRanges(), None, pattern)
        return LoaderView(loader, tuple(dict.fromkeys(files)), rule, mapped, mapped.complement(size), pattern)

    own_pattern = _own_pattern(model)
    rows.append(
        view(
            "files-only",
            [model.vocab_artifact] + cfg_name,
            "the vocabulary file and added_tokens_decoder, nothing synthesized (tiktoken-rs, smg before PR #1482)",
            files_mapped,
            own_pattern or "none found",
        )
    )

    # smg crates/tokenizer/src/factory.rs
    kimi = smg_detects_kimi(model)
    if a.tokenizer_json:
        rows.append(
            view(
                "smg",
                [a.tokenizer_json.name] + cfg_name,
                "tokenizer.json first",
                files_mapped,
                own_pattern or "tokenizer.json",
            )
        )
    elif (
        a.vocab_json
        and a.merges
        and a.tokenizer_config
        and (a.tokenizer_config.tokenizer_class or "").startswith("Qwen2Tokenizer")
    ):
        rows.append(
            view(
                "smg",
                [a.vocab_json.name, a.merges.name] + cfg_name,
                "vocab.json + merges.txt (tokenizer_class Qwen2Tokenizer)",
                files_mapped,
                "GPT-2 byte-level",
            )
        )
    elif a.tiktoken:
        if kimi:
            fill = _span(len(a.tiktoken.by_id), GATEWAY_RESERVED_SLOTS)
            rows.append(
                view(
                    "smg",
                    [a.tiktoken.name] + cfg_name,
                    f"{a.tiktoken.name}; Kimi detected ({kimi}): "
                    f"{GATEWAY_RESERVED_SLOTS} reserved slots filled after the ranks",
                    files_mapped.union(fill),
                    "Kimi (built in)",
                )
            )
        else:
            rows.append(
                view(
                    "smg",
                    [a.tiktoken.name] + cfg_name,
                    f"{a.tiktoken.name} (no Kimi detection)",
                    files_mapped,
                    "cl100k fallback",
                )
            )
    else:
        rows.append(
            view(
                "smg",
                [],
                "no file smg loads from a directory (tokenizer.json, vocab.json+merges.txt for Qwen2, tiktoken)",
                None,
                "—",
            )
        )

    transformers = _transformers_view(model, own_pattern)
    # vLLM: tokenizer_mode auto is transformers' AutoTokenizer; tekken.json goes to mistral_common.
    if a.tekken and not a.tokenizer_json:
        rows.append(
            view(
                "vLLM",
                [a.tekken.name],
                "tekken.json via mistral_common (tokenizer_mode mistral)",
                files_mapped,
                f"{a.tekken.name} config.pattern",
            )
        )
    else:
        rows.append(
            LoaderView(
                "vLLM",
                transformers.files,
                f"transformers AutoTokenizer: {transformers.rule}",
                transformers.mapped,
                transformers.unmapped,
                transformers.pattern,
            )
        )

    # Dynamo lib/llm/src/tokenizers.rs, tokenizers/tiktoken.rs
    if a.tokenizer_json:
        from tokaudit.model.fastokens_probe import DYNAMO_FLAG, dynamo_fastokens_encoder

        fast = dynamo_fastokens_encoder(a.tokenizer_json)
        rows.append(
            view(
                "Dynamo",
                [a.tokenizer_json.name],
                f"tokenizer.json; encoder by default: HF tokenizers; with {DYNAMO_FLAG}: {fast}",
                model.profiles[FILES].mapped,
                "tokenizer.json",
            )
        )
    elif a.tiktoken:
        mt = dynamo_regex_model_type(model)
        if mt:
            base = model.sizes.max_rank_plus_one or 0
            fill = _span(base, GATEWAY_RESERVED_SLOTS)
            rows.append(
                view(
                    "Dynamo",
                    [a.tiktoken.name] + cfg_name,
                    f"{a.tiktoken.name}; model_type {mt}: Kimi regex and "
                    f"{GATEWAY_RESERVED_SLOTS} reserved slots from max rank + 1",
                    files_mapped.union(fill),
                    "Kimi (built in)",
                )
            )
        else:
            mt_text = a.config.model_type if a.config and a.config.model_type else "none"
            rows.append(
                view(
                    "Dynamo",
                    [a.tiktoken.name],
                    f"refuses {a.tiktoken.name}: no regex for model_type {mt_text}",
                    None,
                    "—",
                )
            )
    else:
        rows.append(view("Dynamo", [], "no tokenizer.json or tiktoken file", None, "—"))

    rows.append(transformers)
    if a.gguf is not None:  # llama.cpp, Ollama and LM Studio read the tokenizer inside the GGUF
        g = a.gguf
        rows.append(
            view(
                "llama.cpp",
                [g.name],
                "tokenizer.ggml.tokens of the GGUF (llama.cpp, Ollama, LM Studio)",
                _span(0, len(g.tokens)),
                f"pre {g.pre}" if g.pre else "llama.cpp's per-model default",
            )
        )
    return rows


#: The vocabulary file names transformers 5 looks for when a directory has no tokenizer.json
#: (``PreTrainedTokenizerBase.from_pretrained``: ``tekken\.json|tokenizer\.model\.*|tiktoken\.model``).
TRANSFORMERS_RANK_FILE_NAMES = ("tiktoken.model", "tokenizer.model")


def transformers_finds_ranks(model: TokenizerModel) -> bool:
    """Whether transformers' AutoTokenizer finds the rank file by its name: ``cl100k_base.tiktoken`` or a
    tiktoken cache file named by a hash is not looked for, so AutoTokenizer fails on such a directory."""
    rk = model.artifacts.tiktoken
    return rk is not None and rk.name in TRANSFORMERS_RANK_FILE_NAMES


def _own_pattern(model: TokenizerModel) -> str | None:
    from tokaudit.artifacts.pattern import find_pattern

    found = find_pattern(model.artifacts)
    return found.source if found else None


def _transformers_view(model: TokenizerModel, own_pattern: str | None) -> LoaderView:
    a = model.artifacts
    size = model.checked_size
    cfg_name = [a.tokenizer_config.name] if a.tokenizer_config else []
    module = remote_tokenizer_module(model)
    if a.tokenizer_json and a.tokenizer_json.name != "tokenizer.json":
        return LoaderView(
            "transformers",
            (a.tokenizer_json.name,),
            f"AutoTokenizer fails: it reads tokenizer.json only under that name, not {a.tokenizer_json.name}",
            IdRanges(),
            None,
            "—",
        )
    if a.tokenizer_json:
        mapped = model.files.mapped
        return LoaderView(
            "transformers",
            (a.tokenizer_json.name, *cfg_name),
            "tokenizer.json (TokenizersBackend)",
            mapped,
            mapped.complement(size),
            own_pattern or "tokenizer.json",
        )
    if module and REMOTE_CODE in model.profiles:
        present = any(rc.path.stem == module for rc in a.remote_code)
        if not present:
            return LoaderView(
                "transformers",
                (f"{module}.py",),
                f"auto_map needs {module}.py, which is missing",
                IdRanges(),
                None,
                "—",
            )
        mapped = model.profiles[REMOTE_CODE].mapped
        return LoaderView(
            "transformers",
            (f"{module}.py", model.vocab_artifact, *cfg_name),
            f"remote code {module}.py (trust_remote_code)",
            mapped,
            mapped.complement(size),
            own_pattern or "remote code (not found statically)",
        )
    if a.tiktoken and not transformers_finds_ranks(model):
        return LoaderView(
            "transformers",
            (a.tiktoken.name,),
            f"AutoTokenizer fails: it looks for {' or '.join(TRANSFORMERS_RANK_FILE_NAMES)}, not {a.tiktoken.name}",
            IdRanges(),
            None,
            "—",
        )
    if a.tiktoken:
        compact = compacted_added_ids(model)
        mapped = a_mapped = model.base.mapped  # the ranks: tiktoken.model is the base vocabulary here
        if compact:
            mapped = a_mapped.union(IdRanges.from_ids(compact.values()))
        return LoaderView(
            "transformers",
            (a.tiktoken.name, *cfg_name),
            "converted from tiktoken ranks; added tokens appended after the ranks",
            mapped,
            mapped.complement(size),
            "cl100k fallback (TikTokenConverter)",
        )
    mapped = model.files.mapped
    if a.gguf_only:
        return LoaderView(
            "transformers",
            (model.vocab_artifact,),
            f"AutoTokenizer(gguf_file=...): converted from {model.vocab_artifact}",
            mapped,
            mapped.complement(size),
            "transformers' GGUF converter",
        )
    return LoaderView(
        "transformers",
        (model.vocab_artifact, *cfg_name),
        f"converted from {model.vocab_artifact}",
        mapped,
        mapped.complement(size),
        own_pattern or "converter default",
    )
