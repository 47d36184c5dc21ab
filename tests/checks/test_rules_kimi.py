"""The full default rule set on the Kimi-K2.5-shaped fixture: exact ids, sets and the loader table."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli

KIMI = FIXTURES / "kimi-k2.5"


@pytest.fixture(scope="module")
def kimi() -> dict:
    result = run_cli("scan", KIMI, "--format", "json")
    assert result.exit_code == 1, result.stderr
    return json.loads(result.stdout)


def by_code(doc: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for f in doc["findings"]:
        out.setdefault(f["code"], []).append(f)
    return out


def test_kimi_finds_exactly_these_rules(kimi: dict) -> None:
    codes = {code: [f["name"] for f in fs] for code, fs in by_code(kimi).items()}
    assert codes == {
        "TA101": ["vocab-gap"],
        "TA103": ["id-drift"],
        "TA105": ["placeholder-encodable"],
        "TA202": ["eos-mismatch"],
        "TA301": ["slow-fallback-risk"],
        "TA302": ["remote-code-required"],
        "TA401": ["partial-utf8-token"],
        # the template writes tools through tojson: TGI's MiniJinja 2.8 tojson escapes "<" and orders the keys,
        # Dynamo's escapes "<" (smg registers its own, json.dumps-compatible tojson: not named); warnings: only the
        # JSON's spelling
        "TA802": ["template-engine-divergence", "template-engine-divergence"],
        # the template prints tool-call arguments as they come: Python's repr of the dict the stacks parse them into
        "TA810": ["python-repr-leak"],
        "TA820": ["tool-call-roundtrip"],
        "TA825": ["reasoning-prefill"],
    }
    assert [f["details"]["stacks"] for f in by_code(kimi)["TA802"]] == [["tgi"], ["dynamo"]]
    assert [(f["severity"], f["details"]["json_spelling_only"]) for f in by_code(kimi)["TA802"]] == [
        ("warning", True)
    ] * 2
    assert kimi["summary"] == {"error": 1, "warning": 8, "note": 3}
    assert [r["code"] for r in kimi["rules"]] == [
        "TA101",
        "TA102",
        "TA103",
        "TA104",
        "TA105",
        "TA201",
        "TA202",
        "TA203",
        "TA204",
        "TA205",
        "TA206",
        "TA207",
        "TA208",
        "TA209",
        "TA220",
        "TA301",
        "TA302",
        "TA303",
        "TA304",
        "TA305",
        "TA307",
        "TA308",
        "TA309",
        "TA310",
        "TA401",
        "TA801",
        "TA802",
        "TA803",
        "TA804",
        "TA805",
        "TA806",
        "TA807",
        "TA808",
        "TA810",
        "TA811",
        "TA812",
        "TA813",
        "TA820",
        "TA821",
        "TA822",
        "TA823",
        "TA824",
        "TA825",
        "TA850",
        "TA851",
        "TA852",
        "TA853",
    ]


def test_kimi_eos_mismatch_names_every_set_and_the_template_terminator(kimi: dict) -> None:
    (eos,) = by_code(kimi)["TA202"]
    assert eos["severity"] == "warning"  # generation_config.json does list <|im_end|>: some stacks stop
    assert eos["location"] == {"file": "config.json", "line": 13, "column": 5, "key": "text_config.eos_token_id"}
    assert eos["details"]["sets"] == [
        {"source": "config.json text_config.eos_token_id", "ids": [163585], "tokens": ["[EOS]"]},
        {"source": "generation_config.json eos_token_id", "ids": [163586], "tokens": ["<|im_end|>"]},
        {"source": "tokenizer_config.json eos_token", "ids": [163585], "tokens": ["[EOS]"]},
    ]
    template = (KIMI / "chat_template.jinja").read_text(encoding="utf-8").splitlines()
    first_line = next(n for n, line in enumerate(template, 1) if "<|im_end|>" in line)
    assert eos["details"]["template_terminator"] == {
        "token": "<|im_end|>",
        "id": 163586,
        "location": {"file": "chat_template.jinja", "line": first_line},
    }
    assert eos["ids"] == [[163585, 163586]]
    assert "config.json text_config.eos_token_id 163585 [EOS]" in eos["message"]
    assert "generation_config.json eos_token_id 163586 <|im_end|>" in eos["message"]
    assert "smg stops on the union of config.json and generation_config.json" in eos["message"]


def test_kimi_id_drift_under_transformers_v5_conversion(kimi: dict) -> None:
    (drift,) = by_code(kimi)["TA103"]
    assert drift["ids"] == [[163590, 163591], [163593, 163599], [163601, 163607], [163838, 163839]]
    assert drift["count"] == 18
    moved = {m["token"]: (m["declared"], m["loaded"]) for m in drift["details"]["moved"]}
    assert moved["<|start_header_id|>"] == (163590, 163589)
    assert moved["</think>"] == (163607, 163604)
    assert moved["[UNK]"] == (163838, 163605) and moved["[PAD]"] == (163839, 163606)
    named_shifts = {d - n for t, (d, n) in moved.items() if t not in ("[UNK]", "[PAD]")}
    assert named_shifts == {1, 2, 3}
    assert drift["location"] == {
        "file": "tokenizer_config.json",
        "line": 43,
        "column": 5,
        "key": "added_tokens_decoder.163590",
    }


def test_kimi_placeholders_are_the_233_gap_ids(kimi: dict) -> None:
    (ph,) = by_code(kimi)["TA105"]
    (gap,) = by_code(kimi)["TA101"]
    assert ph["ids"] == gap["ids"] and ph["count"] == 233
    assert ph["details"] == {"by_profile": {"remote-code": 233}, "example": "<|reserved_token_163589|>"}
    assert ph["location"] == {"file": "tokenization_kimi.py", "line": 26, "key": "num_reserved_special_tokens"}
    assert "smg and Dynamo" in ph["message"]


def test_kimi_partial_utf8_count_matches_an_independent_count(kimi: dict) -> None:
    expected = []
    for line in (KIMI / "tiktoken.model").read_bytes().splitlines():
        token_b64, rank = line.split()
        try:
            base64.b64decode(token_b64).decode("utf-8")
        except UnicodeDecodeError:
            expected.append(int(rank))
    (partial,) = by_code(kimi)["TA401"]
    assert partial["severity"] == "note"
    assert partial["count"] == len(expected) == 4832
    assert partial["details"]["examples"][0] == {"id": expected[0], "bytes": f"<{expected[0]:02X}>"}


def test_kimi_loader_table(kimi: dict) -> None:
    rows = {r["loader"]: r for r in kimi["loaders"]}
    assert list(rows) == ["files-only", "smg", "vLLM", "Dynamo", "transformers"]
    assert (rows["files-only"]["sees_gap"], rows["files-only"]["unmapped"]) == (True, 233)
    assert rows["files-only"]["unmapped_ids"] == [
        [163589, 163589],
        [163592, 163592],
        [163600, 163600],
        [163608, 163837],
    ]
    assert rows["smg"]["files"] == ["tiktoken.model", "tokenizer_config.json"]
    assert "Kimi detected (tokenizer_config.json names tokenization_kimi.TikTokenTokenizer)" in rows["smg"]["rule"]
    assert rows["Dynamo"]["rule"].startswith("tiktoken.model; model_type kimi_k25")
    assert rows["transformers"]["files"] == ["tokenization_kimi.py", "tiktoken.model", "tokenizer_config.json"]
    for name in ("smg", "vLLM", "Dynamo", "transformers"):
        assert rows[name]["sees_gap"] is False and rows[name]["unmapped"] == 0, name


def test_kimi_rich_report_shows_the_loader_table() -> None:
    out = run_cli("scan", KIMI, "--select", "TA101").stdout
    assert "  loaders" in out
    line = next(x for x in out.splitlines() if x.strip().startswith("files-only"))
    assert "233 unmapped" in line and "tiktoken.model, tokenizer_config.json" in line
    assert next(x for x in out.splitlines() if x.strip().startswith("smg ")).split()[1] == "none"


def test_deep_unreachable_token_on_kimi_with_a_clean_exit(tmp_path: Path) -> None:
    result = run_cli("scan", KIMI, "--deep", "--select", "TA402", "--format", "json")
    (found,) = json.loads(result.stdout)["findings"]
    assert found["code"] == "TA402" and found["severity"] == "warning"
    assert found["details"]["categories"] == {
        "unreachable_multi_token": found["count"],
        "unreachable_single_token": 0,
        "undecodable_skipped": 4832,
    }
    assert found["details"]["checked"] == 163584 - 4832
    assert found["details"]["examples"][0] == {"id": 306, "token": " 1", "encodes_to": [32, 49]}
    assert result.exit_code == 0  # warnings do not fail --fail-on error


def test_kimi_parser_round_trip_verdict_and_prefill(kimi: dict) -> None:
    """TA820's one line: each stack's parsers that recover the template's call; TA825: the prompt opens <think>."""
    found = by_code(kimi)
    assert [f["message"] for f in found["TA820"]] == [
        "tool calls of chat_template.jinja recovered by vllm: kimi_k2 (with reasoning: kimi_k2+deepseek_r1, "
        "kimi_k2+qwen3, "
        "kimi_k2+glm45, kimi_k2+kimi_k2, ...); sglang: kimi_k2 (with reasoning: kimi_k2+deepseek-r1, "
        "kimi_k2+deepseek-v3, "
        "kimi_k2+qwen3, kimi_k2+glm45, ...); smg: kimik2 (with reasoning: kimik2+deepseek_r1, kimik2+qwen3, "
        "kimik2+qwen3_thinking, "
        "kimik2+glm45, ...); tgi: its own JSON grammar, not the template's format; llama.cpp: kimi-k2 (with reasoning: "
        "kimi-k2+deepseek); dynamo: kimi_k2"
    ]
    assert [(f["severity"], f["message"], f["details"]["toggle"]) for f in found["TA825"]] == [
        (
            "note",
            "the generation prompt of chat_template.jinja opens reasoning "
            "('<|im_assistant|>assistant<|im_middle|><think>'): output "
            "cut by max_tokens is reasoning, not content; thinking=false turns it off",
            "thinking=false",
        )
    ]
