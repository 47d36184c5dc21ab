"""Real inputs of the parser round trip: llama.cpp's chat templates (vendored in the llama-cpp-python 0.3.36 sdist
the real-tokenizer cache holds), model directories that pair one with a real tokenizer, and a GLM-4.6-style
tokenizer: Qwen3's real tokenizer.json with GLM-4.6's markers added as special tokens, as GLM-4.6's files
declare them (the project caches no GLM tokenizer). Used by the tests and by scripts/golden_parsers.py."""

from __future__ import annotations

import json
import os
import shutil
import tarfile
from functools import lru_cache
from pathlib import Path

SDIST = "llama_cpp_python-0.3.36.tar.gz"
TEMPLATES = "llama_cpp_python-0.3.36/vendor/llama.cpp/models/templates/"
ROOT = Path(__file__).resolve().parents[1]

#: GLM-4.6's control and tool markers (special: true in its tokenizer.json).
GLM_MARKERS = ("[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>", "<tool_call>", "</tool_call>",
               "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>", "<think>", "</think>", "<tool_response>", "</tool_response>",
               "<|endoftext|>")


def real_cache() -> Path:
    return Path(os.environ.get("TOKAUDIT_REAL_CACHE") or Path.home() / ".cache" / "tokaudit" / "real")


def real_model(name: str) -> Path | None:
    path = real_cache() / "models" / name
    return path if path.is_dir() else None


@lru_cache(maxsize=1)
def _templates() -> dict[str, str]:
    path = real_cache() / "packages" / SDIST
    if not path.is_file():
        return {}
    out = {}
    with tarfile.open(path) as tar:
        for member in tar.getmembers():
            if member.name.startswith(TEMPLATES) and member.name.endswith(".jinja") and member.isfile():
                f = tar.extractfile(member)
                if f is not None:
                    out[member.name[len(TEMPLATES):]] = f.read().decode("utf-8")
    return out


def llamacpp_templates() -> dict[str, str]:
    """File name -> text of every template in llama.cpp's models/templates/ (empty without the sdist)."""
    return dict(_templates())


def llamacpp_template(name: str) -> str | None:
    return _templates().get(name)


def model_dir(tokenizer: Path, template: str, dest: Path) -> Path:
    """A model directory: the tokenizer's files and ``template`` as chat_template.jinja (any template in
    tokenizer_config.json is dropped, so the file is the one read)."""
    dest.mkdir(parents=True, exist_ok=True)
    for f in tokenizer.iterdir():
        if f.is_file():
            shutil.copy(f, dest / f.name)
    cfg = dest / "tokenizer_config.json"
    if cfg.is_file():
        data = json.loads(cfg.read_text(encoding="utf-8"))
        data.pop("chat_template", None)
        cfg.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    (dest / "chat_template.jinja").write_text(template, encoding="utf-8")
    return dest


def glm_tokenizer(dest: Path) -> Path | None:
    """Qwen3's real tokenizer.json with GLM-4.6's markers as special added tokens, a tokenizer_config.json naming
    <|endoftext|> as eos, and a config.json with GLM-4.6's model type (None without the real Qwen3 files)."""
    qwen = real_model("qwen3")
    if qwen is None:
        return None
    from tokenizers import AddedToken, Tokenizer

    tok = Tokenizer.from_file(str(qwen / "tokenizer.json"))
    tok.add_special_tokens([AddedToken(m, special=True, normalized=False) for m in GLM_MARKERS])
    dest.mkdir(parents=True, exist_ok=True)
    tok.save(str(dest / "tokenizer.json"))
    (dest / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>",
                                                            "pad_token": "<|endoftext|>"}), encoding="utf-8")
    (dest / "config.json").write_text(json.dumps({"model_type": "glm4_moe"}), encoding="utf-8")
    return dest


def kimi_tokenizer(dest: Path) -> Path:
    """The Kimi-K2.5-shaped fixture as a tokenizer.json (built by tokaudit from its ranks and added tokens, special
    flags kept) for a stack that loads tokenizer.json without Kimi's remote code."""
    from tokaudit.scan import load_model
    from tokaudit.stream.replay import load_tokenizer

    model = load_model(str(ROOT / "fixtures" / "kimi-k2.5"))
    dest.mkdir(parents=True, exist_ok=True)
    load_tokenizer(model).tokenizer.save(str(dest / "tokenizer.json"))
    (dest / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|im_end|>"}),
                                                encoding="utf-8")
    (dest / "config.json").write_text(json.dumps({"model_type": "kimi_k2"}), encoding="utf-8")
    return dest
