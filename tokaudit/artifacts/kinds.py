"""Every tokenizer file kind tokaudit reads, as one table: how a file is recognised (by name, and by content where
the name says nothing), the parser that reads it, and what it contributes to the model.

``load.py`` finds and parses the files by this table, ``Artifacts`` answers from it (the rank file, the added
tokens a file registers, each file's entries), and the model and checks read those answers rather than naming a
kind. A new kind is a parser module and a row here, and a field of ``Artifacts`` named like the row
(``tests/artifacts/test_artifacts.py`` loads every row from a real file).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tokaudit.records import AddedToken

#: A tiktoken rank file's first line: base64 of a token, one space, its rank.
_RANK_LINE = re.compile(rb"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|=)? \d{1,19}\r?\n")
#: Keys that tokenizers writes at the start of every tokenizer.json (``Tokenizer.save``), before the model.
_TOKENIZER_JSON_KEYS = (b'"added_tokens"', b'"truncation"', b'"pre_tokenizer"', b'"normalizer"')


def _rank_lines(head: bytes) -> bool:
    return _RANK_LINE.match(head) is not None


def _tokenizer_json_keys(head: bytes) -> bool:
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return text.startswith(b"{") and any(key in text for key in _TOKENIZER_JSON_KEYS)


def _gguf_magic(head: bytes) -> bool:
    return head.startswith(b"GGUF")


def _vocab_entries(record: Any) -> int:
    return len(record.vocab) + len(getattr(record, "added_tokens", ()))


def _spelled_bytes(record: Any) -> Mapping[int, bytes]:
    """id -> bytes of a vocab.json / vocab.txt (a token its scheme cannot spell is b"")."""
    return {i: record.token_bytes(i) or b"" for i in record.vocab}


@dataclass(frozen=True)
class FileKind:
    """One kind of tokenizer file. ``name`` is also the field of ``Artifacts`` that holds its record."""

    name: str
    #: File names of this kind, in precedence order (the first file of a kind wins).
    globs: tuple[str, ...]
    #: (module of tokaudit.artifacts, function) that parses one file into the kind's record.
    parser: tuple[str, str]
    #: What the record contributes to the model, for people (ARCHITECTURE.md, the table's test).
    contributes: str
    #: Holds a vocabulary: a target needs at least one such file (or a GGUF).
    vocabulary: bool = False
    #: Byte-level ranks tiktoken encodes with (``Artifacts.rank_file``).
    rank_file: bool = False
    #: Recognised by its first bytes when no name pattern claims the file (``sniff_vocabulary``).
    sniff: Callable[[bytes], bool] | None = None
    #: How many entries the record holds, for the scan's artifact summary (None: not counted).
    entries: Callable[[Any], int | None] = lambda record: None
    #: The added tokens the file registers itself (``Artifacts.registered_added_tokens``).
    added_tokens: Callable[[Any], Sequence[AddedToken]] | None = None
    #: id -> token bytes of its vocabulary, compared across files (TA303).
    id_bytes: Callable[[Any], Mapping[int, bytes]] | None = None


#: Every file kind, in precedence order (``Artifacts.present`` lists records in this order). The GGUF has no
#: name row: a ``*.gguf`` file is a target of its own or the one GGUF beside the Hugging Face files (``load.py``).
# fmt: off
FILE_KINDS: tuple[FileKind, ...] = (
    FileKind("tokenizer_json", ("tokenizer.json",), ("tokenizer_json", "parse_tokenizer_json"),
             "the base vocabulary (model vocab), added tokens, pre-tokenizer pattern, normalizer, decoder chain",
             vocabulary=True, sniff=_tokenizer_json_keys, entries=_vocab_entries,
             added_tokens=lambda r: r.added_tokens, id_bytes=lambda r: r.by_id),
    FileKind("tiktoken", ("tiktoken.model", "*.tiktoken"), ("tiktoken_ranks", "parse_tiktoken_ranks"),
             "the base vocabulary as byte-level ranks (id = rank)",
             vocabulary=True, rank_file=True, sniff=_rank_lines, entries=lambda r: len(r.by_id),
             id_bytes=lambda r: r.by_id),
    FileKind("tekken", ("tekken.json",), ("tekken", "parse_tekken"),
             "byte-level ranks after a block of special tokens (id = rank + the block), the declared size, the pattern",
             vocabulary=True, rank_file=True, entries=lambda r: len(r.by_id), added_tokens=lambda r: r.specials,
             id_bytes=lambda r: r.by_id),
    # SentencePiece ModelProto, or (GLM-4) tiktoken ranks under that name: told apart by content (load.py)
    FileKind("sentencepiece", ("tokenizer.model",), ("sentencepiece_model", "parse_sentencepiece"),
             "the base vocabulary as SentencePiece pieces, their types, the normalizer and the decode rules",
             vocabulary=True, entries=lambda r: len(r.by_id)),
    FileKind("tokenizer_config", ("tokenizer_config.json",), ("tokenizer_config", "parse_tokenizer_config"),
             "added tokens (added_tokens_decoder), named special tokens, the chat template, add_bos/add_eos",
             entries=lambda r: len(r.added_tokens_decoder), added_tokens=lambda r: r.added_tokens_decoder),
    FileKind("special_tokens_map", ("special_tokens_map.json",), ("tokenizer_config", "parse_special_tokens_map"),
             "named special tokens"),
    FileKind("added_tokens_json", ("added_tokens.json",), ("added_tokens", "parse_added_tokens_json"),
             "added tokens of the slow tokenizers", entries=lambda r: len(r.tokens)),
    FileKind("config", ("config.json",), ("model_config", "parse_model_config"),
             "the declared vocabulary size, the model's special ids"),
    FileKind("generation_config", ("generation_config.json",), ("model_config", "parse_generation_config"),
             "the stop ids of generation"),
    FileKind("chat_template", ("chat_template.jinja",), ("text_files", "parse_chat_template"), "the chat template"),
    FileKind("vocab_json", ("vocab.json",), ("text_files", "parse_vocab_json"),
             "the base vocabulary of a slow byte-level BPE tokenizer (GPT2Tokenizer)",
             vocabulary=True, entries=_vocab_entries, id_bytes=_spelled_bytes),
    FileKind("merges", ("merges.txt",), ("text_files", "parse_merges"), "the BPE merges beside vocab.json",
             entries=lambda r: len(r.merges)),
    FileKind("vocab_txt", ("vocab.txt",), ("text_files", "parse_vocab_txt"),
             "the base vocabulary of a WordPiece tokenizer (BertTokenizer)",
             vocabulary=True, entries=_vocab_entries, id_bytes=_spelled_bytes),
    FileKind("safetensors", ("model.safetensors",), ("safetensors_header", "parse_safetensors"),
             "the embedding and lm_head rows (from the header only)"),
    FileKind("safetensors_index", ("model.safetensors.index.json",), ("safetensors_header", "parse_safetensors_index"),
             "the embedding and lm_head rows of a sharded model"),
    # Meta's own tokenizer code beside its rank file (llama_models/llama3, llama4): read with ast, never run
    FileKind("remote_code", ("tokenization_*.py", "tokenizer.py"), ("remote_code", "parse_remote_code"),
             "what the model's own code would add (read with ast): patterns, special-token lists, reserved counts",
             entries=lambda r: sum(len(lst.tokens) for lst in r.special_token_lists)
             + (r.num_reserved_special_tokens or 0)),
    FileKind("gguf", (), ("gguf", "read_gguf_tokenizer"),
             "a whole tokenizer as llama.cpp loads it: tokens, types, merges, special ids, flags, chat templates",
             vocabulary=True, sniff=_gguf_magic),
)
# fmt: on

BY_NAME: dict[str, FileKind] = {kind.name: kind for kind in FILE_KINDS}


def names_of_rank_files(last: str = ", ") -> str:
    """The rank files' names, for messages: "tiktoken.model, *.tiktoken, tekken.json" (``last`` before the last)."""
    globs = [glob for kind in FILE_KINDS if kind.rank_file for glob in kind.globs]
    return ", ".join(globs[:-1]) + last + globs[-1]
