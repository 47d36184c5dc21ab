"""Every import inside tokaudit points down the layers ARCHITECTURE.md draws (module-level and
function-level imports alike), read from the source with ``ast``."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

#: Lowest first; a package may import the ones in the layers below its own.
LAYERS = (
    # records: Provenance and AddedToken, which the artifacts build and every layer above reads
    {"__init__", "errors", "ids", "catalog", "collector", "result_cache", "worker", "records", "jinja_generation"},
    {"rule_docs"},  # the rule pages (docs/rules): read by the SARIF renderer and `tokaudit rule`
    {"artifacts", "fleet", "parsers"},  # parsers: the stacks' tool-call/reasoning grammars, plain text in and out
    {"source", "config"},
    {"model"},  # model.load: resolve a target (source) and build its model
    {"backends", "report"},
    {"checks"},
    {"compare", "stream", "template"},
    {
        "oncall",
        "roundtrip",
    },  # explain answers unknown ids as compare does; roundtrip renders (template) and decodes (stream)
    {"rules"},
    {"scan"},
    {"cli"},
    {"__main__"},
)
RANK = {name: rank for rank, layer in enumerate(LAYERS) for name in layer}


def _unit(module: str) -> str:
    """The package (or top-level module) a ``tokaudit.x.y`` module belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports_by_unit() -> set[tuple[str, str, str]]:
    """(importing unit, imported unit, file) for every import of another unit."""
    out = set()
    package = ROOT / "tokaudit"
    for path in package.rglob("*.py"):
        rel = path.relative_to(package)
        source = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "tokaudit":
                targets = [node.module] if "." in node.module else [f"tokaudit.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.split(".")[0] == "tokaudit"]
            else:
                continue
            for target in targets:
                unit = _unit(target)
                if not (package / unit).is_dir() and not (package / f"{unit}.py").is_file():
                    unit = "__init__"  # ``from tokaudit import __version__``
                if unit != source:
                    out.add((source, unit, str(rel)))
    return out


def test_every_unit_has_a_layer() -> None:
    package = ROOT / "tokaudit"
    units = {p.stem for p in package.iterdir() if p.suffix == ".py" or p.is_dir() and any(p.glob("*.py"))}
    assert sorted(units - set(RANK)) == []


def test_every_import_points_down() -> None:
    edges = imports_by_unit()
    assert len(edges) > 50
    assert sorted((src, dst, f) for src, dst, f in edges if RANK[dst] >= RANK[src]) == []


def _imported_names(root: str) -> list[tuple[str, str, str]]:
    """(file, module, name) of every ``from tokaudit... import name`` under ``root`` of the checkout."""
    out = []
    for path in sorted((ROOT / root).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tokaudit"):
                out.extend((str(path.relative_to(ROOT)), node.module, a.name) for a in node.names)
    return out


def test_the_shared_records_come_from_the_ground_floor() -> None:
    """Issue 33: Provenance and AddedToken were imported from the artifact parsers' module (report included)."""
    shared = {"Provenance", "AddedToken"}
    found = [
        (f, m, n)
        for root in ("tokaudit", "tests", "scripts", "bench")
        for f, m, n in _imported_names(root)
        if n in shared
    ]
    assert len(found) > 30
    assert sorted((f, m) for f, m, _ in found if m != "tokaudit.records") == []


#: The tokaudit packages that hold a command's core (and the round trip, which template and scan run).
COMMAND_PACKAGES = {"scan", "compare", "stream", "oncall", "template", "roundtrip"}


def _command_names_in(source: str, commands: set[str]) -> list[str]:
    """The command names a module's source holds as a string (f-string parts too), and the command packages it
    imports."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in commands:
            out.append(node.value)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out += [f"import {node.module}" for unit in [_unit(node.module)] if unit in COMMAND_PACKAGES]
        elif isinstance(node, ast.Import):
            out += [f"import {a.name}" for a in node.names if _unit(a.name) in COMMAND_PACKAGES]
    return out


def test_report_names_no_command() -> None:
    """Issue 33: report/ knew every command by name (``SECTIONS`` of rich views, ``REPORT_ONLY``, a rich module per
    command). Each command's result now draws itself (``CommandResult.rich``, its view beside the command) and
    whoever builds a report says whether it ends in a verdict (``Report.reports_only``). ``rule``/``rules`` print
    a page, not a report (SARIF's ``rules`` key is not them)."""
    from tokaudit.cli.app import COMMANDS

    commands = set(COMMANDS) - {"rule", "rules"}
    assert len(commands) == 9
    found = {
        str(path.relative_to(ROOT)): _command_names_in(path.read_text(encoding="utf-8"), commands)
        for path in sorted((ROOT / "tokaudit" / "report").rglob("*.py"))
    }
    assert len(found) > 15 and {f: names for f, names in found.items() if names} == {}
    # what it looked like: a table of views by command name, a module of one command's view
    assert sorted(
        _command_names_in(
            'SECTIONS = {"scan": scan_section}\nREPORT_ONLY = frozenset({"explain", "decode"})\n'
            "from tokaudit.compare.view import compare_view\nimport tokaudit.stream.view\n",
            commands,
        )
    ) == ["decode", "explain", "import tokaudit.compare.view", "import tokaudit.stream.view", "scan"]


def test_report_reads_files_but_no_file_kind() -> None:
    """report may read a file safely (baselines, JSON positions for locations), never a tokenizer file kind's parser."""
    allowed = {"tokaudit.artifacts.safe_files", "tokaudit.artifacts.strict_json", "tokaudit.artifacts.json_positions"}
    used = {m for f, m, _ in _imported_names("tokaudit/report") if m.startswith("tokaudit.artifacts")}
    assert used and sorted(used - allowed) == []


def test_checks_import_neither_template_nor_the_commands() -> None:
    """Issue 23: the registry used to import the template rules (the rule list now lives in tokaudit.rules)."""
    edges = imports_by_unit()
    assert {dst for src, dst, _ in edges if src == "checks"} <= {
        "artifacts",
        "backends",
        "ids",
        "model",
        "report",
        "errors",
        "catalog",
        "collector",
        "records",
        "result_cache",
    }


def _module_imports() -> dict[str, set[str]]:
    """module -> the tokaudit modules it imports (module-level and function-level alike), over the whole package."""
    root = ROOT / "tokaudit"

    def name(path: Path) -> str:
        parts = path.relative_to(ROOT).with_suffix("").parts
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    paths = {name(p): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {n: set() for n in paths}
    for own, path in paths.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                targets = {node.module} | {f"{node.module}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                targets = {a.name for a in node.names}
            else:
                continue
            graph[own] |= (targets & paths.keys()) - {own}
    return graph


def _tangles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other (through a cycle of any length), each sorted."""
    reach: dict[str, set[str]] = {}
    for start in graph:
        seen, todo = set(), [start]
        while todo:
            for nxt in graph[todo.pop()] - seen:
                seen.add(nxt)
                todo.append(nxt)
        reach[start] = seen
    groups = {tuple(sorted(m for m in reach[n] if n in reach[m])) for n in graph if n in reach[n]}
    return sorted(list(g) for g in groups)


#: The modules left that import each other (one of them inside a function): a ratchet, a cycle broken comes off.
#: Every command's result and its view are apart: the records a view reads live in a module of their own
#: (scan/records.py, template/records.py, compare/rows.py, stream/summary.py, oncall/records.py,
#: oncall/diff_result.py) and the view is given the parts.
KNOWN_CYCLES = []


def test_no_import_cycle_in_the_package() -> None:
    """Issue 33: llamacpp_load and llamacpp_vocab imported each other (the load was a global cache the vocab read);
    the load is now TokenizerModel.llamacpp and the vocabulary module knows nothing of it. artifacts/added_tokens
    imported load for the loader rule over added tokens, which is now model/config_added.py. backends/kinds (the
    table) and backends/registry (which reads it) imported each other for LoadInputs, now backends/inputs.py.
    roundtrip/case and roundtrip/decode imported each other for the marker lookup, now roundtrip/lookup.py.
    Every module of every package, and across packages (function-level imports included)."""
    graph = _module_imports()
    assert len(graph) > 200 and "tokaudit.template.stacks.vllm" in graph
    assert _tangles(graph) == KNOWN_CYCLES
    # the search finds them where there are some
    assert _tangles({"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"}, "f": {"a"}}) == [
        ["a", "b", "c"],
        ["d", "e"],
    ]


def test_only_artifacts_and_model_name_a_file_kind() -> None:
    """Issue 33: `tekken` was named in 17 modules; the checks, backends and commands now ask the model or the
    artifacts (``model.ranks``, ``Artifacts.rank_file``, ``registered_added_tokens``, ``vocabularies``,
    ``added_tokens_of_every_file``)."""
    package = ROOT / "tokaudit"
    naming = sorted(
        str(p.relative_to(package))
        for p in package.rglob("*.py")
        if p.relative_to(package).parts[0] not in ("artifacts", "model") and "tekken" in p.read_text(encoding="utf-8")
    )
    assert naming == []


def test_no_module_over_400_lines_but_the_known_ones() -> None:
    """Issue 33: 16 modules were over 400 lines, 6 after session 4; `ruff format` (120 columns) pushed 5 more over.
    A ratchet: a module that grows past 400 lines is split along the lines its code already has."""
    package = ROOT / "tokaudit"
    long = sorted(
        str(p.relative_to(package))
        for p in package.rglob("*.py")
        if len(p.read_text(encoding="utf-8").splitlines()) > 400
    )
    assert long == []
