"""Where a finding points: a path a CI system can show (target joined with the file), and the line and
column of a JSON key, looked up in the file once a command's findings are final."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path, PurePosixPath

from tokaudit.artifacts.safe_files import read_bytes_head
from tokaudit.records import Provenance
from tokaudit.artifacts.json_positions import walk
from tokaudit.catalog import lookup
from tokaudit.errors import InputError
from tokaudit.report.finding import Finding
from tokaudit.report.report import CommandResult, Report

#: Largest JSON file whose keys get a line: the biggest real tokenizer.json is ~35 MB.
MAX_POSITION_BYTES = 64 * 1024 * 1024


def finding_path(f: Finding) -> str:
    """``fixtures/kimi-k2.5/config.json``; the target itself when the finding names no file."""
    target = f.target.replace("\\", "/").rstrip("/") or "."
    if f.location is None:
        return target
    base = PurePosixPath(target)
    if base.name == f.location.file:  # the target is the file itself (a single tokenizer file)
        return str(base)
    return str(base / f.location.file)


def finding_line(f: Finding) -> int:
    return f.location.line if f.location is not None and f.location.line is not None else 1


def finding_column(f: Finding) -> int:
    return f.location.column if f.location is not None and f.location.column is not None else 1


def location_text(f: Finding) -> str:
    """``fixtures/kimi-k2.5/config.json:17 (text_config.vocab_size)``: the path, the line when known and the
    JSON key or name the finding is about."""
    where = finding_path(f)
    if f.location is None:
        return where
    if f.location.line is not None:
        where += f":{f.location.line}"
    if f.location.key:
        where += f" ({f.location.key})"
    return where


def rule_summary(code: str) -> str | None:
    """A finding code's one-line summary, from the catalog (the report layer never imports the rules)."""
    info = lookup(code)
    return info.summary if info else None


def with_key_positions(report: Report) -> Report:
    """The report with the line and column of every JSON key a finding names (``config.json`` key
    ``text_config.vocab_size`` -> line 17, column 5), read from the target's files. A finding that already
    has a line, names no JSON file, or whose file cannot be read again keeps its location as it is."""
    by_target = {r.target: r for r in report.results}
    prefixes: dict[Path, _Prefix] = {}
    placed = []
    for f in report.findings:
        loc = f.location
        result = by_target.get(f.target)
        if loc is None or loc.line is not None or not loc.key or not loc.file.endswith(".json") or result is None:
            placed.append(f)
            continue
        path = _file_of(result, loc.file)
        position = prefixes.setdefault(path, _Prefix(path)).position(loc.key) if path is not None else None
        placed.append(
            f if position is None else replace(f, location=replace(loc, line=position[0], column=position[1]))
        )
    return replace(report, findings=placed)


def _file_of(result: CommandResult, name: str) -> Path | None:
    source = result.source
    if source is None:
        return None
    root = Path(source.path)
    if root.name == name and not root.is_dir():  # a single-file target
        return root
    if "/" in name or "\\" in name or name in ("", ".", ".."):
        return None  # provenance names a file of the target, never a path
    return root / name


#: First piece of a file read to place a key; each further read is 16 times longer (up to the whole file).
FIRST_READ = 64 * 1024


class _Prefix:
    """The start of one file, read as far as the keys asked for need: most keys a finding names are in the first
    kilobytes (a tokenizer.json's ``added_tokens``), so Llama 3's 9 MB file is not read and decoded again."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.size = FIRST_READ // 16
        self.text: str | None = ""
        self.whole = False

    def position(self, key: str) -> tuple[int, int] | None:
        while True:
            if self.text is None:
                return None
            found, short = walk(self.text, key)
            if not short or self.whole:
                break
            self._grow()
        if found is None:
            return None
        return self.text.count("\n", 0, found) + 1, found - self.text.rfind("\n", 0, found)

    def _grow(self) -> None:
        self.size = min(self.size * 16, MAX_POSITION_BYTES)
        try:
            data = read_bytes_head(self.path, self.size + 1)
        except InputError:
            self.text = None
            return
        self.whole = len(data) <= self.size
        data = data[: self.size]
        try:
            # a cut inside a character: the bytes before it (the JSON parsed, so the file is UTF-8)
            self.text = data.decode("utf-8-sig") if self.whole else data.decode("utf-8-sig", "ignore")
        except UnicodeDecodeError:
            self.text = None


def with_file(f: Finding, result: CommandResult | None) -> Finding:
    """``f``, pointing at its target's vocabulary file when it names no file (a replay or compare finding): what
    SARIF, ``concise`` and GitHub annotations show, since an editor or code scanning cannot open a directory."""
    if f.location is not None:
        return f
    primary = primary_location(result)
    return f if primary is None else replace(f, location=primary)


def primary_location(result: CommandResult | None) -> Provenance | None:
    """Where a finding that names no file points: the target's vocabulary file (for a target that is a file,
    the file itself)."""
    source = result.source if result is not None else None
    if source is None or not source.primary:
        return None
    return Provenance(source.primary)
