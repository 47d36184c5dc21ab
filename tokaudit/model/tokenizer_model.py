"""Build the TokenizerModel of one target from its parsed artifacts."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from tokaudit.records import AddedToken, Provenance
from tokaudit.artifacts.load import Artifacts
from tokaudit.artifacts.pattern import registry_special_tokens
from tokaudit.model.config_added import config_added_tokens
from tokaudit.model.id_table import IdTable, Layer

if TYPE_CHECKING:  # the GGUF reader is loaded with a GGUF target's file, not by every scan
    from tokaudit.artifacts.gguf import GGUFTokenizer
    from tokaudit.artifacts.tekken import Tekken
    from tokaudit.artifacts.tiktoken_ranks import TiktokenRanks
    from tokaudit.model.llamacpp_load import LlamaCppLoad

FILES = "files"
REMOTE_CODE = "remote-code"

#: Placeholder name used by Kimi-style remote code for reserved slots without a name.
DEFAULT_RESERVED_TEMPLATE = "<|reserved_token_{}|>"
#: Most reserved slots materialised per remote-code file (Kimi and Llama 3 declare 256).
MAX_RESERVED_FILL = 1 << 17


@dataclass(frozen=True)
class DeclaredSize:
    """The vocabulary size the model declares, and which file and key declares it."""

    size: int | None
    source: Provenance | None
    #: "config.json text_config.vocab_size", or how the size was inferred when nothing declares it.
    basis: str


@dataclass(frozen=True)
class Sizes:
    """The five numbers different stacks bound-check ids against."""

    entries: int | None  # number of ranks / vocabulary entries
    max_rank_plus_one: int | None
    max_added_plus_one: int | None
    config_vocab_size: int | None
    embedding_rows: int | None

    def to_json(self) -> dict[str, int | None]:
        return {
            "entries": self.entries,
            "max_rank_plus_one": self.max_rank_plus_one,
            "max_added_plus_one": self.max_added_plus_one,
            "config_vocab_size": self.config_vocab_size,
            "embedding_rows": self.embedding_rows,
        }


@dataclass(frozen=True)
class TokenizerModel:
    """One target as the rules see it: its artifacts, declared sizes and id tables per loader profile."""

    target: str
    artifacts: Artifacts
    #: The artifact holding the base vocabulary (tokenizer.json, tiktoken.model, ...).
    vocab_artifact: str
    declared: DeclaredSize
    sizes: Sizes
    profiles: dict[str, IdTable]
    #: The base vocabulary layer (ranks or model vocab, without added tokens).
    base: Layer
    #: A pre-tokenizer regex the user gave (--pat-str) for the encoders tokaudit builds; the model itself declares
    #: none.
    pat_str: str | None = None
    #: Where the files came from (a :class:`tokaudit.source.resolve.Source`: the path, the Hub repo and resolved
    #: commit).
    source: Any = None
    #: What llama.cpp made of the GGUF while the model was built (a GGUF alone: its pieces need it); read
    #: :attr:`llamacpp`.
    gguf_load: LlamaCppLoad | None = field(default=None, repr=False, compare=False)

    @cached_property
    def llamacpp(self) -> LlamaCppLoad | None:
        """What llama.cpp makes of the target's GGUF when it loads it (None without a GGUF), computed once per model:
        the GGUF rules, the scan summary, the strict backend, replay's server pieces and the template context read
        it."""
        g = self.artifacts.gguf
        if self.gguf_load is not None or g is None:
            return self.gguf_load
        from tokaudit.model.llamacpp_load import llamacpp_load

        return llamacpp_load(g)

    @property
    def ranks(self) -> TiktokenRanks | Tekken | None:
        """The byte-level rank file the base vocabulary comes from (tiktoken encodes with it: tiktoken.model,
        *.tiktoken, tekken.json), or None when the base vocabulary is something else (a tokenizer.json comes first)."""
        return None if self.artifacts.tokenizer_json is not None else self.artifacts.rank_file

    @property
    def files(self) -> IdTable:
        return self.profiles[FILES]

    @property
    def published_layout(self) -> bool:
        """A bare published tiktoken rank file, its specials from tiktoken's registry and no size declared: its id
        holes (cl100k_base: 100256, 100261-100275) are the published encoding's own, which tiktoken has too."""
        return self.declared.size is None and bool(registry_special_tokens(self.artifacts))

    @property
    def checked_size(self) -> int:
        """The size the id space is checked against: declared, else the highest id any profile maps + 1."""
        if self.declared.size is not None:
            return self.declared.size
        return max((t.mapped.ranges[-1][1] + 1 for t in self.profiles.values() if t.mapped), default=0)


def _always(source: Provenance) -> Callable[[int], Provenance]:
    """Where every id of a layer comes from, when one place declares them all."""
    return lambda _i: source


def _sources(by_key: Mapping[int, AddedToken]) -> Callable[[int], Provenance]:
    """Where each id of an added-token layer is declared."""
    return lambda i: by_key[i].source


def _added_layers(tokens: tuple[AddedToken, ...], rule: str, artifact: str) -> list[Layer]:
    """Split added tokens into a special and a non-special layer (ids without a token are skipped)."""
    by_key = {t.id: t for t in tokens if t.id is not None}
    layers = []
    for special in (True, False):
        chosen = {i: t.content.encode("utf-8") for i, t in by_key.items() if bool(t.special) is special}
        if chosen:
            layers.append(
                Layer(
                    f"{rule} ({'special' if special else 'not special'})",
                    artifact,
                    chosen,
                    special,
                    _sources(by_key),
                )
            )
    return layers


def _base_layers(a: Artifacts) -> tuple[Layer, list[Layer], list[AddedToken], LlamaCppLoad | None]:
    """The base vocabulary a files-only loader reads (by the usual precedence), all its layers, its added tokens
    (and, for a GGUF alone, what llama.cpp makes of it: its pieces are the vocabulary)."""
    cfg_added = config_added_tokens(a)
    config_added = list(cfg_added.tokens)
    if a.tokenizer_json:
        tj = a.tokenizer_json
        base = Layer(f"{tj.model_type} vocab", tj.name, tj.by_id, False, tj.source, lambda: tj.digest)
        added = _added_layers(tj.added_tokens, "added_tokens", tj.name)
        # tokenizers looks added tokens up before the model vocabulary
        return base, added + [base], list(tj.added_tokens), None
    if a.tiktoken:
        rk = a.tiktoken
        base = Layer("tiktoken ranks", rk.name, rk.by_id, False, rk.source, lambda: rk.digest)
        registry = registry_special_tokens(a)
        layers = [base] + _added_layers(cfg_added.tokens, cfg_added.rule, cfg_added.artifact)
        if registry:  # a bare published rank file: tiktoken's registry names its specials
            layers += _added_layers(registry, "tiktoken registry special_tokens", rk.name)
        return base, layers, config_added + list(registry), None
    if a.tekken:
        tk = a.tekken
        base = Layer("tekken vocab", tk.name, tk.by_id, False, tk.source)
        return base, _added_layers(tk.specials, "special_tokens", tk.name) + [base], list(tk.specials), None
    if a.sentencepiece:
        sp = a.sentencepiece
        base = Layer(f"sentencepiece {sp.model_type} pieces", sp.name, sp.by_id, False, sp.source)
        control = {i: sp.by_id[i] for i in sorted(sp.special_ids)}
        layers = [Layer("control pieces", sp.name, control, True, sp.source)] if control else []
        # the slow tokenizer (LlamaTokenizer, T5Tokenizer) puts added_tokens_decoder over the pieces: its
        # flags win (``<unk>`` listed as special is skipped by decode(skip_special_tokens=True))
        return (
            base,
            layers + _added_layers(cfg_added.tokens, cfg_added.rule, cfg_added.artifact) + [base],
            config_added,
            None,
        )
    if a.gguf_only:
        return _gguf_layers(a.gguf)  # type: ignore[arg-type]  # gguf_only: a.gguf is set
    vocab_file = a.vocab_json or a.vocab_txt
    assert vocab_file is not None  # load_artifacts guarantees one vocabulary file
    vocab = {i: vocab_file.token_bytes(i) or b"" for i in vocab_file.vocab}
    base = Layer("vocab", vocab_file.name, vocab, False, vocab_file.source)
    return base, [base] + _added_layers(cfg_added.tokens, cfg_added.rule, cfg_added.artifact), config_added, None


def _gguf_layers(g: GGUFTokenizer) -> tuple[Layer, list[Layer], list[AddedToken], LlamaCppLoad]:
    """A GGUF's vocabulary as llama.cpp renders it: every token's piece (with specials) in the base layer,
    CONTROL and UNKNOWN tokens as the special layer and USER_DEFINED ones as added tokens that are not
    special (llama.cpp splits them out of any text and always renders them, as HF does added tokens)."""
    from tokaudit.artifacts.gguf import CONTROL, UNKNOWN, USER_DEFINED
    from tokaudit.model.llamacpp_load import gguf_pieces, llamacpp_load

    load = llamacpp_load(g)
    pieces = gguf_pieces(g, load)
    base = Layer(
        f"GGUF {g.model} tokens", g.path.name, pieces, False, lambda i: g.source(f"tokenizer.ggml.tokens[{i}]")
    )
    types = g.types or ()
    added: list[AddedToken] = []
    special: dict[int, bytes] = {}
    user: dict[int, bytes] = {}
    for i, kind in enumerate(types):
        if kind in (CONTROL, UNKNOWN, USER_DEFINED):
            src = g.source(f"tokenizer.ggml.token_type[{i}]")
            added.append(AddedToken(i, g.tokens[i].decode("utf-8", "replace"), kind != USER_DEFINED, src))
            (user if kind == USER_DEFINED else special)[i] = pieces[i]
    layers = []
    if special:
        layers.append(
            Layer(
                "GGUF CONTROL/UNKNOWN tokens",
                g.path.name,
                special,
                True,
                lambda i: g.source(f"tokenizer.ggml.token_type[{i}]"),
            )
        )
    if user:
        layers.append(
            Layer(
                "GGUF USER_DEFINED tokens",
                g.path.name,
                user,
                False,
                lambda i: g.source(f"tokenizer.ggml.token_type[{i}]"),
            )
        )
    return base, layers + [base], added, load


def _remote_code_layers(a: Artifacts, files: IdTable, base_count: int, declared_size: int | None = None) -> list[Layer]:
    """Static emulation of what known remote-code tokenizers add on top of the data files."""
    layers: list[Layer] = []
    mapped = files.mapped
    for rc in a.remote_code:
        for lst in rc.special_token_lists:
            if lst.ids:
                tokens = {i: t.encode("utf-8") for i, t in zip(lst.ids, lst.tokens)}
                layers.append(Layer(f"special tokens {lst.name}", rc.name, tokens, True, _always(lst.source)))
        if rc.num_reserved_special_tokens and rc.reserved_names is not None:
            # Meta's llama_models: the N names its __init__ builds (specials, then reserved), ids from the rank count on
            names = rc.reserved_names
            stop = base_count + min(len(names.tokens), MAX_RESERVED_FILL)
            if declared_size is not None:
                stop = min(stop, declared_size)
            named = {
                i: names.tokens[i - base_count].encode("utf-8") for i in range(base_count, stop) if i not in mapped
            }
            if named:
                layers.append(
                    Layer(
                        f"special tokens {names.name} (num_reserved_special_tokens, from the rank count)",
                        rc.name,
                        named,
                        True,
                        _always(names.source),
                    )
                )
        elif rc.num_reserved_special_tokens:
            # Kimi: slots [len(ranks), len(ranks) + N) named from added_tokens_decoder, else placeholders.
            template = next((t for t in rc.reserved_templates if t.count("{}") == 1), DEFAULT_RESERVED_TEMPLATE)
            # materialised only inside the declared size and up to MAX_RESERVED_FILL ids; the rest stays a range
            # (TA104 reports slots past the declared size from the count alone)
            stop = base_count + min(rc.num_reserved_special_tokens, MAX_RESERVED_FILL)
            if declared_size is not None:
                stop = min(stop, declared_size)
            fill = {
                i: template.replace("{}", str(i)).encode("utf-8") for i in range(base_count, stop) if i not in mapped
            }
            if fill:
                src = rc.num_reserved_source
                assert src is not None  # set with num_reserved_special_tokens
                layers.append(
                    Layer("reserved-slot fill (num_reserved_special_tokens)", rc.name, fill, True, _always(src))
                )
    return layers


def _uses_remote_code(a: Artifacts) -> bool:
    auto_map: dict[str, Any] = a.tokenizer_config.auto_map if a.tokenizer_config else {}
    return bool(a.remote_code) or "AutoTokenizer" in auto_map


def _gguf_rows(a: Artifacts) -> int | None:
    g = a.gguf
    return None if g is None else g.embedding_rows if g.embedding_rows is not None else g.output_rows


def build_model(artifacts: Artifacts, target: str) -> TokenizerModel:
    a = artifacts
    base, layers, added, gguf_load = _base_layers(a)
    files = IdTable(
        FILES,
        "what a loader that reads only the data files sees (tiktoken-rs, tokenizers; smg and Dynamo add what they "
        "know of specific models)",
        tuple(layers),
    )
    profiles = {FILES: files}
    if _uses_remote_code(a):
        size = (
            a.config.vocab_size
            if a.config and a.config.vocab_size is not None
            else (a.tekken.default_vocab_size if a.tekken else None)
        )
        extra = _remote_code_layers(a, files, len(base.tokens), size)
        profiles[REMOTE_CODE] = IdTable(
            REMOTE_CODE,
            "static emulation of the model's remote tokenizer code (transformers with trust_remote_code)",
            tuple(layers) + tuple(extra),
        )

    if a.config and a.config.vocab_size is not None:
        declared = DeclaredSize(
            a.config.vocab_size, a.config.vocab_size_source, f"{a.config.name} {a.config.vocab_size_key}"
        )
    elif a.gguf_only and a.gguf.vocab_size is not None:  # type: ignore[union-attr]  # gguf_only: a.gguf is set
        g = a.gguf
        assert g is not None  # gguf_only
        key = f"{g.arch}.vocab_size"
        declared = DeclaredSize(g.vocab_size, g.source(key), f"{g.path.name} {key}")
    elif a.tekken and a.tekken.default_vocab_size is not None:
        src = Provenance(a.tekken.name, key="config.default_vocab_size")
        declared = DeclaredSize(a.tekken.default_vocab_size, src, f"{a.tekken.name} config.default_vocab_size")
    else:
        declared = DeclaredSize(None, None, "nothing declares a size: checked up to the highest mapped id")

    added_ids = [t.id for t in added if t.id is not None]
    emb = a.embedding
    sizes = Sizes(
        entries=len(base.tokens),
        max_rank_plus_one=(base.mapped.ranges[-1][1] + 1) if base.mapped else None,
        max_added_plus_one=(max(added_ids) + 1) if added_ids else None,
        config_vocab_size=a.config.vocab_size if a.config else (a.gguf.vocab_size if a.gguf_only else None),  # type: ignore[union-attr]  # gguf_only: a.gguf is set
        embedding_rows=emb.embedding.rows
        if emb and emb.embedding
        else (emb.lm_head.rows if emb and emb.lm_head else _gguf_rows(a) if a.gguf_only else None),
    )
    return TokenizerModel(target, a, base.artifact, declared, sizes, profiles, base, gguf_load=gguf_load)
