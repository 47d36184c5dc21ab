"""Tekken id spaces as mistral-common builds them: the special block of files with and without a
``special_tokens`` list, checked end to end (scan, replay, decode) and against mistral-common itself."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli
from tokaudit.artifacts.tekken import parse_tekken

V7 = FIXTURES / "mistral-tekken" / "tekken.json"


def _v3_copy(tmp_path: Path, version: str = "v3") -> Path:
    """The committed v7 fixture as a v3 file: no special_tokens list (Mistral NeMo's tekken_240718 shape)."""
    data = json.loads(V7.read_text())
    del data["special_tokens"]
    data["config"]["version"] = version
    out = tmp_path / "model" / "tekken.json"
    out.parent.mkdir()
    out.write_text(json.dumps(data))
    return out


def _real_v3() -> Path:
    mc = pytest.importorskip("mistral_common")
    path = Path(os.path.dirname(mc.__file__)) / "data" / "tekken_240718.json"
    if not path.is_file():
        pytest.skip("this mistral-common wheel ships no tekken_240718.json")
    return path


def test_v3_without_special_list_gets_mistral_commons_block(tmp_path: Path) -> None:
    tk = parse_tekken(_v3_copy(tmp_path))
    contents = [t.content for t in tk.specials]
    assert contents[:4] == ["<unk>", "<s>", "</s>", "[INST]"]
    assert contents[19] == "[TOOL_CONTENT]" and contents[20] == "<SPECIAL_20>" and contents[-1] == "<SPECIAL_99>"
    assert [t.id for t in tk.specials] == list(range(100)) and all(t.special for t in tk.specials)
    assert tk.version == "v3"
    assert tk.special_rule == (
        "no special_tokens list, version v3: mistral-common's deprecated list (20) + fillers <SPECIAL_20>..<SPECIAL_99>"
    )


def test_v7_list_is_kept_and_newer_versions_without_a_list_get_no_block(tmp_path: Path) -> None:
    tk = parse_tekken(V7)
    assert tk.special_rule == "special_tokens list (100)" and len(tk.specials) == 100
    assert tk.specials[2].content == "</s>" and tk.specials[2].source.key == "special_tokens[2]"
    newer = parse_tekken(_v3_copy(tmp_path, "v11"))
    assert newer.specials == () and "refuses version v11" in newer.special_rule


def test_scan_v3_has_no_vocab_gap_and_maps_the_whole_range(tmp_path: Path) -> None:
    target = _v3_copy(tmp_path).parent
    result = run_cli("scan", target, "--format", "json", "--select", "TA1")
    doc = json.loads(result.stdout)
    assert [f["code"] for f in doc["findings"] if f["code"] == "TA101"] == []
    assert (doc["vocab"]["declared_size"], doc["vocab"]["mapped"], doc["vocab"]["unmapped"]) == (700, 700, 0)


def test_scan_v11_without_list_reports_the_unfilled_block(tmp_path: Path) -> None:
    target = _v3_copy(tmp_path, "v11").parent
    doc = json.loads(run_cli("scan", target, "--format", "json", "--select", "TA101").stdout)
    (gap,) = doc["findings"]
    assert gap["ids"] == [[0, 99]] and gap["count"] == 100


def test_replay_of_eos_on_v3_is_clean(tmp_path: Path) -> None:
    target = _v3_copy(tmp_path).parent
    stream = tmp_path / "ids.json"
    stream.write_text("[1, 160, 161, 2]")
    result = run_cli("replay", target, stream, "--format", "json", "--quiet")
    doc = json.loads(result.stdout)
    assert result.exit_code == 0, result.stderr
    assert [f["code"] for f in doc["findings"] if f["severity"] == "error"] == []
    assert "TA501" not in {f["code"] for f in doc["findings"]}


def test_decode_names_the_special_block(tmp_path: Path) -> None:
    target = _v3_copy(tmp_path).parent
    result = run_cli("decode", target, "1", "2", "3", "99", "--format", "json", "--quiet")
    doc = json.loads(result.stdout)
    assert result.exit_code == 0, result.stderr
    assert [t["text"] for t in doc["tokens"]] == ["<s>", "</s>", "[INST]", "<SPECIAL_99>"]
    assert [t["special"] for t in doc["tokens"]] == [True, True, True, True]


def test_real_nemo_tekken_matches_mistral_common() -> None:
    path = _real_v3()
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    theirs = Tekkenizer.from_file(str(path))
    tk = parse_tekken(path)
    assert {t.id: t.content for t in tk.specials} == {
        i: theirs.id_to_piece(i) for i in range(theirs.num_special_tokens)
    }
    assert len(tk.specials) == 1000 and tk.default_vocab_size == theirs.n_words == 131072
    assert min(tk.by_id) == 1000 and max(tk.by_id) == 131071


def test_real_nemo_tekken_scans_clean_and_replays_like_mistral_common(tmp_path: Path) -> None:
    path = _real_v3()
    from mistral_common.tokens.tokenizers.tekken import SpecialTokenPolicy, Tekkenizer

    target = tmp_path / "nemo"
    target.mkdir()
    (target / "tekken.json").write_bytes(path.read_bytes())
    doc = json.loads(run_cli("scan", target, "--format", "json").stdout)
    assert [f["code"] for f in doc["findings"] if f["severity"] == "error"] == []
    assert (doc["vocab"]["mapped"], doc["vocab"]["unmapped"]) == (131072, 0)

    theirs = Tekkenizer.from_file(str(path))
    ids = [theirs.bos_id, *theirs.encode("Héllo wörld, 你好 🙂", bos=False, eos=False), theirs.eos_id]
    stream = tmp_path / "ids.json"
    stream.write_text(json.dumps(ids))
    result = run_cli("replay", target, stream, "--format", "json", "--quiet")
    replay = json.loads(result.stdout)
    assert result.exit_code == 0, result.stderr
    assert "TA501" not in {f["code"] for f in replay["findings"]}
    assert (
        replay["text"] == theirs.decode(ids, special_token_policy=SpecialTokenPolicy.IGNORE) == "Héllo wörld, 你好 🙂"
    )


def test_v7_fixture_with_a_special_list_matches_mistral_common() -> None:
    pytest.importorskip("mistral_common")
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    theirs = Tekkenizer.from_file(str(V7))
    tk = parse_tekken(V7)
    assert {t.id: t.content for t in tk.specials} == {
        i: theirs.id_to_piece(i) for i in range(theirs.num_special_tokens)
    }
    assert (theirs.bos_id, theirs.eos_id) == (1, 2) and tk.default_vocab_size == theirs.n_words == 700
