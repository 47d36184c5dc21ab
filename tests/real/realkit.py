"""The real-tokenizer suite's helpers: the pinned tokenizers, and each one's OWN library as the oracle.

The stream that `replay` reads is encoded here by the library the model family ships for (tokenizers,
sentencepiece, tiktoken, mistral-common), never by tokaudit, and the expected text is that library's
own decode. Used by tests/real/test_real.py and by tests/real/survey.py (the timing/status table).
"""

from __future__ import annotations

import base64
import importlib.util
import json
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FETCH_SCRIPT = ROOT / "scripts" / "fetch_real_tokenizers.py"

# The multilingual stream: emoji (with ZWJ and skin tone), CJK, Burmese, Arabic, accents, code and a tool call.
STREAM_TEXT = (
    "Hello 👋🏽 world! 👨‍👩‍👧 café naïve — 北京天气很好，東京は晴れ。안녕하세요 "
    "မြန်မာဘာသာ ကောင်းပါတယ် مرحبا بالعالم\n"
    "def add(a, b):\n    return a + b  # 1314151 ✓\n"
    '{"name": "get_weather", "arguments": {"city": "東京", "unit": "°C"}}'
)
# whisper/tokenizer.py's pattern (openai-whisper 20250625, get_encoding), which no shipped file states
WHISPER_PAT = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
# compare's bounded corpus: one case per line, the same classes as the stream.
CORPUS_LINES = [
    "Hello 👋🏽 world! 👨‍👩‍👧",
    "café naïve Ångström ﬁ",
    "北京天气很好，東京は晴れ。",
    "안녕하세요",
    "မြန်မာဘာသာ ကောင်းပါတယ်",
    "مرحبا بالعالم",
    "def add(a, b):\\n    return a + b  # 1314151",
    '{"name": "get_weather", "arguments": {"city": "東京", "unit": "°C"}}',
    "  leading and trailing spaces  ",
    "numbers 1234567890 3.14159 1,000,000",
]


def _fetch_module():
    spec = importlib.util.spec_from_file_location("fetch_real_tokenizers", FETCH_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fetch_module = cache(_fetch_module)


def lock_entries() -> list[dict]:
    return list(fetch_module().load_lock()["tokenizers"])


def _tiktoken_ranks(path: Path) -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    for line in path.read_bytes().splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _tiktoken_encoding(ranks_file: Path):
    """tiktoken's own Encoding for a rank file.

    A published encoding (found by the sha256 tiktoken's registry pins) is built by tiktoken's own
    constructor, fed the local file through a private TIKTOKEN_CACHE_DIR (no download, no global
    registry entry). Whisper's multilingual ranks are built as whisper builds them (its own pattern).
    """
    import hashlib
    import os
    import tempfile

    import tiktoken
    from tiktoken_ext import openai_public

    data = ranks_file.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    by_hash = {
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7": ("cl100k_base", "cl100k_base.tiktoken"),
        "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930": ("r50k_base", "r50k_base.tiktoken"),
        "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069": ("p50k_base", "p50k_base.tiktoken"),
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d": ("o200k_base", "o200k_base.tiktoken"),
    }
    if digest not in by_hash:
        meta = ranks_file.with_name("tokenizer.py")
        return tiktoken.Encoding(
            name=ranks_file.stem,
            pat_str=meta_pattern(meta) if meta.is_file() else WHISPER_PAT,
            mergeable_ranks=_tiktoken_ranks(ranks_file),
            special_tokens={},
        )
    name, blob = by_hash[digest]
    url = f"https://openaipublic.blob.core.windows.net/encodings/{blob}"
    old = os.environ.get("TIKTOKEN_CACHE_DIR")
    with tempfile.TemporaryDirectory() as cache_dir:
        Path(cache_dir, hashlib.sha1(url.encode()).hexdigest()).write_bytes(data)
        os.environ["TIKTOKEN_CACHE_DIR"] = cache_dir
        try:
            params = openai_public.ENCODING_CONSTRUCTORS[name]()
        finally:
            if old is None:
                del os.environ["TIKTOKEN_CACHE_DIR"]
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = old
    return tiktoken.Encoding(**params)


def meta_pattern(tokenizer_py: Path) -> str:
    """The pattern Meta's llama_models tokenizer.py gives tiktoken (class attribute ``pat_str`` in Llama 3,
    ``O200K_PATTERN`` in Llama 4), read with ast: the oracle does not import llama_models."""
    import ast

    for node in ast.walk(ast.parse(tokenizer_py.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            if any(isinstance(t, ast.Name) and t.id in ("pat_str", "O200K_PATTERN") for t in node.targets):
                return node.value.value
    raise AssertionError(f"{tokenizer_py}: no pattern")


def rank_file(directory: Path) -> Path:
    """The one tiktoken rank file of a directory (named *.tiktoken, tokenizer.model, or by a hash)."""
    (found,) = [p for p in sorted(directory.iterdir()) if p.name != "tokenizer.py"]
    return found


def library_codec(entry: dict, directory: Path):
    """(encode, decode) of the tokenizer's own library: encode without added BOS/EOS, decode skipping specials."""
    lib = entry["library"]
    if lib == "sentencepiece":
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor(model_file=str(directory / "tokenizer.model"))
        return (lambda text: list(sp.encode(text))), (lambda ids: sp.decode(ids))
    if lib == "mistral-common":
        from mistral_common.tokens.tokenizers.tekken import Tekkenizer

        tk = Tekkenizer.from_file(str(directory / "tekken.json"))
        return (lambda text: tk.encode(text, bos=False, eos=False)), (lambda ids: tk.decode(ids))
    if lib == "tiktoken":
        enc = _tiktoken_encoding(rank_file(directory))
        return (lambda text: enc.encode_ordinary(text)), (lambda ids: enc.decode(ids))
    return _tokenizers_codec(directory)


def _tokenizers_codec(directory: Path):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers

    named = sorted(directory.glob("*tokenizer.json"))  # tokenizer.json, or litellm's anthropic_tokenizer.json
    if named:
        tok = Tokenizer.from_file(str(named[0]))
    elif (directory / "vocab.txt").is_file():
        # what transformers' BertTokenizerFast builds from a bare vocab.txt (BERT's defaults: lowercase, strip accents)
        tok = Tokenizer(models.WordPiece.from_file(str(directory / "vocab.txt"), unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece()
        tok.add_special_tokens(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    else:
        # what transformers' GPT2TokenizerFast builds from vocab.json + merges.txt
        tok = Tokenizer(models.BPE.from_file(str(directory / "vocab.json"), str(directory / "merges.txt")))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        tok.add_special_tokens(["<|endoftext|>"])
    return (
        lambda text: tok.encode(text, add_special_tokens=False).ids,
        lambda ids: tok.decode(ids, skip_special_tokens=True),
    )


def write_stream(entry: dict, directory: Path, out: Path) -> tuple[list[int], str]:
    """Encode STREAM_TEXT with the model's own library into a JSON-array stream file; (ids, library decode)."""
    encode, decode = library_codec(entry, directory)
    ids = [int(i) for i in encode(STREAM_TEXT)]
    out.write_text(json.dumps(ids), encoding="utf-8")
    return ids, decode(ids)


def write_corpus(out: Path) -> Path:
    out.write_text("\n".join(CORPUS_LINES) + "\n", encoding="utf-8")
    return out


def error_findings(doc: dict) -> set[tuple[str, str]]:
    """(code, name) of the error-level findings of a JSON report (all targets)."""
    found = list(doc.get("findings", []))
    for target in doc.get("targets", []) or []:
        found += target.get("findings", []) if isinstance(target, dict) else []
    return {(f["code"], f["name"]) for f in found if f.get("severity") == "error"}


_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def gguf_keys(path: Path) -> dict:
    """Every key/value of a little-endian GGUF v3, strings as bytes: a test-side reader, the oracle of tokaudit's."""
    import struct

    data = path.read_bytes()
    assert data[:4] == b"GGUF"
    pos = 24
    n_kv = struct.unpack_from("<Q", data, 16)[0]

    def string() -> bytes:
        nonlocal pos
        n = struct.unpack_from("<Q", data, pos)[0]
        pos += 8 + n
        return data[pos - n : pos]

    def value(kind: int):
        nonlocal pos
        if kind == 8:
            return string()
        if kind == 9:
            inner, count = struct.unpack_from("<IQ", data, pos)
            pos += 12
            return [value(inner) for _ in range(count)]
        fmt = _SCALARS[kind]
        pos += struct.calcsize(fmt)
        return struct.unpack_from(fmt, data, pos - struct.calcsize(fmt))[0]

    out = {}
    for _ in range(n_kv):
        key = string().decode()
        kind = struct.unpack_from("<I", data, pos)[0]
        pos += 4
        out[key] = value(kind)
    return out
