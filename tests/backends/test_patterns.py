"""Pre-tokenizer patterns: found wherever remote code puts them (file:line), never borrowed across a
file that sets one, recognised from tiktoken's registry for bare rank files, given with --pat-str on
the commands that encode, and checked across regex engines (TA305)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
import tiktoken

from tests.conftest import FIXTURES, run_cli
from tokaudit.artifacts.pattern import published_encodings, search_pattern
from tokaudit.artifacts.remote_code import parse_remote_code
from tokaudit.backends.pattern import divergences, translate_for_onig
from tokaudit.model.load import load_model

PATTERNS = FIXTURES / "patterns"
SAME_PATTERN = json.loads((FIXTURES / "compare" / "same" / "tokenizer.json").read_text())["pre_tokenizer"][
    "pretokenizers"
][0]["pattern"]["Regex"]
#: tiktoken's own cl100k_base pattern (tiktoken_ext/openai_public.py), possessive quantifiers included.
CL100K = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]"""
    r"""|\s+(?!\S)|\s"""
)


def _scan(target: Path, *args: str) -> dict:
    result = run_cli("scan", target, "--format", "json", *args)
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize(
    ("fixture", "file", "line", "key"),
    [
        ("init-local", "tokenization_chatglm.py", 11, "pat_str"),  # GLM-4: a local of __init__, passed as pat_str=
        ("self-attr", "tokenization_selfattr.py", 10, "self.pat_str"),
        ("positional", "tokenization_positional.py", 8, "SPLIT_REGEX"),  # Encoding(name, SPLIT_REGEX, ...)
        ("possessive", "tokenization_possessive.py", 8, "PAT_STR"),  # Qwen: a module constant by name
    ],
)
def test_remote_code_pattern_is_found_with_its_line(fixture: str, file: str, line: int, key: str) -> None:
    rc = parse_remote_code(PATTERNS / fixture / file)
    assert rc.pat_str_source is not None
    assert (rc.pat_str_source.file, rc.pat_str_source.line, rc.pat_str_source.key) == (file, line, key)
    expected = SAME_PATTERN.replace(r"\p{N}{1,3}", r"\p{N}{1,3}+") if fixture == "possessive" else SAME_PATTERN
    assert rc.pat_str == expected and rc.pat_str_unreadable is None


def test_qwen_and_kimi_patterns_point_at_their_definitions() -> None:
    qwen = parse_remote_code(FIXTURES / "qwen-remote" / "tokenization_qwen.py")
    kimi = parse_remote_code(FIXTURES / "kimi-k2.5" / "tokenization_kimi.py")
    assert str(qwen.pat_str_source) == "tokenization_qwen.py:21" and qwen.pat_str_source.key == "PAT_STR"
    assert str(kimi.pat_str_source) == "tokenization_kimi.py:28" and kimi.pat_str_source.key == "pat_str"


def test_unreadable_pattern_is_not_borrowed_from_tokenizer_json() -> None:
    target = PATTERNS / "unreadable"
    found = search_pattern(load_model(str(target)).artifacts)
    assert found.pattern is None
    assert found.blocked == (
        "tokenization_unreadable.py:14 sets the pattern in a way tokaudit cannot read statically "
        "(the value is a call to self._load_pattern) (tokenizer.json's may differ: not borrowed); "
        "pass --pat-str"
    )
    doc = _scan(target, "--select", "TA304")
    (finding,) = doc["findings"]
    assert finding["severity"] == "warning"
    assert finding["location"] == {"file": "tokenization_unreadable.py", "line": 14, "key": "Encoding(pat_str=)"}
    compare = run_cli(
        "compare",
        target,
        "--backends",
        "tiktoken,hf,strict",
        "--format",
        "json",
        "--quiet",
        "--no-builtin-corpus",
        "--corpus",
        str(FIXTURES / "compare" / "same" / "config.json"),
    )
    rows = {b["name"]: b for b in json.loads(compare.stdout)["backends"]}
    assert rows["tiktoken"]["available"] is False
    assert rows["tiktoken"]["reason"] == found.blocked
    # --pat-str is the way out, and then tiktoken runs
    given = run_cli(
        "encode", target, "hello 123", "--backend", "tiktoken", "--pat-str", SAME_PATTERN, "--format", "json"
    )
    assert given.exit_code == 0, given.stderr
    assert json.loads(given.stdout)["backend_detail"] == "pattern from --pat-str"


def test_bare_rank_file_decodes_and_replays_without_a_pattern(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(FIXTURES / "tiny-tiktoken" / "tiktoken.model", bare / "tiktoken.model")
    ranks = load_model(str(bare)).artifacts.tiktoken.by_id
    ids = [104, 101, 300]
    expected = b"".join(ranks[i] for i in ids).decode("utf-8")
    dec = run_cli("decode", bare, *map(str, ids), "--format", "json", "--quiet")
    assert dec.exit_code == 0, dec.stderr
    doc = json.loads(dec.stdout)
    assert doc["text"] == expected
    assert doc["backend_detail"] == "decode only: no pre-tokenizer pattern found (pattern-unknown); pass --pat-str"
    stream = tmp_path / "ids.json"
    stream.write_text(json.dumps(ids))
    rep = run_cli("replay", bare, stream, "--format", "json", "--quiet")
    assert rep.exit_code == 0, rep.stderr
    assert json.loads(rep.stdout)["text"] == expected


def test_encode_of_a_bare_rank_file_asks_for_pat_str_and_accepts_it(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(FIXTURES / "tiny-tiktoken" / "tiktoken.model", bare / "tiktoken.model")
    refused = run_cli("encode", bare, "hello 1314151")
    assert refused.exit_code == 2 and refused.stdout == ""
    # one line naming the rank file and the option that helps (the middle is the codec's wording)
    assert refused.stderr.count("\n") == 1 and refused.stderr.startswith(f"tokaudit: error: {bare}/tiktoken.model: ")
    assert refused.stderr.endswith(": no pre-tokenizer pattern found (pattern-unknown); pass --pat-str\n")
    given = run_cli("encode", bare, "hello 1314151", "--pat-str", SAME_PATTERN, "--format", "json")
    assert given.exit_code == 0, given.stderr
    ranks = {t: i for i, t in load_model(str(bare)).artifacts.tiktoken.by_id.items()}
    own = tiktoken.Encoding("t", pat_str=SAME_PATTERN, mergeable_ranks=ranks, special_tokens={})
    assert json.loads(given.stdout)["ids"] == own.encode_ordinary("hello 1314151")


def test_deep_rule_without_an_encoder_says_it_did_not_run(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(FIXTURES / "tiny-tiktoken" / "tiktoken.model", bare / "tiktoken.model")
    doc = _scan(bare, "--deep", "--select", "TA402")
    (finding,) = doc["findings"]
    assert finding["severity"] == "note" and finding["details"]["ran"] is False
    assert finding["details"]["reason"] == "tiktoken: no pre-tokenizer pattern found (pattern-unknown); pass --pat-str"


def test_registry_hashes_and_patterns_come_from_tiktoken_itself() -> None:
    known = {e.name: e for e in published_encodings().values()}
    assert {"r50k_base", "p50k_base", "cl100k_base", "o200k_base"} <= set(known)
    assert known["cl100k_base"].sha256 == "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
    assert known["cl100k_base"].pattern == CL100K
    assert known["cl100k_base"].special_tokens["<|endoftext|>"] == 100257
    assert known["o200k_base"].pattern.startswith(r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*")


@pytest.mark.real
def test_published_cl100k_rank_file_gets_tiktokens_pattern(real_dirs: dict[str, Path]) -> None:
    path = real_dirs["cl100k-tiktoken"]
    found = search_pattern(load_model(str(path)).artifacts).pattern
    assert found is not None and found.regex == CL100K
    assert found.source == "tiktoken's cl100k_base (cl100k_base.tiktoken has its published sha256)"
    enc = run_cli("encode", path, "hello 1314151 world", "--format", "json")
    assert enc.exit_code == 0, enc.stderr
    ranks = {t: i for i, t in load_model(str(path)).artifacts.tiktoken.by_id.items()}
    ref = tiktoken.Encoding("cl100k", pat_str=CL100K, mergeable_ranks=ranks, special_tokens={})
    assert json.loads(enc.stdout)["ids"] == ref.encode_ordinary("hello 1314151 world")


def test_cl100k_possessive_interval_reads_differently_in_oniguruma() -> None:
    found, rejected, complete = divergences(CL100K)
    assert rejected == {} and complete
    first = found[0]
    assert first.text == "1314151"
    assert first.pieces == {"fancy-regex": ["131", "415", "1"], "oniguruma": ["1314151"], "regex": ["131", "415", "1"]}
    assert translate_for_onig(CL100K) == (
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|(?>\p{N}{1,3})| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++\z"""
        r"""|\s*[\r\n]|\s+(?!\S)|\s"""
    )
    after, _, _ = divergences(CL100K, ("fancy-regex", "oniguruma"), onig_regex=translate_for_onig(CL100K))
    assert after == []


@pytest.mark.parametrize(
    "pattern",
    [
        SAME_PATTERN,
        r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"""
        r"""|\s+(?!\S)|\s+""",
    ],
)
def test_portable_patterns_split_alike_in_every_engine(pattern: str) -> None:
    found, rejected, complete = divergences(pattern)  # Kimi's (set intersections) and Llama 3's
    assert (found, rejected, complete) == ([], {}, True)


def test_a_regex_timeout_makes_the_probe_unknown_not_a_divergence(monkeypatch: pytest.MonkeyPatch) -> None:
    """Python regex's per-call timeout is wall time: a loaded machine reaching it (scan --jobs 3 under load did) must
    not read as the engines splitting differently, a TA305 warning that came and went with the load."""
    import tokaudit.backends.pattern as pattern_module

    monkeypatch.setattr(pattern_module, "REGEX_CALL_SECONDS", 1e-9)  # the real engine times out on the first probe
    assert divergences(SAME_PATTERN) == ([], {}, False)
    assert divergences(CL100K) == ([], {}, False)


def test_the_probe_budget_is_cpu_time_of_this_thread() -> None:
    assert divergences(SAME_PATTERN, budget_seconds=0.0) == ([], {}, False)
    started = time.thread_time()
    time.sleep(0.3)  # waiting (for the GIL, for a loaded CPU) spends no budget
    assert time.thread_time() - started < 0.1
    assert divergences(SAME_PATTERN, budget_seconds=0.5) == ([], {}, True)


def test_ta305_on_a_shipped_possessive_pattern_names_the_input_and_splits() -> None:
    doc = _scan(PATTERNS / "possessive", "--select", "TA305")
    (finding,) = doc["findings"]
    assert finding["code"] == "TA305" and finding["name"] == "pattern-portability" and finding["severity"] == "warning"
    assert finding["location"] == {"file": "tokenization_possessive.py", "line": 8, "key": "PAT_STR"}
    assert finding["details"]["example"] == {
        "text": "4151",
        "pieces": {"fancy-regex": ["415", "1"], "oniguruma": ["4151"], "regex": ["415", "1"]},
    }
    assert finding["details"]["translation"] is not None


@pytest.mark.parametrize("fixture", ["kimi-k2.5", "qwen-remote", "mistral-tekken", "clean-bpe", "patterns/init-local"])
def test_ta305_is_quiet_on_portable_patterns(fixture: str) -> None:
    assert _scan(FIXTURES / fixture, "--select", "TA305")["findings"] == []


def test_hf_backend_translates_the_possessive_pattern_so_digits_split_as_tiktoken() -> None:
    target = PATTERNS / "possessive"
    text = "call 1314151 or 12345678 now"
    r = run_cli("encode", target, text, "--backend", "tiktoken", "--format", "json", "--quiet")
    assert r.exit_code == 0, r.stderr
    ids = {"tiktoken": json.loads(r.stdout)["ids"]}
    from tokaudit.backends.hf_backend import tokenizer_from_ranks
    from tokaudit.backends.pattern import find_pattern
    from tokaudit.backends.vocab import byte_vocab

    model = load_model(str(target))  # the hf backend a rank-file-only target gets: rebuilt from the ranks
    rebuilt = tokenizer_from_ranks(byte_vocab(model), find_pattern(model))
    assert rebuilt.encode(text, add_special_tokens=False).ids == ids["tiktoken"]


def test_scan_deep_takes_pat_str_for_a_bare_rank_file(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(FIXTURES / "tiny-tiktoken" / "tiktoken.model", bare / "tiktoken.model")
    doc = _scan(bare, "--deep", "--select", "TA402,TA304", "--pat-str", SAME_PATTERN)
    codes = {f["code"]: f for f in doc["findings"]}
    assert codes["TA304"]["severity"] == "warning"  # the model still declares no pattern
    # the same ranks and pattern as tiny-tiktoken (whose remote code declares it): the same 18 unreachable tokens
    assert codes["TA402"]["details"]["encoder"] == "tiktoken" and codes["TA402"]["count"] == 18
    assert (
        codes["TA402"]["ids"] == _scan(FIXTURES / "tiny-tiktoken", "--deep", "--select", "TA402")["findings"][0]["ids"]
    )


def test_fuzz_of_a_bare_rank_file_needs_no_pattern(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(FIXTURES / "tiny-tiktoken" / "tiktoken.model", bare / "tiktoken.model")
    r = run_cli("fuzz", bare, "--backends", "tiktoken,hf,strict", "--iterations", "100", "--format", "json", "--quiet")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [(b["name"], b["available"]) for b in doc["backends"]] == [
        ("tiktoken", True),
        ("hf", True),
        ("strict", True),
    ]
    assert [f["severity"] for f in doc["findings"] if f["severity"] == "error"] == []


def test_hf_backend_refuses_a_pattern_it_cannot_translate(tmp_path: Path) -> None:
    # POSIX [[:alpha:]] is ASCII in fancy-regex and Unicode in Oniguruma: no rewrite makes them agree
    target = tmp_path / "posix"
    target.mkdir()
    shutil.copy(FIXTURES / "tiny-tiktoken" / "tiktoken.model", target / "tiktoken.model")
    (target / "tokenization_posix.py").write_text('import tiktoken\n\npat_str = r"[[:alpha:]]+|\\S|\\s"\n')
    from tokaudit.backends.registry import load_backends

    tiktoken_row, hf_row = load_backends(load_model(str(target)), ["tiktoken", "hf"])
    assert tiktoken_row.available and not hf_row.available
    assert hf_row.unavailable == (
        "the pattern splits 'e\u0301té' differently in Oniguruma (['e', '\u0301', 'té']) than in tiktoken's "
        "fancy-regex (['e', '\u0301', 't', 'é']), even translated (pattern-portability)"
    )
