"""Find the tokenizer artifacts of one target and parse each with its parser."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokaudit.artifacts.safe_files import outside_error, read_bytes, read_bytes_head, regular_file_error
from tokaudit.errors import InputError
from tokaudit.result_cache import exclude

if TYPE_CHECKING:  # each parser module is imported when a file of its kind is found (a scan needs a few)
    from tokaudit.artifacts.added_tokens import AddedTokensJson
    from tokaudit.artifacts.gguf import GGUFTokenizer
    from tokaudit.artifacts.model_config import GenerationConfig, ModelConfig
    from tokaudit.artifacts.remote_code import RemoteCode
    from tokaudit.artifacts.safetensors_header import EmbeddingShapes
    from tokaudit.artifacts.sentencepiece_model import SentencePieceModel
    from tokaudit.artifacts.tekken import Tekken
    from tokaudit.artifacts.text_files import ChatTemplate, Merges, VocabJson, VocabTxt
    from tokaudit.artifacts.tiktoken_ranks import TiktokenRanks
    from tokaudit.artifacts.tokenizer_config import SpecialTokensMap, TokenizerConfig
    from tokaudit.artifacts.tokenizer_json import TokenizerJson

#: (kind, file-name glob) in precedence order; the first file of a kind wins.
KINDS: tuple[tuple[str, str], ...] = (
    ("tokenizer_json", "tokenizer.json"),
    ("tiktoken", "tiktoken.model"),
    ("tiktoken", "*.tiktoken"),
    ("tekken", "tekken.json"),
    # SentencePiece ModelProto, or (GLM-4) tiktoken ranks under that name: told apart by content
    ("sentencepiece", "tokenizer.model"),
    ("tokenizer_config", "tokenizer_config.json"),
    ("special_tokens_map", "special_tokens_map.json"),
    ("added_tokens_json", "added_tokens.json"),
    ("config", "config.json"),
    ("generation_config", "generation_config.json"),
    ("chat_template", "chat_template.jinja"),
    ("vocab_json", "vocab.json"),
    ("merges", "merges.txt"),
    ("vocab_txt", "vocab.txt"),
    ("safetensors", "model.safetensors"),
    ("safetensors_index", "model.safetensors.index.json"),
    ("remote_code", "tokenization_*.py"),
    # Meta's own tokenizer code beside its rank file (llama_models/llama3, llama4): read with ast, never run
    ("remote_code", "tokenizer.py"),
)

#: File kinds that hold a vocabulary; a target needs at least one.
VOCAB_KINDS = ("tokenizer_json", "tiktoken", "tekken", "sentencepiece", "vocab_json", "vocab_txt")

#: Single-file targets named like SentencePiece models (mistral-common ships ``tokenizer.model.v3``,
#: ``mistral_instruct_tokenizer_240216.model.v2``); the content decides what they are.
MODEL_FILE_GLOBS = ("*.model", "*.model.v*")

#: Globs of the files a tokenizer needs, for downloads (never weights: safetensors headers are
#: only read when they are already present).
TOKENIZER_FILE_PATTERNS = [glob for _, glob in KINDS if glob != "model.safetensors"]

#: kind -> (module, parser function), imported on first use.
_PARSER_NAMES = {
    "tokenizer_json": ("tokenizer_json", "parse_tokenizer_json"),
    "tiktoken": ("tiktoken_ranks", "parse_tiktoken_ranks"),
    "tekken": ("tekken", "parse_tekken"),
    "tokenizer_config": ("tokenizer_config", "parse_tokenizer_config"),
    "special_tokens_map": ("tokenizer_config", "parse_special_tokens_map"),
    "added_tokens_json": ("added_tokens", "parse_added_tokens_json"),
    "config": ("model_config", "parse_model_config"),
    "generation_config": ("model_config", "parse_generation_config"),
    "chat_template": ("text_files", "parse_chat_template"),
    "vocab_json": ("text_files", "parse_vocab_json"),
    "merges": ("text_files", "parse_merges"),
    "vocab_txt": ("text_files", "parse_vocab_txt"),
    "safetensors": ("safetensors_header", "parse_safetensors"),
    "safetensors_index": ("safetensors_header", "parse_safetensors_index"),
    "remote_code": ("remote_code", "parse_remote_code"),
    "sentencepiece": ("sentencepiece_model", "parse_sentencepiece"),
}


def _parser(kind: str) -> Callable[..., Any]:
    """The parser of one file kind (``sentencepiece`` also takes the bytes already read)."""
    module, function = _PARSER_NAMES[kind]
    return getattr(import_module(f"tokaudit.artifacts.{module}"), function)


@dataclass(frozen=True)
class Artifacts:
    """Every parsed artifact of one target (``None`` where the file is absent)."""

    root: Path
    tokenizer_json: TokenizerJson | None = None
    tiktoken: TiktokenRanks | None = None
    tekken: Tekken | None = None
    sentencepiece: SentencePieceModel | None = None
    tokenizer_config: TokenizerConfig | None = None
    special_tokens_map: SpecialTokensMap | None = None
    added_tokens_json: AddedTokensJson | None = None
    config: ModelConfig | None = None
    generation_config: GenerationConfig | None = None
    chat_template: ChatTemplate | None = None
    vocab_json: VocabJson | None = None
    merges: Merges | None = None
    vocab_txt: VocabTxt | None = None
    safetensors: EmbeddingShapes | None = None
    safetensors_index: EmbeddingShapes | None = None
    remote_code: tuple[RemoteCode, ...] = field(default=())
    #: The tokenizer inside a GGUF file: the target itself, or the one GGUF model beside the HF files.
    gguf: GGUFTokenizer | None = None

    def present(self) -> list[tuple[str, object]]:
        """(kind, record) for every artifact found, in precedence order."""
        out: list[tuple[str, object]] = []
        for kind in dict.fromkeys(k for k, _ in KINDS):
            value = getattr(self, kind)
            if kind == "remote_code":
                out.extend((kind, rc) for rc in value)
            elif value is not None:
                out.append((kind, value))
        if self.gguf is not None:
            out.append(("gguf", self.gguf))
        return out

    @property
    def gguf_only(self) -> bool:
        """A GGUF with no Hugging Face vocabulary beside it: the model is built from the GGUF."""
        return self.gguf is not None and not any(getattr(self, kind) is not None for kind in VOCAB_KINDS)

    @property
    def embedding(self) -> EmbeddingShapes | None:
        return self.safetensors or self.safetensors_index


def _name_matches(name: str, glob: str) -> bool:
    """``fnmatch.fnmatchcase``, without compiling a regex for a glob that is a plain file name (most of
    ``KINDS``: compiling them all cost ~2 ms of every scan)."""
    return fnmatch.fnmatchcase(name, glob) if any(c in glob for c in "*?[") else name == glob


def kind_of(name: str) -> str | None:
    for kind, glob in KINDS:
        if _name_matches(name, glob):
            return kind
    return None


def _tokenizer_name(name: str) -> bool:
    return kind_of(name) is not None or any(fnmatch.fnmatchcase(name, g) for g in MODEL_FILE_GLOBS)


def _model_file(file: Path, found: dict[str, object]) -> None:
    """A ``*.model`` file: a SentencePiece ModelProto, or tiktoken ranks (GLM-4's tokenizer.model),
    decided by the bytes, never by the name."""
    from tokaudit.artifacts.sentencepiece_model import looks_like_sentencepiece, parse_sentencepiece

    data = read_bytes(file)
    if looks_like_sentencepiece(data):
        found.setdefault("sentencepiece", parse_sentencepiece(file, data))
    elif "tiktoken" not in found:
        found["tiktoken"] = _parser("tiktoken")(file)


#: How much of a file's start the content sniffing reads, and how many unnamed files it looks at in one directory.
SNIFF_BYTES = 4096
MAX_SNIFFED_FILES = 256
#: A tiktoken rank file's first line: base64 of a token, one space, its rank.
_RANK_LINE = re.compile(rb"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|=)? \d{1,19}\r?\n")
#: Keys that tokenizers writes at the start of every tokenizer.json (``Tokenizer.save``), before the model.
_TOKENIZER_JSON_KEYS = (b'"added_tokens"', b'"truncation"', b'"pre_tokenizer"', b'"normalizer"')


def sniff_vocabulary(file: Path) -> str | None:
    """The vocabulary kind of a file whose name says nothing (tiktoken's cache files are named by the sha1
    of their URL, litellm ships ``anthropic_tokenizer.json``): decided by its first bytes, as
    ``tokenizer.model`` is. ``tiktoken``, ``tokenizer_json``, ``gguf`` or None."""
    head = read_bytes_head(file, SNIFF_BYTES)
    if head.startswith(b"GGUF"):
        return "gguf"
    if _RANK_LINE.match(head):
        return "tiktoken"
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith(b"{") and any(key in text for key in _TOKENIZER_JSON_KEYS):
        return "tokenizer_json"
    return None


def _vocabulary_by_content(files: list[Path], directory: Path) -> tuple[str, Path] | None:
    """The one vocabulary file among files no name pattern claims, by content; several are an error."""
    found: list[tuple[str, Path]] = []
    for file in files[:MAX_SNIFFED_FILES]:
        if regular_file_error(file) is not None or file.stat().st_size == 0:
            continue
        kind = sniff_vocabulary(file)
        if kind is not None and kind != "gguf":
            found.append((kind, file))
    if len(found) > 1:
        names = ", ".join(f.name for _, f in found[:5])
        raise InputError(f"{len(found)} files hold a vocabulary by their content ({names}): name one as the target",
                         file=str(directory))
    return found[0] if found else None


def _gguf(file: Path) -> GGUFTokenizer:
    from tokaudit.artifacts.gguf import read_gguf_tokenizer

    return read_gguf_tokenizer(file)


def load_artifacts(path: Path) -> Artifacts:
    """Parse a model directory, or a single tokenizer file on its own (a GGUF file too)."""
    if path.is_file() and path.name.endswith(".gguf"):
        return Artifacts(root=path.parent, gguf=_gguf(path))
    gguf: GGUFTokenizer | None = None
    if path.is_dir():
        try:
            files = sorted(p for p in path.iterdir() if p.is_file() or _tokenizer_name(p.name))
        except OSError as exc:
            raise InputError(f"cannot list directory: {exc.strerror or exc}", file=str(path)) from None
        exclude(path)  # the result cache is never inside a target (nothing in a target is ever written)
        for file in files:  # a FIFO, device, looping symlink or link out of the target named like a tokenizer file:
            if _tokenizer_name(file.name) or file.name.endswith(".gguf"):  # say so, never block on it or read it
                problem = regular_file_error(file) or outside_error(file, path)
                if problem is not None:
                    raise problem
        root = path
    elif path.is_file():
        if kind_of(path.name) not in VOCAB_KINDS and not any(fnmatch.fnmatchcase(path.name, g) for g in MODEL_FILE_GLOBS):
            kind = sniff_vocabulary(path)
            if kind is None:
                raise InputError(
                    "not a tokenizer file (expected tokenizer.json, tiktoken.model, *.tiktoken, tekken.json, tokenizer.model, "
                    "vocab.json, vocab.txt or a .gguf file, or a tokenizer.json or tiktoken rank file by its content)",
                    file=str(path),
                )
            if kind == "gguf":
                return Artifacts(root=path.parent, gguf=_gguf(path))
            return Artifacts(root=path.parent, **{kind: _parser(kind)(path)})
        files, root = [path], path.parent
        if kind_of(path.name) is None:  # tokenizer.model.v3 and the like
            single: dict[str, object] = {}
            _model_file(path, single)
            return Artifacts(root=root, **single)  # type: ignore[arg-type]
    else:
        raise regular_file_error(path) or InputError("no such file or directory", file=str(path))

    found: dict[str, object] = {}
    remote: list[RemoteCode] = []
    for kind, glob in KINDS:
        for file in files:
            if not _name_matches(file.name, glob):
                continue
            if kind == "remote_code":
                remote.append(_parser("remote_code")(file))
            elif kind == "sentencepiece":
                _model_file(file, found)
            elif kind not in found:
                found[kind] = _parser(kind)(file)
    if path.is_dir() and any(f.name.endswith(".gguf") for f in files):  # the GGUF reader only when one is there
        from tokaudit.artifacts.gguf import gguf_in

        gguf_path, several = gguf_in(path)
        if gguf_path is not None:
            gguf = _gguf(gguf_path)
        elif several and not any(kind in found for kind in VOCAB_KINDS):
            raise InputError(f"{several}: name one as the target", file=str(path))
    if gguf is None and not any(kind in found for kind in VOCAB_KINDS):
        sniffed = _vocabulary_by_content([f for f in files if not _tokenizer_name(f.name)], path)
        if sniffed is None:
            names = ", ".join(glob for kind, glob in KINDS if kind in VOCAB_KINDS)
            raise InputError(f"no tokenizer vocabulary found (looked for {names}, *.gguf, and for a tokenizer.json "
                             "or tiktoken rank file under another name)", file=str(path))
        found[sniffed[0]] = _parser(sniffed[0])(sniffed[1])
    return Artifacts(root=root, remote_code=tuple(remote), gguf=gguf, **found)  # type: ignore[arg-type]
