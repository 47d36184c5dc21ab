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
GLM_MARKERS = (
    "[gMASK]",
    "<sop>",
    "<|system|>",
    "<|user|>",
    "<|assistant|>",
    "<|observation|>",
    "<tool_call>",
    "</tool_call>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
    "<think>",
    "</think>",
    "<tool_response>",
    "</tool_response>",
    "<|endoftext|>",
)


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
                    out[member.name[len(TEMPLATES) :]] = f.read().decode("utf-8")
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
    """Qwen3's real tokenizer.json with GLM-4.6's markers as special added tokens, <|endoftext|> as eos, GLM-4.6's
    model type (None without the real Qwen3 files)."""
    return marker_tokenizer(dest, GLM_MARKERS, "<|endoftext|>", "glm4_moe")


def marker_tokenizer(
    dest: Path, markers: tuple[str, ...], eos: str, model_type: str, config: dict[str, str] | None = None
) -> Path | None:
    """Qwen3's real tokenizer.json with a model family's markers as special added tokens (as that family's own
    tokenizer declares them), ``eos`` as the end of turn, and a config.json naming ``model_type`` (None without the
    real Qwen3 files). The project caches no tokenizer of these families; their markers are what the parsers read."""
    qwen = real_model("qwen3")
    if qwen is None:
        return None
    from tokenizers import AddedToken, Tokenizer

    tok = Tokenizer.from_file(str(qwen / "tokenizer.json"))
    tok.add_special_tokens([AddedToken(m, special=True, normalized=False) for m in dict.fromkeys((*markers, eos))])
    dest.mkdir(parents=True, exist_ok=True)
    tok.save(str(dest / "tokenizer.json"))
    (dest / "tokenizer_config.json").write_text(
        json.dumps(
            {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": eos, "pad_token": eos, **(config or {})}
        ),
        encoding="utf-8",
    )
    (dest / "config.json").write_text(json.dumps({"model_type": model_type}), encoding="utf-8")
    return dest


def kimi_tokenizer(dest: Path) -> Path:
    """The Kimi-K2.5-shaped fixture as a tokenizer.json (built by tokaudit from its ranks and added tokens, special
    flags kept) for a stack that loads tokenizer.json without Kimi's remote code."""
    from tokaudit.model.load import load_model
    from tokaudit.stream.replay import load_tokenizer

    model = load_model(str(ROOT / "fixtures" / "kimi-k2.5"))
    dest.mkdir(parents=True, exist_ok=True)
    load_tokenizer(model).tokenizer.save(str(dest / "tokenizer.json"))
    (dest / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|im_end|>"}), encoding="utf-8"
    )
    (dest / "config.json").write_text(json.dumps({"model_type": "kimi_k2"}), encoding="utf-8")
    return dest


#: Families the real-tokenizer cache holds no tokenizer of: the markers their own tokenizers declare special (as the
#: templates write them), the end of turn, and the model type a deployed config.json names. Built by
#: :func:`family_tokenizer` on Qwen3's real vocabulary.
MARKER_FAMILIES: dict[str, tuple[tuple[str, ...], str, str]] = {
    "apertus": (
        (
            "<|system_start|>",
            "<|system_end|>",
            "<|developer_start|>",
            "<|developer_end|>",
            "<|user_start|>",
            "<|user_end|>",
            "<|assistant_start|>",
            "<|assistant_end|>",
            "<|inner_prefix|>",
            "<|inner_suffix|>",
            "<|tools_prefix|>",
            "<|tools_suffix|>",
        ),
        "<|assistant_end|>",
        "apertus",
    ),
    "apriel": (
        (
            "<|begin_system|>",
            "<|begin_user|>",
            "<|begin_assistant|>",
            "<|begin_content|>",
            "<|begin_tool_result|>",
            "<|end|>",
        ),
        "<|end|>",
        "mistral",
    ),
    "cohere": (
        (
            "<|START_OF_TURN_TOKEN|>",
            "<|END_OF_TURN_TOKEN|>",
            "<|SYSTEM_TOKEN|>",
            "<|USER_TOKEN|>",
            "<|CHATBOT_TOKEN|>",
            "<|START_THINKING|>",
            "<|END_THINKING|>",
            "<|START_ACTION|>",
            "<|END_ACTION|>",
            "<|START_RESPONSE|>",
            "<|END_RESPONSE|>",
            "<|START_TEXT|>",
            "<|END_TEXT|>",
            "<|START_TOOL_RESULT|>",
            "<|END_TOOL_RESULT|>",
        ),
        "<|END_OF_TURN_TOKEN|>",
        "cohere2",
    ),
    "gigachat": (("<|message_sep|>", "<|role_sep|>", "<|function_call|>"), "</s>", "deepseek_v3"),
    "kimi-k3": (("<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>"), "<|end_of_msg|>", "kimi_k3"),
    "lfm2": (
        ("<|im_start|>", "<|im_end|>", "<|tool_call_start|>", "<|tool_call_end|>", "<think>", "</think>"),
        "<|im_end|>",
        "lfm2_moe",
    ),
    "minimax-m1": (("<beginning_of_sentence>", "<end_of_sentence>"), "<end_of_sentence>", "minimax_m1"),
    "minimax-m3": (("]<]minimax[>[", "[e~[", "]~b]", "<mm:think>", "</mm:think>"), "[e~[", "minimax_m3"),
    "mistral": (
        (
            "<s>",
            "</s>",
            "[INST]",
            "[/INST]",
            "[SYSTEM_PROMPT]",
            "[/SYSTEM_PROMPT]",
            "[AVAILABLE_TOOLS]",
            "[/AVAILABLE_TOOLS]",
            "[TOOL_CALLS]",
            "[CALL_ID]",
            "[ARGS]",
            "[TOOL_RESULTS]",
            "[/TOOL_RESULTS]",
            "[TOOL_CONTENT]",
            "[THINK]",
            "[/THINK]",
        ),
        "</s>",
        "mistral3",
    ),
    "nemotron-nano-v2": (
        ("<SPECIAL_10>", "<SPECIAL_11>", "<SPECIAL_12>", "<TOOLCALL>", "</TOOLCALL>", "<think>", "</think>"),
        "<SPECIAL_12>",
        "nemotron_h",
    ),
    "gemma4": (
        (
            "<bos>",
            "<|turn>",
            "<turn|>",
            "<|think|>",
            "<|channel>",
            "<channel|>",
            "<|tool>",
            "<tool|>",
            "<|tool_call>",
            "<tool_call|>",
            "<|tool_response>",
            "<tool_response|>",
            '<|"|>',
        ),
        "<turn|>",
        "gemma4",
    ),
    "muse": (("<|start|>", "<|message|>", "<|eom|>", "<|eot|>"), "<|eot|>", "muse_glimmer"),
    "minicpm5": (("<|im_start|>", "<|im_end|>", "<think>", "</think>"), "<|im_end|>", "minicpm5"),
    "hy3": (
        (
            "<｜hy_begin_of_sentence:opensource｜>",
            "<｜hy_User:opensource｜>",
            "<｜hy_Assistant:opensource｜>",
            "<｜hy_eos:opensource｜>",
            "<think:opensource>",
            "</think:opensource>",
            "<tool_calls:opensource>",
            "</tool_calls:opensource>",
            "<tool_call:opensource>",
            "</tool_call:opensource>",
            "<tool_sep:opensource>",
            "<arg_key:opensource>",
            "</arg_key:opensource>",
            "<arg_value:opensource>",
            "</arg_value:opensource>",
        ),
        "<｜hy_eos:opensource｜>",
        "hy_v3",
    ),
    "solar": (
        (
            "<|begin|>",
            "<|end|>",
            "<|content|>",
            "<|think|>",
            "<|calls|>",
            "<|tool_calls|>",
            "<|tool_call:begin|>",
            "<|tool_call:name|>",
            "<|tool_call:args|>",
            "<|tool_call:end|>",
            "<|tools:begin|>",
            "<|tools:end|>",
        ),
        "<|endoftext|>",
        "solar_open",
    ),
    "seed-oss": (
        ("<seed:bos>", "<seed:eos>", "<seed:think>", "</seed:think>", "<seed:tool_call>", "</seed:tool_call>"),
        "<seed:eos>",
        "seed_oss",
    ),
}


#: tokenizer_config.json keys a family's own tokenizer sets that its parsers read (Hy3's marker suffix, read by vLLM's
#: hy_v3 parser from the tokenizer's init kwargs)
FAMILY_CONFIG: dict[str, dict[str, str]] = {"hy3": {"token_suffix": ":opensource"}}


def family_tokenizer(family: str, dest: Path) -> Path | None:
    """The tokenizer of one of :data:`MARKER_FAMILIES` (None without the real Qwen3 files)."""
    markers, eos, model_type = MARKER_FAMILIES[family]
    return marker_tokenizer(dest, markers, eos, model_type, FAMILY_CONFIG.get(family))
