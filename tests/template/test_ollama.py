"""TA853: when ``ollama create`` would swap a GGUF's chat template for one of Ollama's Go templates
(``template.Named``: the closest entry of Ollama's template/index.json by Levenshtein distance, if under 100)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli
from tokaudit.template.ollama import THRESHOLD, distance_below, predict

CLEAN = FIXTURES / "gguf" / "clean.gguf"
TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _levenshtein(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
        previous = current
    return previous[-1]


def test_the_banded_distance_is_levenshtein_below_the_limit() -> None:
    rnd = random.Random(7)
    for _ in range(2000):
        a = "".join(rnd.choice("ab<|>") for _ in range(rnd.randint(0, 40)))
        b = "".join(rnd.choice("ab<|>") for _ in range(rnd.randint(0, 40)))
        limit = rnd.randint(1, 25)
        d = _levenshtein(a, b)
        assert distance_below(a, b, limit) == (d if d < limit else None)


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "index.json"
    near = TEMPLATE.replace("message['role']", "message.role")  # 4 edits away
    path.write_text(
        json.dumps(
            [
                {"template": "{{ .Prompt }}" * 20, "name": "alpaca"},
                {"template": near, "name": "chatml"},
                {"template": near + " ", "name": "chatml-2"},
            ]
        ),
        encoding="utf-8",
    )
    monkeypatch.setenv("TOKAUDIT_OLLAMA_INDEX", str(path))
    return path


def test_a_gguf_whose_template_is_near_an_index_entry_gets_the_note(index: Path) -> None:
    assert _levenshtein(TEMPLATE, TEMPLATE.replace("message['role']", "message.role")) == 4
    doc = json.loads(run_cli("scan", CLEAN, "--select", "TA853", "--format", "json").stdout)
    (f,) = doc["findings"]
    assert (f["code"], f["name"], f["severity"]) == ("TA853", "ollama-template-substitution", "note")
    assert f["location"] == {"file": "clean.gguf", "key": "tokenizer.chat_template"}
    assert f["details"] == {
        "subject": "chatml",
        "ollama_template": "chatml",
        "distance": 4,
        "index": str(index),
        "stacks": ["ollama"],
    }
    assert f["message"].startswith(
        "ollama create from clean.gguf would replace its chat template with Ollama's own Go "
        "template 'chatml': the template is 4 edits from Ollama's copy of it, under the threshold "
        "of 100 of template.Named"
    )
    assert "not_checked" not in doc


def test_ties_keep_the_first_entry_and_a_far_template_keeps_its_own(index: Path, tmp_path: Path) -> None:
    far = tmp_path / "far.json"
    far.write_text(json.dumps([{"template": TEMPLATE + "x" * THRESHOLD, "name": "far"}]), encoding="utf-8")
    assert predict(TEMPLATE, far) is None
    tie = tmp_path / "tie.json"
    tie.write_text(
        json.dumps([{"template": TEMPLATE + "a", "name": "first"}, {"template": TEMPLATE + "b", "name": "second"}]),
        encoding="utf-8",
    )
    match = predict(TEMPLATE, tie)
    assert match is not None and (match.name, match.distance) == ("first", 1)


def test_without_an_index_the_headline_says_it_was_not_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOKAUDIT_OLLAMA_INDEX", raising=False)
    monkeypatch.setenv("GOMODCACHE", str(tmp_path / "none"))
    monkeypatch.setenv("GOPATH", str(tmp_path / "none"))
    monkeypatch.setenv("HOME", str(tmp_path))
    doc = json.loads(run_cli("scan", CLEAN, "--format", "json").stdout)
    assert doc["not_checked"] == [
        "Ollama's template substitution (no Ollama template index: set TOKAUDIT_OLLAMA_INDEX to its "
        "template/index.json)"
    ]
    assert [f for f in doc["findings"] if f["code"] == "TA853"] == []


def test_an_index_found_in_the_go_module_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tokaudit.template.ollama import find_index

    monkeypatch.delenv("TOKAUDIT_OLLAMA_INDEX", raising=False)
    monkeypatch.setenv("GOMODCACHE", str(tmp_path))
    for version in ("v0.9.0", "v0.33.2", "v0.12.10"):
        d = tmp_path / "github.com" / "ollama" / f"ollama@{version}" / "template"
        d.mkdir(parents=True)
        (d / "index.json").write_text("[]", encoding="utf-8")
    assert find_index() == tmp_path / "github.com" / "ollama" / "ollama@v0.33.2" / "template" / "index.json"


def test_a_file_that_is_not_an_index_is_one_error_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "index.json"
    bad.write_text('{"name": "chatml"}', encoding="utf-8")
    monkeypatch.setenv("TOKAUDIT_OLLAMA_INDEX", str(bad))
    result = run_cli("scan", CLEAN)
    assert (result.exit_code, result.stderr.strip()) == (
        2,
        f'tokaudit: error: {bad}: not Ollama\'s template index (expected a list of {{"name", "template"}})',
    )
