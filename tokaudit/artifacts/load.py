"""Find the tokenizer artifacts of one target and parse each with its parser."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokaudit.artifacts.kinds import BY_NAME, FILE_KINDS
from tokaudit.artifacts.safe_files import outside_error, read_bytes, read_bytes_head, regular_file_error
from tokaudit.errors import InputError
from tokaudit.result_cache import exclude

if TYPE_CHECKING:  # each parser module is imported when a file of its kind is found (a scan needs a few)
    from tokaudit.records import AddedToken
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

#: (kind, file-name glob) in precedence order; the first file of a kind wins (from ``FILE_KINDS``).
KINDS: tuple[tuple[str, str], ...] = tuple((kind.name, glob) for kind in FILE_KINDS for glob in kind.globs)

#: File kinds found by name that hold a vocabulary; a target needs at least one (or a GGUF).
VOCAB_KINDS = tuple(kind.name for kind in FILE_KINDS if kind.vocabulary and kind.globs)

#: Single-file targets named like SentencePiece models (mistral-common ships ``tokenizer.model.v3``,
#: ``mistral_instruct_tokenizer_240216.model.v2``); the content decides what they are.
MODEL_FILE_GLOBS = ("*.model", "*.model.v*")

#: Globs of the files a tokenizer needs, for downloads (never weights: safetensors headers are
#: only read when they are already present).
TOKENIZER_FILE_PATTERNS = [glob for _, glob in KINDS if glob != "model.safetensors"]


def _parser(kind: str) -> Callable[..., Any]:
    """The parser of one file kind (``sentencepiece`` also takes the bytes already read), imported on first use."""
    module, function = BY_NAME[kind].parser
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
    def rank_file(self) -> TiktokenRanks | Tekken | None:
        """The byte-level rank file tiktoken encodes with (tiktoken.model, *.tiktoken, tekken.json), by precedence."""
        return next(
            (
                getattr(self, kind.name)
                for kind in FILE_KINDS
                if kind.rank_file and getattr(self, kind.name) is not None
            ),
            None,
        )

    @property
    def registered_added_tokens(self) -> Sequence[AddedToken]:
        """The added tokens the tokenizer registers: the vocabulary file's own list (tokenizer.json ``added_tokens``,
        tekken.json ``special_tokens``), else tokenizer_config.json's ``added_tokens_decoder`` (by precedence)."""
        for kind in FILE_KINDS:
            record = getattr(self, kind.name)
            if kind.added_tokens is not None and record is not None:
                return kind.added_tokens(record)
        return ()

    def added_tokens_of_every_file(self) -> list[AddedToken]:
        """The added tokens of every file that registers some (tokenizer.json, tekken.json, tokenizer_config.json), in
        ``FILE_KINDS`` order: the checks that read every file's list (the files may disagree) list them so."""
        return [
            token
            for kind in FILE_KINDS
            if kind.added_tokens is not None and (record := getattr(self, kind.name)) is not None
            for token in kind.added_tokens(record)
        ]

    def vocabularies(self) -> list[tuple[str, Mapping[int, bytes]]]:
        """(file name, id -> token bytes) of every file whose vocabulary can be compared with the others'."""
        return [
            (record.name, kind.id_bytes(record))
            for kind in FILE_KINDS
            if kind.id_bytes is not None and (record := getattr(self, kind.name)) is not None
        ]

    def entries(self, kind: str, record: Any) -> int | None:
        """How many entries one parsed file holds (the scan's artifact summary)."""
        return BY_NAME[kind].entries(record)

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


def sniff_vocabulary(file: Path) -> str | None:
    """The vocabulary kind of a file whose name says nothing (tiktoken's cache files are named by the sha1
    of their URL, litellm ships ``anthropic_tokenizer.json``): decided by its first bytes, as
    ``tokenizer.model`` is. ``tiktoken``, ``tokenizer_json``, ``gguf`` or None."""
    head = read_bytes_head(file, SNIFF_BYTES)
    return next((kind.name for kind in FILE_KINDS if kind.sniff is not None and kind.sniff(head)), None)


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
        raise InputError(
            f"{len(found)} files hold a vocabulary by their content ({names}): name one as the target",
            file=str(directory),
        )
    return found[0] if found else None


def _gguf(file: Path) -> GGUFTokenizer:
    return _parser("gguf")(file)


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
        if kind_of(path.name) not in VOCAB_KINDS and not any(
            fnmatch.fnmatchcase(path.name, g) for g in MODEL_FILE_GLOBS
        ):
            kind = sniff_vocabulary(path)
            if kind is None:
                raise InputError(
                    "not a tokenizer file (expected tokenizer.json, tiktoken.model, *.tiktoken, tekken.json, "
                    "tokenizer.model, "
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
            return Artifacts(root=root, **single)  # type: ignore[arg-type]  # kind -> that kind's record
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
            raise InputError(
                f"no tokenizer vocabulary found (looked for {names}, *.gguf, and for a tokenizer.json "
                "or tiktoken rank file under another name)",
                file=str(path),
            )
        found[sniffed[0]] = _parser(sniffed[0])(sniffed[1])
    return Artifacts(root=root, remote_code=tuple(remote), gguf=gguf, **found)  # type: ignore[arg-type]  # kind -> that kind's record
