"""Plain-text artifacts: ``chat_template.jinja``, ``vocab.json`` + ``merges.txt`` (GPT-2), ``vocab.txt`` (WordPiece)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tokaudit.artifacts.safe_files import read_text
from tokaudit.artifacts.strict_json import expect_int, read_json_object
from tokaudit.records import Provenance
from tokaudit.artifacts.decoder_chain import BYTE_LEVEL_DEFAULT, DecoderChain, WORDPIECE_DEFAULT
from tokaudit.artifacts.token_bytes import Scheme, token_bytes
from tokaudit.errors import InputError


@dataclass(frozen=True)
class ChatTemplate:
    """chat_template.jinja."""

    path: Path
    text: str

    @property
    def name(self) -> str:
        return self.path.name


@dataclass(frozen=True)
class VocabJson:
    """GPT-2 style ``vocab.json`` (byte-level token string -> id)."""

    path: Path
    vocab: dict[int, str]
    duplicate_ids: tuple[tuple[int, str, str], ...]
    scheme: Scheme = Scheme.BYTE_LEVEL
    decoder: DecoderChain = BYTE_LEVEL_DEFAULT

    @property
    def name(self) -> str:
        return self.path.name

    def source(self, token_id: int) -> Provenance:
        return Provenance(self.path.name, key=self.vocab.get(token_id))

    def token_bytes(self, token_id: int) -> bytes | None:
        token = self.vocab.get(token_id)
        return None if token is None else token_bytes(token, self.scheme)


@dataclass(frozen=True)
class Merges:
    """GPT-2 style ``merges.txt``."""

    path: Path
    merges: tuple[tuple[str, str], ...]
    #: 1-based line of each merge
    lines: tuple[int, ...] = ()

    @property
    def name(self) -> str:
        return self.path.name


@dataclass(frozen=True)
class VocabTxt:
    """WordPiece ``vocab.txt``: the id of a token is its 0-based line index."""

    path: Path
    vocab: dict[int, str]
    scheme: Scheme = Scheme.WORDPIECE
    decoder: DecoderChain = WORDPIECE_DEFAULT

    @property
    def name(self) -> str:
        return self.path.name

    def source(self, token_id: int) -> Provenance:
        return Provenance(self.path.name, line=token_id + 1)

    def token_bytes(self, token_id: int) -> bytes | None:
        token = self.vocab.get(token_id)
        return None if token is None else token_bytes(token, self.scheme)


def parse_chat_template(path: Path) -> ChatTemplate:
    return ChatTemplate(path, read_text(path))


def parse_vocab_json(path: Path) -> VocabJson:
    data = read_json_object(path)
    vocab: dict[int, str] = {}
    duplicates = []
    for token, token_id in data.items():
        token_id = expect_int(token_id, path, token)
        if token_id in vocab:
            duplicates.append((token_id, vocab[token_id], token))
        else:
            vocab[token_id] = token
    return VocabJson(path, vocab, tuple(duplicates))


def parse_merges(path: Path) -> Merges:
    merges = []
    lines = []
    for lineno, line in enumerate(read_text(path).splitlines(), 1):
        if not line.strip() or (lineno == 1 and line.startswith("#version")):
            continue
        parts = line.split(" ")
        if len(parts) != 2:
            raise InputError("expected two space-separated tokens", file=str(path), line=lineno)
        merges.append((parts[0], parts[1]))
        lines.append(lineno)
    return Merges(path, tuple(merges), tuple(lines))


def unknown_merges(vocab: VocabJson, merges: Merges) -> list[tuple[int, tuple[str, str], str]]:
    """``(line, merge, missing token)`` for each merge whose parts or result vocab.json lacks
    (tokenizers' BPE builder rejects such a file)."""
    known = set(vocab.vocab.values())
    bad = []
    for k, (left, right) in enumerate(merges.merges):
        for token in (left, right, left + right):
            if token not in known:
                bad.append((merges.lines[k] if merges.lines else k + 1, (left, right), token))
                break
    return bad


def parse_vocab_txt(path: Path) -> VocabTxt:
    lines = read_text(path).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    vocab = {i: line.rstrip("\r") for i, line in enumerate(lines)}
    if not vocab:
        raise InputError("empty vocabulary", file=str(path))
    return VocabTxt(path, vocab)
