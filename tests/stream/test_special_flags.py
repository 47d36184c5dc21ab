"""skip_special_tokens drops what the tokenizer marks special, not every added token (issue 21 §2).

Kimi-K2.5's published tokenizer_config.json marks its tool-call markers (``<|tool_calls_section_begin|>``
163595 … ``<|tool_call_end|>`` 163599) and ``<think>``/``</think>`` ``special: false``. The fixture
fixtures/kimi-k2.5 marks them ``special: true``; ``kimi_real_flags`` copies it with the published flags.

Evidence from the real libraries (transformers 5.24.0, tokenizers 0.23.3), checked when this was written:
- tokenizers: ``Tokenizer.decode(ids, skip_special_tokens=True)`` drops an AddedToken added with
  ``special=True`` and keeps one added with ``special=False``
  (``test_tokenizers_skips_only_added_tokens_flagged_special`` runs it);
- transformers 5's TokenizersBackend ``_decode`` is ``self._tokenizer.decode(ids, skip_special_tokens=...)``:
  the same flag (``AutoTokenizer`` on a tokenizer.json whose non-special marker is listed in
  additional_special_tokens still keeps it);
- transformers' slow ``PreTrainedTokenizer.convert_ids_to_tokens`` (Kimi's remote TikTokenTokenizer, what
  vLLM and SGLang load) skips ``all_special_ids``: the named and additional special tokens, which for Kimi
  do not include the markers.
One real stack differs and is left to the loader table: transformers 5.24.0 *without* the remote code
converts the ranks with TikTokenConverter, which first adds every added_tokens_decoder entry as an extra
special token; the markers then show ``special=False`` in ``get_added_tokens_decoder()`` yet its live
``decode([163606], skip_special_tokens=True)`` is '' (a fresh ``Tokenizer.from_str`` of its own JSON keeps
``<think>``). vLLM and SGLang load Kimi with its remote code, so they keep the markers.
"""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import FIXTURES, run_cli, tree_snapshot
from tokaudit.backends.registry import load_backends
from tokaudit.model.load import load_model
from tokaudit.stream.readers import read_stream
from tokaudit.stream.replay import ReplayOptions, load_tokenizer, replay

KIMI = FIXTURES / "kimi-k2.5"
STREAMS = FIXTURES / "streams"
TEXT = json.loads((STREAMS / "manifest.json").read_text(encoding="utf-8"))["kimi-k2.5"]["text"]
#: The ids Kimi-K2.5's tokenizer_config.json marks special: false.
NOT_SPECIAL = {
    163595: "<|tool_calls_section_begin|>",
    163596: "<|tool_calls_section_end|>",
    163597: "<|tool_call_begin|>",
    163598: "<|tool_call_argument_begin|>",
    163599: "<|tool_call_end|>",
    163606: "<think>",
    163607: "</think>",
}
DETOKENIZERS = ("full", "offsets", "decodestream", "bytes")


@pytest.fixture(scope="module")
def kimi_real_flags(tmp_path_factory: pytest.TempPathFactory):
    d = tmp_path_factory.mktemp("kimi-real-flags") / "kimi-k2.5"
    shutil.copytree(KIMI, d)
    cfg = json.loads((d / "tokenizer_config.json").read_text(encoding="utf-8"))
    for key, content in NOT_SPECIAL.items():
        entry = cfg["added_tokens_decoder"][str(key)]
        assert entry["content"] == content
        entry["special"] = False
    (d / "tokenizer_config.json").write_text(json.dumps(cfg, indent=2), encoding="utf-8")
    return d


def test_tokenizers_skips_only_added_tokens_flagged_special() -> None:
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    tok = Tokenizer(models.BPE(vocab={"a": 0, "b": 1}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken("<S>", special=True, normalized=False)])
    tok.add_tokens([AddedToken("<|tool_call_begin|>", special=False, normalized=False)])
    ids = tok.encode("a<S>b<|tool_call_begin|>a").ids
    assert ids == [0, 2, 1, 3, 0]
    assert tok.decode(ids, skip_special_tokens=True) == "ab<|tool_call_begin|>a"


def test_tool_call_stream_keeps_non_special_markers_in_every_detokenizer(kimi_real_flags) -> None:
    model = load_model(str(kimi_real_flags))
    r = replay(
        model,
        read_stream(str(STREAMS / "kimi-toolcall.json")),
        ReplayOptions(list(DETOKENIZERS)),
        load_tokenizer(model),
    )
    assert r.findings == []  # no stream-mismatch between bytes and the others
    assert r.full == TEXT
    assert {d.name: d.text for d in r.result.detokenizers} == dict.fromkeys(DETOKENIZERS, TEXT)
    assert [c.to_json() for c in r.result.tool_calls] == [
        {"format": "kimi", "closed": True, "valid": True, "error": None}
    ]


def test_replay_cli_default_keeps_the_markers_and_exits_0(kimi_real_flags) -> None:
    before = tree_snapshot(kimi_real_flags)
    out = run_cli("replay", kimi_real_flags, STREAMS / "kimi-toolcall.json", "--format", "json")
    assert out.exit_code == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["text"] == TEXT
    assert doc["stream"]["skip_special_tokens"] is True
    assert [f["name"] for f in doc["findings"] if f["details"].get("detokenizer") != "naive"] == []
    assert tree_snapshot(kimi_real_flags) == before


@pytest.mark.parametrize("backend", ["hf", "tiktoken", "reference", "strict"])
def test_decode_skips_only_flagged_specials_in_every_backend(kimi_real_flags, backend) -> None:
    ids = [163584, 163595, 163597, 163606, 163607, 163599, 163596, 163586]  # [BOS] markers <|im_end|>
    out = run_cli("decode", kimi_real_flags, ",".join(map(str, ids)), "--backend", backend, "--format", "json")
    assert out.exit_code == 0, out.stderr
    result = json.loads(out.stdout)
    markers = (
        "<|tool_calls_section_begin|><|tool_call_begin|><think></think><|tool_call_end|><|tool_calls_section_end|>"
    )
    assert result["text"] == markers
    assert [(t["id"], t["special"], t["skipped"]) for t in result["tokens"]] == [
        (163584, True, True),
        *((i, False, False) for i in ids[1:-1]),
        (163586, True, True),
    ]
    kept = json.loads(
        run_cli(
            "decode",
            kimi_real_flags,
            ",".join(map(str, ids)),
            "--backend",
            backend,
            "--keep-special-tokens",
            "--format",
            "json",
        ).stdout
    )
    assert kept["text"] == "[BOS]" + markers + "<|im_end|>"


def test_backends_agree_on_what_is_skipped(kimi_real_flags) -> None:
    model = load_model(str(kimi_real_flags))
    loaded = {lb.name: lb for lb in load_backends(model, ["hf", "tiktoken", "reference"])}
    hf, tk, ref = (loaded[n].backend for n in ("hf", "tiktoken", "reference"))
    flagged = {i for i, t in hf.tokenizer.get_added_tokens_decoder().items() if t.special}
    assert flagged == set(tk.special_ids) == set(ref.special_ids)
    assert flagged.isdisjoint(NOT_SPECIAL) and {163584, 163585, 163586, 163838, 163839} <= flagged
    assert len(flagged) == 23 - len(NOT_SPECIAL)


def test_the_fixture_as_shipped_still_skips_its_special_markers() -> None:
    out = run_cli("decode", KIMI, "163595,163597", "--format", "json")
    assert out.exit_code == 0
    assert json.loads(out.stdout)["text"] == ""


def test_explain_reports_the_markers_flag_as_the_files_set_it(kimi_real_flags) -> None:
    out = run_cli("explain", kimi_real_flags, "163606", "163586", "--format", "json")
    assert out.exit_code == 0, out.stderr
    rows = {r["id"]: r for r in json.loads(out.stdout)["ids"]}
    assert (rows[163606]["text"], rows[163606]["special"]) == ("<think>", False)
    assert rows[163606]["sources"][0]["rule"] == "added_tokens_decoder (not special)"
    assert (rows[163586]["text"], rows[163586]["special"]) == ("<|im_end|>", True)
