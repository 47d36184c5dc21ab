"""The persistent result cache (tokaudit.result_cache): a scan from cached TA305 probes, template renders and TA401's
undecodable ids says exactly what a scan without the cache says; corrupted entries are ignored; nothing is written in
the target; TOKAUDIT_CACHE=off writes nothing."""

from __future__ import annotations

import ast
import importlib
import json
from importlib.util import find_spec
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT, run_cli, tree_snapshot


def _scan(target: Path, cache: str) -> tuple[int, str]:
    result = run_cli("scan", str(target), "--format", "json", env={"TOKAUDIT_CACHE": cache})
    return result.exit_code, result.stdout


@pytest.mark.parametrize(
    "target, kinds",
    [
        ("patterns/possessive", {"ta305-probe", "undecodable-ids"}),  # TA305 with a shrunk example and a translation
        (
            "templates/named-templates",
            {"parser-round-trip", "ta305-probe", "template-render", "template-security", "undecodable-ids"},
        ),  # TA802, TA820
        (
            "templates/broken",
            {"parser-round-trip", "ta305-probe", "template-render", "template-security", "undecodable-ids"},
        ),  # TA801
        (
            "fastokens/refused-unigram",
            {"undecodable-ids"},
        ),  # fastokens refuses the configuration (Dynamo's row says so)
        (
            "kimi-k2.5",
            {"parser-round-trip", "ta305-probe", "template-render", "template-security", "undecodable-ids"},
        ),  # TA401, TA820
        # TA850 and TA852 (a config string with a zero-width joiner)
        ("rules/template-injection", {"ta305-probe", "template-render", "template-security", "undecodable-ids"}),
        (
            "rules/invisible-characters",
            {"ta305-probe", "template-render", "template-security", "config-invisible", "undecodable-ids"},
        ),
    ],
)
def test_cached_scan_says_what_an_uncached_scan_says(tmp_path: Path, target: str, kinds: set[str]) -> None:
    model = FIXTURES / target
    before = tree_snapshot(model)
    cache = tmp_path / "cache"
    expected = _scan(model, "off")
    assert _scan(model, str(cache)) == expected  # computed, then stored
    entries = sorted(cache.iterdir()) if cache.exists() else []
    names = {p.name.rsplit("-", 1)[0] for p in entries}
    # Dynamo's row: fastokens' answer on the file's configuration, unless a full fastokens load of this file
    # earlier in the process answered already (compare, scan --deep)
    assert kinds <= names <= kinds | ({"fastokens-config"} if find_spec("fastokens") is not None else set())
    for entry in entries:
        assert json.loads(entry.read_text(encoding="utf-8"))["key"] == entry.stem
    assert _scan(model, str(cache)) == expected  # every probe and render from the cache
    assert tree_snapshot(model) == before


def test_rendered_template_is_read_from_the_cache(tmp_path: Path) -> None:
    """A hit is really used: an entry edited in place (same key) changes the TA801 message."""
    model = FIXTURES / "templates" / "broken"
    cache = tmp_path / "cache"
    _, first = _scan(model, str(cache))
    (entry,) = cache.glob("template-render-*.json")
    data = json.loads(entry.read_text(encoding="utf-8"))
    errors = [r for r in data["value"]["renders"] if r[2]]  # each distinct render once: [engine, text, error, kind]
    assert errors
    for render in errors:
        render[2] = "edited in the cache"
    entry.write_text(json.dumps(data), encoding="utf-8")
    _, second = _scan(model, str(cache))
    assert "edited in the cache" not in first
    assert "edited in the cache" in second


def test_template_security_readings_are_read_from_the_cache(tmp_path: Path) -> None:
    """A hit is really used: TA850's pattern edited in its entry changes the message."""
    model = FIXTURES / "rules" / "template-injection"
    cache = tmp_path / "cache"
    _, first = _scan(model, str(cache))
    (entry,) = cache.glob("template-security-*.json")
    data = json.loads(entry.read_text(encoding="utf-8"))
    assert data["value"]["patterns"][0] == ["underscore-attribute", ".__class__", 1]
    data["value"]["patterns"][0][1] = ".__edited_in_the_cache__"
    entry.write_text(json.dumps(data), encoding="utf-8")
    _, second = _scan(model, str(cache))
    assert ".__edited_in_the_cache__" not in first and ".__edited_in_the_cache__ (line 1)" in second


@pytest.mark.parametrize("target", ["kimi-k2.5", "clean-bpe"])  # a tiktoken rank file, a tokenizer.json
def test_undecodable_ids_are_read_from_the_cache(tmp_path: Path, target: str) -> None:
    """TA401's ids are really read back: an entry edited in place (same key) changes the finding."""
    model = FIXTURES / target
    cache = tmp_path / "cache"
    _, first = _scan(model, str(cache))
    (entry,) = cache.glob("undecodable-ids-*.json")
    data = json.loads(entry.read_text(encoding="utf-8"))
    assert data["value"] == sorted(data["value"])
    data["value"] = [0, 1, 2]
    entry.write_text(json.dumps(data), encoding="utf-8")
    _, second = _scan(model, str(cache))
    (edited,) = [f for f in json.loads(second)["findings"] if f["code"] == "TA401"]
    assert edited["ids"] == [[0, 2]]
    assert edited not in json.loads(first)["findings"]


def test_undecodable_ids_are_kept_under_the_file_content(tmp_path: Path) -> None:
    """The key is the vocabulary file's content: the same tokens in other bytes are a new entry, a copy of the
    file elsewhere is the same one."""

    def findings(out: str) -> list[dict[str, object]]:
        return [{k: v for k, v in f.items() if k != "target"} for f in json.loads(out)["findings"]]

    cache = tmp_path / "cache"
    code, out = _scan(FIXTURES / "clean-bpe", "off")
    expected = (code, findings(out))
    assert any(f["code"] == "TA401" for f in expected[1])
    copies = []
    for name, tail in (("same", b""), ("other", b"\n")):
        copy = tmp_path / name
        copy.mkdir()
        for file in (FIXTURES / "clean-bpe").iterdir():
            (copy / file.name).write_bytes(file.read_bytes() + (tail if file.name == "tokenizer.json" else b""))
        copies.append(copy)
    _scan(FIXTURES / "clean-bpe", str(cache))
    for copy, entries in zip(copies, (1, 2)):
        code, out = _scan(copy, str(cache))
        assert len(list(cache.glob("undecodable-ids-*.json"))) == entries
        assert (code, findings(out)) == expected


@pytest.mark.parametrize("garbage", [b"", b"{not json", b"\xff\xfe", b'{"key": "other", "value": {}}', b"[1, 2]"])
def test_corrupted_entries_are_ignored(tmp_path: Path, garbage: bytes) -> None:
    model = FIXTURES / "templates" / "named-templates"
    cache = tmp_path / "cache"
    expected = _scan(model, "off")
    _scan(model, str(cache))
    for entry in cache.iterdir():
        entry.write_bytes(garbage)
    assert _scan(model, str(cache)) == expected


def test_entries_of_the_wrong_shape_are_ignored(tmp_path: Path) -> None:
    model = FIXTURES / "templates" / "named-templates"
    cache = tmp_path / "cache"
    expected = _scan(model, "off")
    _scan(model, str(cache))
    for entry in cache.iterdir():
        key = json.loads(entry.read_text(encoding="utf-8"))["key"]
        entry.write_text(json.dumps({"key": key, "value": {"conversations": [["x", 5]], "found": 3}}), encoding="utf-8")
    assert _scan(model, str(cache)) == expected


@pytest.mark.parametrize("off", ["off", "0", "false", "no", "OFF"])
def test_turned_off_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, off: str) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    _scan(FIXTURES / "kimi-k2.5", off)
    assert list(tmp_path.iterdir()) == []


def test_default_directory_is_the_user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("TOKAUDIT_CACHE")
    result = run_cli("scan", str(FIXTURES / "kimi-k2.5"), "--format", "json")
    assert result.exit_code == 1
    names = {p.name.rsplit("-", 1)[0] for p in (tmp_path / "xdg" / "tokaudit" / "results").iterdir()}
    # no tokenizer.json: no fastokens probe; the template teaches a tool call: the parser round trip
    assert names == {"parser-round-trip", "ta305-probe", "template-render", "template-security", "undecodable-ids"}


def test_unwritable_cache_directory_changes_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory", encoding="utf-8")
    model = FIXTURES / "kimi-k2.5"
    assert _scan(model, str(blocker / "cache")) == _scan(model, "off")


# -- a cache that cannot lie (issue 34) -----------------------------------------------------------------------


def test_the_directory_is_made_private(tmp_path: Path) -> None:
    import os
    import stat

    cache = tmp_path / "cache"
    _scan(FIXTURES / "clean-bpe", str(cache))
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700 and any(cache.iterdir())
    for entry in cache.iterdir():
        assert stat.S_IMODE(entry.stat().st_mode) == 0o600


def test_a_directory_others_can_write_is_not_used(tmp_path: Path) -> None:
    """Entries may have been planted there: the scan computes everything and writes nothing."""
    import os

    model = FIXTURES / "kimi-k2.5"
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    assert _scan(model, str(shared)) == _scan(model, "off")
    assert list(shared.iterdir()) == []
    # nor one under a parent others can write (without the sticky bit, as /tmp has): they could swap the name
    os.chmod(shared, 0o700)
    parent = tmp_path / "open"
    parent.mkdir()
    os.chmod(parent, 0o777)
    assert _scan(model, str(parent / "cache")) == _scan(model, "off")
    assert not (parent / "cache").exists() or list((parent / "cache").iterdir()) == []


def test_the_cache_is_never_inside_a_target(tmp_path: Path) -> None:
    import shutil

    target = tmp_path / "model"
    shutil.copytree(FIXTURES / "clean-bpe", target)
    before = tree_snapshot(target)
    assert _scan(target, str(target / "cache")) == _scan(target, "off")
    (tmp_path / "link").symlink_to(target)  # the cache's path is a link into the target
    assert _scan(target, str(tmp_path / "link")) == _scan(target, "off")
    assert tree_snapshot(target) == before


def test_an_entry_that_is_not_a_plain_file_of_ours_is_a_miss(tmp_path: Path) -> None:
    import os

    model = FIXTURES / "clean-bpe"
    cache = tmp_path / "cache"
    expected = _scan(model, "off")
    _scan(model, str(cache))
    entries = sorted(cache.iterdir())
    os.chmod(entries[0], 0o666)  # writable by others
    os.link(entries[1], tmp_path / "second-name")  # two links: someone else may hold the other
    entries[2].unlink()
    entries[2].symlink_to("/dev/zero")
    assert _scan(model, str(cache)) == expected


def test_conforms_checks_types_keys_and_items() -> None:
    from tokaudit.result_cache import conforms

    shape = {"found": [(str, {str: [str]})], "complete": bool, "note?": {str, None}}
    assert conforms({"found": [["a", {"x": ["a"]}]], "complete": True}, shape)
    assert conforms({"found": [], "complete": False, "note": None}, shape)
    assert not conforms({"found": [["a", {"x": ["a", 1]}]], "complete": True}, shape)  # an item of the wrong type
    assert not conforms({"found": [["a"]], "complete": True}, shape)  # a pair of one
    assert not conforms({"found": [], "complete": 1}, shape)  # 1 is not a bool
    assert not conforms({"found": [], "complete": True, "extra": 0}, shape)  # a key it does not know
    assert not conforms({"complete": True}, shape)  # a key it needs
    assert conforms([1, 2], [int]) and not conforms([1, True], [int]) and not conforms((1,), [int])


def test_eviction_removes_what_was_used_longest_ago(tmp_path: Path) -> None:
    import os

    from tokaudit.result_cache import evict

    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    for i in range(10):
        entry = cache / f"kind-{i}.json"
        entry.write_bytes(b"x" * 1000)
        os.utime(entry, (1_000_000 + i, 1_000_000 + i))  # entry 0 used longest ago
    (cache / ".tmp-1-old").write_bytes(b"x")
    os.utime(cache / ".tmp-1-old", (1, 1))
    fd = os.open(cache, os.O_RDONLY)
    try:
        assert evict(fd, limit=20_000) == 1  # under the limit: only the stale temporary file goes
        assert evict(fd, limit=8_000) == 4  # over it: down to three quarters (6,000 bytes), oldest first
    finally:
        os.close(fd)
    assert sorted(p.name for p in cache.iterdir()) == [f"kind-{i}.json" for i in range(4, 10)]


#: The packages whose code computes a cached template render, parser round trip or security reading (their inputs,
#: the template text and the model's tokens, are in the key; the code that turns them into the result is hashed).
_COMPUTING = ("tokaudit.template", "tokaudit.parsers", "tokaudit.roundtrip", "tokaudit.stream.detokenizers")
_GROUND = ("tokaudit.jinja_generation", "tokaudit.worker")


def _module_imports(module: str) -> set[str]:
    """The tokaudit modules ``module`` imports (at module or function level), read with ast."""
    path = ROOT.joinpath(*module.split("."))
    source = path.with_suffix(".py") if path.with_suffix(".py").is_file() else path / "__init__.py"
    out = set()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tokaudit."):
            out.add(node.module)
            for alias in node.names:
                name = ROOT.joinpath(*f"{node.module}.{alias.name}".split("."))
                if name.with_suffix(".py").is_file() or (name / "__init__.py").is_file():
                    out.add(f"{node.module}.{alias.name}")
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("tokaudit."))
    return out


@pytest.mark.parametrize(
    "owner, attribute",
    [
        ("tokaudit.template.rules", "_MODULES"),
        ("tokaudit.roundtrip.rules", "_MODULES"),
        ("tokaudit.template.security_rules", "_MODULES"),
    ],
)
def test_a_cache_key_hashes_every_module_its_computation_imports(owner: str, attribute: str) -> None:
    """A cached result is keyed by the source of the modules that compute it: a module they import and the list
    misses would leave a stale entry after it changes (session 5 found template/prefill.py, stacks/facts.py and
    llama.cpp's engine missing from the round trip's list)."""
    listed = set(getattr(importlib.import_module(owner), attribute))
    seen: set[str] = set()
    todo = [m for m in listed if m != owner]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        todo.extend(m for m in _module_imports(module) if m.startswith(_COMPUTING) or m in _GROUND)
    assert sorted(seen - listed - {owner}) == []
