"""Every command on real tokenizers from published packages (issue 9 §6): where false alarms show.

The tokenizers are downloaded once per machine by scripts/fetch_real_tokenizers.py (pinned, sha256
checked, cached outside git); the tests skip only when that download is impossible (offline). For each
tokenizer: scan, compare on a bounded corpus, replay of a multilingual stream encoded by the
tokenizer's own library, and a short fuzz. Each asserts no exit 2/3, exactly the error-level findings
verified true below (one line of why each), and that replay's text is the library's own decode.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.real import realkit
from tests.stream.test_replay_bulk import _replayed_decodestream, _same_run, _stepped_decodestream
from tokaudit.model.load import load_model
from tokaudit.stream.replay import load_tokenizer

pytestmark = pytest.mark.real

ENTRIES = {e["name"]: e for e in realkit.lock_entries()}
NAMES = sorted(ENTRIES)
FUZZ_ITERATIONS = "100"
# whisper builds its multilingual encoding with a pattern in its code; no shipped file states it.
COMPARE_EXTRA: dict[str, tuple[str, ...]] = {"whisper-multilingual-tiktoken": ("--pat-str", realkit.WHISPER_PAT)}

# Error-level findings checked by hand and true, per tokenizer and command: {(code, name): why}.
# Anything not listed here is a false alarm (or a regression) and fails the test.
TRUE_ERRORS: dict[str, dict[str, dict[tuple[str, str], str]]] = {
    "llama3": {
        "scan": {
            (
                "TA202",
                "eos-mismatch",
            ): "the package ships no generation_config.json: tokenizer_config's eos is <|end_of_text|> "
            "while the template ends every turn with <|eot_id|>, so a stack reading these files never stops a turn "
            "(the original Llama 3 Instruct release bug)",
        },
    },
    # gemma3's TA803 (double-bos) is true but a warning: see test_gemma3_double_bos_is_a_warning
    # qwen3's TA802 (TGI's and Dynamo's tojson) is true but a warning: only the tools' JSON is spelled otherwise
    # (test_qwen3_tojson_divergence_names_tgi_and_dynamo)
    "deepseek-v3": {
        "scan": {
            (
                "TA806",
                "tool-call-dropped",
            ): "the template writes an assistant turn's tool calls only when its content is none: "
            'vLLM, SGLang, mistral.rs make null content "", transformers 5 and Dynamo drop the key (undefined is not '
            "none), "
            "so the calls vanish; smg keeps null but parses the arguments to a dict, which the template concatenates "
            "(TA801)",
        },
    },
    "mistral-7b-json": {
        "scan": {
            (
                "TA309",
                "loader-rebuild",
            ): "the same cause as compare's TA601, found statically: tokenizer_class LlamaTokenizer "
            "makes transformers 5 replace the Prepend+Replace normalizer with its Metaspace pre-tokenizer "
            "(test_real_loader_pipeline.py checks the ids with AutoTokenizer)",
        },
        "compare": {
            # one cause, one finding: the round-trip loss is listed in it as a consequence (test_mistral_7b_... below)
            (
                "TA601",
                "encode-mismatch",
            ): "transformers 5.x rebuilds LlamaTokenizer (tokenizer_class) with its own Metaspace "
            "pipeline instead of tokenizer.json's Prepend+Replace normalizer: '  leading' encodes to [28705, ...] not "
            "[259, ...] "
            "and decodes with one leading space lost (checked with AutoTokenizer)",
        },
    },
    # sentencepiece's own test models (no byte fallback: emoji, CJK, Burmese are the unknown piece, id 0)
    **{
        name: {
            "compare": {
                ("TA602", "decode-mismatch"): "transformers 5.24.0's tokenizer for a bare tokenizer.model "
                "(loadable since protobuf is in the test extras) decodes the unknown piece as its text '<unk>' where "
                "sentencepiece, and hf converted from the same model, write ' ⁇ ' (sentencepiece's unk surface)"
            }
        }
        for name in ("sp-bpe-botchan", "sp-unigram-botchan", "sp-unigram-kyoto-ja")
    },
    "gemma-256k": {
        "scan": {
            (
                "TA202",
                "eos-mismatch",
            ): "tokenizer_config's eos_token is <eos> (1) while the template ends every turn with "
            "<end_of_turn> (107) and no generation_config.json ships: a stack stopping on eos_token alone runs past "
            "the turn",
        },
    },
    "llama3-meta": {
        "scan": {
            (
                "TA101",
                "vocab-gap",
            ): "ids 128000-128255 (<|begin_of_text|>, <|eot_id|>, the reserved tokens) are defined only "
            "by Meta's tokenizer.py (special_tokens built in Tokenizer.__init__): a loader of the rank file alone "
            "(tiktoken-rs, smg) has no token for them and tiktoken raises KeyError",
        },
        "fuzz": {
            (
                "TA605",
                "backend-crash",
            ): "the same ids: tiktoken, reference and strict built from the rank file raise on "
            "decode([128255]); only Meta's code maps them",
        },
    },
    "llama4-meta": {
        "scan": {
            ("TA101", "vocab-gap"): "as llama3-meta: ids 200000-202047 are defined only by Meta's tokenizer.py "
            "(BASIC_SPECIAL_TOKENS + LLAMA4_SPECIAL_TOKENS + reserved, num_reserved_special_tokens 2048)",
        },
        "compare": {
            (
                "TA601",
                "encode-mismatch",
            ): "transformers 5.x converts tokenizer.model (TikTokenConverter) with cl100k's regex, "
            "not Llama 4's O200K_PATTERN that Meta's tokenizer.py passes to tiktoken: English contractions and code "
            "split "
            "into other ids (\"I'm sure you've\" in the built-in corpus)",
        },
        "fuzz": {
            ("TA605", "backend-crash"): "as llama3-meta: ids 200000-202047 decode only with Meta's code",
        },
    },
    # llama.cpp's own test vocabularies (vendor/llama.cpp/models of llama-cpp-python 0.3.36's sdist)
    "gguf-aquila": {
        "scan": {
            ("TA307", "gguf-pre-tokenizer"): "a BPE vocabulary written before tokenizer.ggml.pre existed: "
            "llama.cpp logs 'missing pre-tokenizer type, using: default' (seen in llama-cpp-python's load log)"
        }
    },
    "gguf-gpt-neox": {
        "scan": {("TA307", "gguf-pre-tokenizer"): "as gguf-aquila: no tokenizer.ggml.pre, llama.cpp's DEFAULT regexes"}
    },
    "gguf-phi-3": {
        "scan": {
            ("TA207", "eog-mismatch"): "eos_token_id is 32000 <|endoftext|> while the template ends turns with "
            "<|end|> 32007: llama.cpp stops on <|end|> by its text (is_eog 32007 true), runtimes reading only "
            "the eos id do not (mistral.rs#1012 is this Phi-3.5 GGUF bug)"
        }
    },
    "gguf-qwen2": {
        "scan": {
            ("TA207", "eog-mismatch"): "eos_token_id is 151643 <|endoftext|> while turns end with <|im_end|> "
            "151645: llama.cpp stops on both (is_eog), eos-only runtimes run on"
        }
    },
    "gguf-qwen35": {"scan": {("TA207", "eog-mismatch"): "as gguf-qwen2: eos 151643, turns end with <|im_end|> 151645"}},
    "gguf-gemma-4": {
        "scan": {
            ("TA207", "eog-mismatch"): "eos_token_id is 1 <eos> while the template ends turns with <turn|> "
            "106 (Gemma 4's one-sided markers <|turn> ... <turn|>): llama.cpp stops on <turn|> by its text "
            "(llama-vocab.cpp's EOG list names it for gemma4), runtimes reading only the eos id run on",
            ("TA810", "python-repr-leak"): "vLLM hands Gemma 4's system message to the template as a list of "
            "text parts (an openai-format template: it loops over content) and the system turn prints "
            "`content | trim`: Python's repr of the list (tests/real/test_templates_real.py VLLM_TEXT_PARTS)",
        }
    },
    "gguf-bert-bge": {
        "compare": {
            ("TA603", "roundtrip-failure"): "llama.cpp's own WordPiece (llama-cpp-python, not tokaudit) "
            "drops Hangul vowel and final jamo: '안녕하세요' decodes to ' ᄋᄂᄒᄉᄋ'; lower-casing, accents and "
            "[UNK] are notes"
        }
    },
    "gpt4o": {
        "scan": {
            (
                "TA309",
                "loader-rebuild",
            ): "the same cause as compare's TA601, found statically: tokenizer_class GPT2Tokenizer "
            "makes transformers 5 replace the o200k Split with GPT-2's ByteLevel regex",
        },
        "compare": {
            (
                "TA601",
                "encode-mismatch",
            ): "transformers 5.23 builds GPT2Tokenizer (tokenizer_class) with GPT-2's ByteLevel regex "
            "instead of tokenizer.json's o200k Split pattern: Burmese and code encode to other ids (checked with "
            "AutoTokenizer)",
        },
    },
}

# issue 35: the structural render rules and the tool-call turn in the form each stack sends it
_NULL = (
    "transformers drops None-valued message keys (content: null on a tool-call turn becomes no content key) and the "
    "template reads message.content; transformers renders the template's tools, so the form it sends must render too"
)
ISSUE_35_SCAN_ERRORS: dict[str, dict[tuple[str, str], str]] = {
    "qwen3": {("TA801", "template-render-error"): _NULL},
    "deepseek-v3": {("TA801", "template-render-error"): _NULL},
    "gguf-command-r": {
        ("TA811", "content-dropped"): "llama-server picks the GGUF's tool_use template when tools are passed; "
        "it reads tools and messages in Cohere's own shape (tool.name, no tool role), so the tool result "
        "of an OpenAI request never reaches the prompt (vLLM fails on the same template)"
    },
    "gguf-phi-3": {
        ("TA811", "content-dropped"): "the template writes no system role: the system message is lost for every "
        "stack but llama.cpp, whose server merges it into the first user turn"
    },
}
for _name, _more in ISSUE_35_SCAN_ERRORS.items():
    TRUE_ERRORS.setdefault(_name, {}).setdefault("scan", {}).update(_more)


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return realkit.write_corpus(tmp_path_factory.mktemp("real-corpus") / "corpus.txt")


def _run(command: str, name: str, *args: str) -> dict:
    result = run_cli(command, *args, "--format", "json")
    assert result.exit_code not in (2, 3), f"{name} {command}: exit {result.exit_code}: {result.stderr.strip()}"
    doc = json.loads(result.stdout)
    expected = TRUE_ERRORS.get(name, {}).get(command, {})
    assert realkit.error_findings(doc) == set(expected), (
        f"{name} {command}: error findings differ from the verified list"
    )
    assert result.exit_code == (1 if expected else 0)
    return doc


@pytest.mark.parametrize("name", NAMES)
def test_scan(name: str, real_dirs: dict[str, Path]) -> None:
    doc = _run("scan", name, str(real_dirs[name]))
    assert doc["command"] == "scan"


@pytest.mark.parametrize("name", NAMES)
def test_compare(name: str, real_dirs: dict[str, Path], corpus: Path) -> None:
    doc = _run(
        "compare",
        name,
        str(real_dirs[name]),
        "--no-builtin-corpus",
        "--corpus",
        str(corpus),
        *COMPARE_EXTRA.get(name, ()),
    )
    assert len([b for b in doc["backends"] if b["available"]]) >= 2, f"{name}: compare ran fewer than two backends"


#: the GGUF entries' streams are encoded by llama-cpp-python, and replayed in tests/real/test_gguf_real.py
REPLAY_NAMES = [n for n in NAMES if ENTRIES[n]["library"] != "llama.cpp"]


@pytest.mark.parametrize("name", REPLAY_NAMES)
def test_replay(name: str, real_dirs: dict[str, Path], tmp_path: Path) -> None:
    stream = tmp_path / "stream.json"
    ids, expected_text = realkit.write_stream(ENTRIES[name], real_dirs[name], stream)
    doc = _run("replay", name, str(real_dirs[name]), str(stream))
    assert doc["stream"]["tokens"] == len(ids)
    assert doc["text"] == expected_text
    # replay takes DecodeStream's run from offsets' when the two must agree: it is the library's own
    model = load_model(str(real_dirs[name]))
    tokenizer = load_tokenizer(model).tokenizer
    for skip in (True, False):
        replayed, _ = _replayed_decodestream(model, tokenizer, skip, ids)
        _same_run(replayed, _stepped_decodestream(model, tokenizer, skip, ids))
        for prefill in (False, True):  # after a prompt: the library until the windows meet, then offsets' run
            prompt, rest = tuple(ids[:10]), ids[10:]
            replayed, _ = _replayed_decodestream(model, tokenizer, skip, rest, prompt, prefill)
            _same_run(replayed, _stepped_decodestream(model, tokenizer, skip, rest, prompt, prefill))


@pytest.mark.parametrize("name", NAMES)
def test_fuzz(name: str, real_dirs: dict[str, Path]) -> None:
    _run("fuzz", name, str(real_dirs[name]), "--iterations", FUZZ_ITERATIONS)


def test_compare_without_a_known_pattern_asks_for_pat_str(real_dirs: dict[str, Path], corpus: Path) -> None:
    """Whisper's multilingual ranks are no published encoding: compare cannot encode, and says how to fix it."""
    result = run_cli("compare", real_dirs["whisper-multilingual-tiktoken"], "--no-builtin-corpus", "--corpus", corpus)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "pass --pat-str" in lines[0]
    # the file that lacks the pattern is named, not an option the user never passed
    assert lines[0].startswith(
        f"tokaudit: error: {Path(real_dirs['whisper-multilingual-tiktoken']) / 'multilingual.tiktoken'}: "
    )


# -- each verified error finding, exactly, with the real library's evidence (issue 21 §5) --------------


def _findings(command: str, *args: str) -> list[dict]:
    result = run_cli(command, *args, "--format", "json")
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)["findings"]


def test_gemma3_double_bos_is_a_warning(real_dirs: dict[str, Path]) -> None:
    """True, but no serving stack's chat endpoint is hit, so a warning. transformers 5.24.0 on these files:
    tokenizer(apply_chat_template(msgs, tokenize=False)) -> [2, 2, 105, 2364, ...] (two <bos>), while
    apply_chat_template(msgs, tokenize=True) -> [2, 105, 2364, 107] (it tokenizes without special tokens). The
    stacks: vLLM's ChatCompletionRequest.add_special_tokens defaults to False (vllm/entrypoints/openai/protocol.py);
    SGLang keeps add_special_tokens=False at its chat-template encode "to avoid double BOS" (serving_chat.py); TGI's
    ChatRequest::try_into_generate sets add_special_tokens: false (router/src/lib.rs); llama.cpp's common/chat.cpp
    strips a leading bos_token from the rendered text when the vocabulary adds BOS."""
    from tokenizers import Tokenizer

    found = [f for f in _findings("template", str(real_dirs["gemma3"])) if f["code"] == "TA803"]
    assert [(f["severity"], f["ids"], f["details"]["first_ids"], f["details"]["added_by"]) for f in found] == [
        ("warning", [[2, 2]], [2, 2, 105, 2364], "tokenizer.json post_processor")
    ]
    assert found[0]["details"]["stacks"] == [] and "no stack's chat endpoint is hit" in found[0]["message"]
    tok = Tokenizer.from_file(str(real_dirs["gemma3"] / "tokenizer.json"))
    prompt = "<bos><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n"
    assert tok.encode(prompt).ids[:4] == [2, 2, 105, 2364]
    assert tok.encode(prompt, add_special_tokens=False).ids[:4] == [2, 105, 2364, 107]


def test_gemma_4_gguf_never_stops_on_its_eos_alone(real_dirs: dict[str, Path]) -> None:
    """Gemma 4 ends turns with <turn|> (106), the one-sided marker form (<|turn> ... <turn|>); the vocab GGUF's only
    eos is <eos> (1). llama.cpp stops on 106 by its text (llama-vocab.cpp's EOG list names <turn|> for gemma4, checked
    id by id against llama-cpp-python in test_gguf_real.py); a runtime stopping on the eos id alone runs on."""
    found = [f for f in _findings("scan", str(real_dirs["gguf-gemma-4"])) if f["code"] == "TA207"]
    assert [
        (
            f["severity"],
            f["ids"],
            f["details"]["template_end_of_turn"],
            f["details"]["eos_id"],
            f["details"]["llamacpp_eog"],
            f["details"]["llamacpp_stops"],
        )
        for f in found
    ] == [("error", [[1, 1], [106, 106]], {"token": "<turn|>", "id": 106}, 1, [1, 50, 106], True)]
    assert found[0]["message"].startswith(
        "the chat template ends each turn with <turn|> (106), but ggml-vocab-gemma-4.gguf's eos id is 1 '<eos>': "
        "llama.cpp "
        "(and Ollama, LM Studio on current llama.cpp) stops on it (its text <turn|> makes it end-of-generation)"
    )


def test_qwen3_tojson_divergence_names_tgi_and_dynamo(real_dirs: dict[str, Path]) -> None:
    """True, and a warning: the tool description "Units are <celsius> ..." goes through tojson. TGI registers no tojson
    (router/src/infer/chat_template.rs), so MiniJinja 2.8's builtin writes the tools compact, escaped and with keys in
    order (no preserve_order); Dynamo registers its own escaping, compact one (tokcfg.rs). Only the JSON's spelling
    differs (the same values, the same text around them): other tokens than the model was trained on, named as such.
    smg and mistral.rs register json.dumps-like filters: not named."""
    found = [f for f in _findings("template", str(real_dirs["qwen3"])) if f["code"] == "TA802"]
    assert [
        (f["severity"], f["details"]["stacks"], f["details"]["causes"], f["details"]["json_spelling_only"])
        for f in found
    ] == [("warning", ["tgi"], ["tojson", "sorted_maps"], True), ("warning", ["dynamo"], ["tojson"], True)]
    tgi, dynamo = (f["details"] for f in found)
    assert (tgi["conversations"], tgi["position"], tgi["token_position"]) == (
        [
            "tools-offered",
            "tool-call",
            "tool-call-empty-content",
            "tool-call-multi-turn",
            "tool-call-with-content",
            "parallel-tool-calls",
            "tool-result-then-user",
        ],
        210,
        45,
    )
    assert dynamo["excerpts"]["stack"].endswith('<tools>\n{"type":"function","function":{"name":"get_weath…')
    assert "(291 vs 293 tokens)" in found[0]["message"]


def test_mistral_7b_space_loss_is_one_finding(real_dirs: dict[str, Path], corpus: Path) -> None:
    """True, and one cause: transformers 5.24.0's AutoTokenizer rebuilds this tokenizer.json as LlamaTokenizer
    (tokenizer_class) with a Metaspace(prepend_scheme=always, split=False) pre-tokenizer instead of the file's
    Prepend+Replace normalizer: "   Hello" -> [259, 22557] ('▁▁' '▁Hello', decoded "  Hello") where tokenizers
    on the file gives [2287, 22557]; "  leading" -> [28705, 5374] vs [259, 5374]. The encode difference and the
    lost space are one finding, the loss listed as its consequence."""
    found = _findings("compare", str(real_dirs["mistral-7b-json"]), "--no-builtin-corpus", "--corpus", str(corpus))
    errors = [f for f in found if f["severity"] == "error"]
    assert [(f["code"], f["details"]["backends"][0]) for f in errors] == [("TA601", "transformers-fast")]
    d = errors[0]["details"]
    ex = d["examples"][0]
    assert (ex["case"], ex["text"]) == (f"{corpus}:9", "  leading and trailing s…")
    sides = {d["examples_of"][0]: ex["a"]["ids"], d["examples_of"][1]: ex["b"]["ids"]}
    assert (sides["hf"], sides["transformers-fast"]) == ([259], [28705])  # '▁▁' vs '▁', then the same ids
    lost = d["consequences"]["roundtrip_failure"]
    assert (lost["backend"], lost["failures"], lost["examples"][0]["case"]) == ("transformers-fast", 1, f"{corpus}:9")
    assert not [f for f in found if f["code"] == "TA603" and f["details"].get("backend") == "transformers-fast"]


@pytest.mark.parametrize(
    ("name", "hf_ids", "sp_ids"),
    [
        ("sp-unigram-botchan", [4, 0, 11], [4, 0, 4]),
        ("sp-unigram-kyoto-ja", [7592, 6, 931], [7592, 6, 7838]),
        ("sp-bpe-botchan", [931, 0, 5], [931, 0, 931]),
    ],
)
def test_sentencepiece_combining_marks_mismatch_is_true(
    real_dirs: dict[str, Path], tmp_path: Path, name: str, hf_ids: list[int], sp_ids: list[int]
) -> None:
    """True: on "a" + U+0300 U+0301 U+0302, tokenizers' Precompiled normalizer (0.23.3) leaves the text as it is
    (and on "a" + U+0300 U+0301 drops the U+0301) where sentencepiece (0.2.x) composes "à" + U+0301 U+0302: the
    charsmap is matched shortest-prefix per grapheme instead of longest-prefix over the bytes (huggingface/tokenizers
    issues 2116 and 2334). It is not tokaudit's conversion: transformers 5.24.0's own converter for a bare
    SentencePiece model (SpmConverter.build_tokenizer_from_spm_proto) gives exactly the hf backend's ids."""
    from types import SimpleNamespace as NS

    from transformers.convert_slow_tokenizer import SpmConverter

    from tokaudit.backends.sentencepiece_backend import tokenizer_from_sentencepiece

    text = "e\u0301 a\u0300\u0301\u0302 n\u0303 Z\u0335\u0327\u0328\u0311\u0306 \u0301\u0301 leading"
    (tmp_path / "marks.txt").write_text(text + "\n", encoding="utf-8")
    found = _findings(
        "compare",
        str(real_dirs[name]),
        "--backends",
        "hf,sentencepiece",
        "--no-builtin-corpus",
        "--corpus",
        str(tmp_path / "marks.txt"),
    )
    errors = [f for f in found if f["severity"] == "error"]
    assert [(f["code"], f["details"]["backends"]) for f in errors] == [("TA601", ["hf", "sentencepiece"])]
    ex = errors[0]["details"]["examples"][0]
    assert (ex["case"], ex["a"]["ids"], ex["b"]["ids"]) == (f"{tmp_path / 'marks.txt'}:1", hf_ids, sp_ids)
    # transformers' real converter, fed the model tokaudit parsed (the proto fields it reads), encodes as hf does
    model = load_model(str(real_dirs[name]))
    sp = model.artifacts.sentencepiece
    types = {"NORMAL": 1, "UNKNOWN": 2, "CONTROL": 3, "USER_DEFINED": 4, "UNUSED": 5, "BYTE": 6}
    proto = NS(
        trainer_spec=NS(byte_fallback=sp.byte_fallback, unk_piece=sp.unk_piece, unk_id=sp.unk_id),
        normalizer_spec=NS(
            precompiled_charsmap=sp.precompiled_charsmap,
            add_dummy_prefix=sp.add_dummy_prefix,
            remove_extra_whitespaces=sp.remove_extra_whitespaces,
            escape_whitespaces=sp.escape_whitespaces,
        ),
        pieces=[NS(piece=p.piece, score=p.score, type=types[p.type.name]) for p in sp.pieces],
    )
    vocab = (
        [(p.piece, p.score) for p in sp.pieces]
        if sp.model_type == "unigram"
        else {p.piece: i for i, p in enumerate(sp.pieces)}
    )
    converted = SpmConverter.build_tokenizer_from_spm_proto(proto, vocab)
    ours, _ = tokenizer_from_sentencepiece(model)
    assert converted.encode(text, add_special_tokens=False).ids == ours.encode(text, add_special_tokens=False).ids


def test_truncated_gpt2_vocab_round_trips(real_dirs: dict[str, Path], tmp_path: Path) -> None:
    """The reported roundtrip-failure on a 1000-entry GPT-2-style vocabulary does not reproduce: GPT-2's own
    vocab.json cut to ids 0..999 with the 744 merges that stay inside it (its tokenizer_config still names
    <|endoftext|>, which the cut drops) compares with no error, hf and transformers' GPT2Tokenizer agreeing."""
    src = real_dirs["gpt2-vocab-merges"]
    vocab = {token: i for token, i in json.loads((src / "vocab.json").read_text(encoding="utf-8")).items() if i < 1000}
    lines = (src / "merges.txt").read_text(encoding="utf-8").splitlines()
    merges = [line for line in lines[1:] if line and all(p in vocab for p in (*line.split(" "), line.replace(" ", "")))]
    (tmp_path / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    (tmp_path / "merges.txt").write_text("\n".join([lines[0], *merges]) + "\n", encoding="utf-8")
    (tmp_path / "tokenizer_config.json").write_bytes((src / "tokenizer_config.json").read_bytes())
    assert len(merges) == 744
    result = run_cli("compare", str(tmp_path), "--format", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert [f for f in doc["findings"] if f["severity"] != "note"] == []
    assert {b["name"] for b in doc["backends"] if b["available"]} >= {"hf", "transformers-fast"}
