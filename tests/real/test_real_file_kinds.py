"""Real files that got false errors because tokaudit read them by name or missed a file (issue 31 §1, §2, §4, §5):
Whisper's added_tokens.json, tiktoken's registry specials for a bare published rank file, rank files and
tokenizer.json files under other names, and the words TA301/TA304 used beside them. Each test runs tokaudit on
the real file and checks the real library's own answer."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.real import realkit

pytestmark = pytest.mark.real


def _json(command: str, *args: str) -> tuple[int, dict]:
    result = run_cli(command, *args, "--format", "json")
    assert result.exit_code in (0, 1), result.stderr
    return result.exit_code, json.loads(result.stdout)


def _codes(doc: dict) -> set[str]:
    return {f["code"] for f in doc["findings"]}


# -- §1 added_tokens.json ------------------------------------------------------------------------------------


def test_whisper_added_tokens_json_defines_endoftext(real_dirs: dict[str, Path], tmp_path: Path) -> None:
    """Whisper's HF form defines <|endoftext|> = 50257 only in added_tokens.json: transformers loads it
    (eos_token_id 50257), and so does tokaudit (no TA201, the id mapped by added_tokens.json, replay clean)."""
    from transformers import AutoTokenizer

    directory = real_dirs["whisper-multilingual-hf"]
    tok = AutoTokenizer.from_pretrained(str(directory))
    assert (tok.eos_token_id, tok.convert_ids_to_tokens(50257)) == (50257, "<|endoftext|>")
    code, doc = _json("scan", str(directory))
    assert (code, _codes(doc) & {"TA201", "TA101"}) == (0, set())
    assert {"file": "added_tokens.json", "kind": "added_tokens_json", "entries": 1} in doc["artifacts"]
    code, explained = _json("explain", str(directory), "50257")
    (entry,) = explained["ids"]
    assert (entry["mapped"], entry["text"]) == ({"files": True}, "<|endoftext|>")
    assert entry["sources"][0]["rule"] == "added_tokens.json (special)"
    stream = tmp_path / "stream.json"
    stream.write_text("[4954, 50257]", encoding="utf-8")
    code, replayed = _json("replay", str(directory), str(stream), "--keep-special-tokens")
    assert (code, replayed["findings"], replayed["text"]) == (0, [], tok.decode([4954, 50257]))


# -- §2 tiktoken's registry ----------------------------------------------------------------------------------


def _tiktoken_from_cache(rank_file: Path, name: str):
    """tiktoken.get_encoding(name) reading this very file through TIKTOKEN_CACHE_DIR, as litellm does."""
    import tiktoken
    from tiktoken_ext import openai_public

    old = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(rank_file.parent)
    try:
        return tiktoken.Encoding(**openai_public.ENCODING_CONSTRUCTORS[name]())
    finally:
        if old is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = old


@pytest.mark.parametrize(
    ("name", "encoding", "eot"),
    [
        ("p50k-tiktoken-cache", "p50k_base", 50256),
        ("o200k-tiktoken-cache", "o200k_base", 199999),
        ("cl100k-tiktoken", "cl100k_base", 100257),
    ],
)
def test_published_rank_file_has_the_registry_specials(
    real_dirs: dict[str, Path], tmp_path: Path, name: str, encoding: str, eot: int
) -> None:
    """A bare published rank file gets tiktoken's registry specials: replay of [Hello, <|endoftext|>] is clean and
    decodes as tiktoken.get_encoding does on this very file; scan has no TA101 error (p50k's 50256 is filled)."""
    directory = real_dirs[name]
    rank_file = realkit.rank_file(directory)
    if (
        hashlib.sha1(f"https://openaipublic.blob.core.windows.net/encodings/{encoding}.tiktoken".encode()).hexdigest()
        == rank_file.name
    ):
        enc = _tiktoken_from_cache(rank_file, encoding)  # the file is tiktoken's own cache entry
    else:
        cache = tmp_path / "cache"
        cache.mkdir()
        url = f"https://openaipublic.blob.core.windows.net/encodings/{encoding}.tiktoken"
        shutil.copy(rank_file, cache / hashlib.sha1(url.encode()).hexdigest())
        enc = _tiktoken_from_cache(cache / hashlib.sha1(url.encode()).hexdigest(), encoding)
    ids = [*enc.encode("Hello"), eot]
    assert enc.decode(ids) == "Hello<|endoftext|>"
    stream = tmp_path / "stream.json"
    stream.write_text(json.dumps(ids), encoding="utf-8")
    code, doc = _json("replay", str(directory), str(stream), "--keep-special-tokens")
    assert (code, doc["findings"], doc["text"]) == (0, [], "Hello<|endoftext|>")
    result = run_cli(
        "decode",
        str(directory),
        ",".join(map(str, ids)),
        "--backend",
        "tiktoken",
        "--keep-special-tokens",
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["text"] == "Hello<|endoftext|>"
    _, scanned = _json("scan", str(directory))
    assert [f["severity"] for f in scanned["findings"] if f["code"] == "TA101"] in ([], ["note"])


# -- §4 file kinds by content --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["p50k-tiktoken-cache", "claude-legacy-json"])
def test_a_vocabulary_under_another_name_is_read_by_content(real_dirs: dict[str, Path], name: str) -> None:
    """tiktoken's cache file (named by the sha1 of its URL) and litellm's anthropic_tokenizer.json: a directory
    holding one, and the file itself as the target, both scan (exit 0), read as what their bytes are."""
    directory = real_dirs[name]
    (file,) = list(directory.iterdir())
    kind = {"p50k-tiktoken-cache": "tiktoken", "claude-legacy-json": "tokenizer_json"}[name]
    for target in (directory, file):
        code, doc = _json("scan", str(target))
        assert code == 0
        assert [(a["file"], a["kind"]) for a in doc["artifacts"]] == [(file.name, kind)]


def test_two_unnamed_vocabularies_ask_for_one(real_dirs: dict[str, Path], tmp_path: Path) -> None:
    for name in ("p50k-tiktoken-cache", "o200k-tiktoken-cache"):
        file = realkit.rank_file(real_dirs[name])
        os.symlink(file, tmp_path / file.name)
    result = run_cli("scan", str(tmp_path))
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"tokaudit: error: {tmp_path}: 2 files hold a vocabulary by their content "
        "(ec7223a39ce59f226a68acc30dc1af2788490e15, "
        "fb374d419588a4632f3f557e76b4b70aebbca790): name one as the target"
    )


# -- §5 the words beside these files -------------------------------------------------------------------------


def test_ta301_says_transformers_cannot_load_a_named_rank_file(real_dirs: dict[str, Path]) -> None:
    """transformers 5 looks for tiktoken.model / tokenizer.model only: AutoTokenizer fails on cl100k_base.tiktoken,
    and TA301 says so instead of describing a conversion that never happens."""
    from transformers import AutoTokenizer

    directory = real_dirs["cl100k-tiktoken"]
    with pytest.raises(ValueError, match="Couldn't instantiate the backend tokenizer"):
        AutoTokenizer.from_pretrained(str(directory))
    _, doc = _json("scan", str(directory))
    (ta301,) = [f for f in doc["findings"] if f["code"] == "TA301"]
    assert ta301["details"]["transformers_loads"] is False
    assert ta301["message"].startswith(
        "there is no tokenizer.json, and transformers' AutoTokenizer looks for a rank file "
        "only under the names tiktoken.model and tokenizer.model, not cl100k_base.tiktoken"
    )
    transformers = next(row for row in doc["loaders"] if row["loader"] == "transformers")
    assert transformers["sees_gap"] is None


def test_ta301_says_transformers_cannot_load_a_renamed_tokenizer_json(real_dirs: dict[str, Path]) -> None:
    """litellm's anthropic_tokenizer.json: tokenizers reads it, transformers' AutoTokenizer does not find it."""
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    directory = real_dirs["claude-legacy-json"]
    assert Tokenizer.from_file(str(directory / "anthropic_tokenizer.json")).get_vocab_size() == 65000
    with pytest.raises(ValueError, match="Couldn't instantiate the backend tokenizer"):
        AutoTokenizer.from_pretrained(str(directory))
    _, doc = _json("scan", str(directory))
    (ta301,) = [f for f in doc["findings"] if f["code"] == "TA301"]
    assert (ta301["severity"], ta301["details"]["transformers_loads"]) == ("warning", False)
    assert ta301["message"].startswith(
        "anthropic_tokenizer.json is a tokenizer.json under another name: transformers' "
        "AutoTokenizer reads one only as tokenizer.json and fails to load this directory"
    )
    transformers = next(row for row in doc["loaders"] if row["loader"] == "transformers")
    assert transformers["sees_gap"] is None


@pytest.mark.parametrize(("name", "key"), [("llama3-meta", "pat_str"), ("llama4-meta", "O200K_PATTERN")])
def test_meta_tokenizer_py_declares_the_pattern(real_dirs: dict[str, Path], name: str, key: str) -> None:
    """Meta's llama_models ships tokenizer.py beside tokenizer.model; it is read with ast (never run) for its
    pattern, so TA304 ('no file declares the pattern') no longer fires, and the pattern is Meta's."""
    directory = real_dirs[name]
    _, doc = _json("scan", str(directory))
    assert "TA304" not in _codes(doc)
    result = run_cli("decode", str(directory), "9906", "--backend", "tiktoken", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert "tokenizer.py" in json.loads(result.stdout)["backend_detail"]
    assert realkit.meta_pattern(directory / "tokenizer.py")  # the oracle reads the same class attribute
    assert key in (directory / "tokenizer.py").read_text(encoding="utf-8")


def test_meta_llama3_special_tokens_are_named_as_meta_builds_them(real_dirs: dict[str, Path]) -> None:
    """Meta's Tokenizer.__init__ builds its 256 specials (the named ones, then f"<|reserved_special_token_{2 + i}|>")
    and numbers them from the rank count: the remote-code profile names 128000 <|begin_of_text|> and 128009
    <|eot_id|>, and TA105 counts the 246 reserved names, said of Meta's code, not of transformers."""
    import ast

    directory = real_dirs["llama3-meta"]
    _, explained = _json("explain", str(directory), "128000", "128009", "128002")
    texts = [e["sources"][-1]["text"] for e in explained["ids"]]
    assert texts == ["<|begin_of_text|>", "<|eot_id|>", "<|reserved_special_token_0|>"]
    tree = ast.parse((directory / "tokenizer.py").read_text(encoding="utf-8"))
    listed = next(
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign)
        and isinstance(n.value, ast.List)
        and any(isinstance(t, ast.Name) and t.id == "special_tokens" for t in n.targets)
    )
    assert [e.value for e in listed.elts][:2] == ["<|begin_of_text|>", "<|end_of_text|>"]
    assert [e.value for e in listed.elts].index("<|eot_id|>") == 9
    _, doc = _json("scan", str(directory))
    (ta105,) = [f for f in doc["findings"] if f["code"] == "TA105"]
    named = [e.value for e in listed.elts]
    names = named + [f"<|reserved_special_token_{2 + i}|>" for i in range(256 - len(named))]  # as Meta's __init__ does
    assert ta105["count"] == sum("reserved" in n for n in names) == 246
    assert "by the model's own tokenizer code (tokenizer.py)" in ta105["message"]
