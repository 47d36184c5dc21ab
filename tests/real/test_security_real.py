"""The static security rules (TA220, TA850-TA852) on real data: llama.cpp's 70 real chat templates (from the pinned
llama-cpp-python sdist), its vocab GGUFs and every real tokenizer directory raise nothing. Each of these was read
when the rules were written; none uses a sandbox-escape pattern, gates prose on a message's content, or holds an
invisible character outside its legitimate uses (emoji ZWJ sequences, joiners inside words, marks in RTL text)."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tokaudit.template.llamacpp_build import find_sdist
from tokaudit.template.hidden import hidden_instructions
from tokaudit.template.invisible import invisible_characters
from tokaudit.template.security import injection_patterns, parse

pytestmark = pytest.mark.real

_TEMPLATES = "llama_cpp_python-0.3.36/vendor/llama.cpp/models/templates/"
CODES = ("TA220", "TA850", "TA851", "TA852")


def test_llamacpp_real_templates_raise_nothing(real_dirs: dict) -> None:
    sdist = find_sdist()
    assert sdist is not None
    with tarfile.open(sdist, "r:gz") as tar:
        templates = {
            Path(m.name).name: tar.extractfile(m).read().decode("utf-8")  # type: ignore[union-attr]
            for m in tar.getmembers()
            if m.name.startswith(_TEMPLATES) and m.name.endswith(".jinja")
        }
    assert len(templates) == 70
    assert [name for name, text in templates.items() if parse(text) is None] == []  # all read from the parse tree
    hits = {
        name: (injection_patterns(text), hidden_instructions(text), invisible_characters(text))
        for name, text in templates.items()
    }
    assert {name: h for name, h in hits.items() if any(h)} == {}


def test_real_tokenizers_and_vocab_ggufs_raise_nothing(real_dirs: dict) -> None:
    targets = sorted(real_dirs.values())
    assert len([t for t in targets if any(Path(t).glob("*.gguf"))]) == 19
    result = run_cli("scan", *targets, "--select", ",".join(CODES), "--format", "json", "--jobs", "2")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert len(doc["targets"]) == len(targets)
    assert [(f["target"], f["code"]) for f in doc["findings"]] == []
