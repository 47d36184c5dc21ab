"""``[tool.tokaudit]`` in pyproject.toml, found by walking up from the current directory.

```toml
[tool.tokaudit]
select = ["TA1", "TA2"]          # codes, names or code prefixes (default: every rule)
ignore = ["partial-utf8-token"]
baseline = "tokaudit-baseline.json"
stacks = ["vllm", "smg"]          # the stacks the deploy runs on: template rules and parser round trip (default: all)
tool-parser = "hermes"            # the deploy's --tool-call-parser: its failures are errors
reasoning-parser = "qwen3"        # the deploy's --reasoning-parser
parsers = "auto"                  # builtin (default), installed or auto: the stacks' own parser classes where installed
require-reason = true             # every suppression says why: no global ignore, a "reason" on each baseline entry

[[tool.tokaudit.per-target-ignores]]
target = "models/kimi-*"          # glob over the TARGET argument
rules = ["TA101"]
reason = "the reserved ids are filled by the remote code we deploy with"   # required
```
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokaudit.artifacts.safe_files import decode_text, read_bytes
from tokaudit.errors import InputError

KEYS = (
    "select",
    "ignore",
    "baseline",
    "per-target-ignores",
    "stacks",
    "tool-parser",
    "reasoning-parser",
    "parsers",
    "require-reason",
)
ENTRY_KEYS = ("target", "rules", "reason")


@dataclass(frozen=True)
class TargetIgnore:
    """One per-target suppression; ``index`` is its position in the array, for messages."""

    target: str
    rules: tuple[str, ...]
    reason: str
    index: int

    @property
    def key(self) -> str:
        return f"tool.tokaudit.per-target-ignores[{self.index}]"


@dataclass(frozen=True)
class Config:
    """The ``[tool.tokaudit]`` table (the defaults when there is none)."""

    path: Path | None = None
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    baseline: Path | None = None
    per_target_ignores: tuple[TargetIgnore, ...] = ()
    stacks: tuple[str, ...] = ()
    tool_parser: str | None = None
    reasoning_parser: str | None = None
    #: ``parsers``: builtin / installed / auto (None: not set)
    parsers: str | None = None
    #: Every suppression must say why: ``ignore`` (which has no reason) is refused, baseline entries need a "reason".
    require_reason: bool = False

    @property
    def name(self) -> str:
        return str(self.path) if self.path else "pyproject.toml"


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above ``start`` that has a ``[tool.tokaudit]`` table."""
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            try:
                data = read_bytes(candidate)
            except InputError:
                continue  # unreadable and not ours to judge unless it configures tokaudit, which we cannot tell
            # decided on the bytes: a pyproject.toml for tokaudit that is not UTF-8 is an error, not silently skipped
            if re.search(rb"^\s*\[\[?\s*tool\.tokaudit\b", data, re.MULTILINE):
                return candidate
    return None


def load_config(start: Path | None = None) -> Config:
    path = find_pyproject((start or Path.cwd()).resolve())
    return Config() if path is None else parse_config(path)


def _strings(value: Any, path: Path, key: str, what: str = "rule codes or names") -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise InputError(f"expected a list of {what}", file=str(path), key=key)
    return tuple(v.strip() for v in value)


def parse_config(path: Path) -> Config:
    if sys.version_info >= (3, 11):  # imported here: most runs have no config to parse
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    text = decode_text(read_bytes(path), str(path))
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        line = int(m.group(1)) if m else (text.count("\n") + 1 if "end of document" in str(exc) else None)
        message = re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", str(exc))
        raise InputError(f"invalid TOML: {message}", file=str(path), line=line) from None
    except RecursionError:
        raise InputError("invalid TOML: nested too deeply", file=str(path)) from None
    except ValueError:  # an integer beyond Python's int-string conversion limit
        m = re.search(r"[0-9_]{%d,}" % 4301, text)
        line = text.count("\n", 0, m.start()) + 1 if m else None
        raise InputError("invalid TOML: integer with too many digits", file=str(path), line=line) from None
    table = data.get("tool", {}).get("tokaudit", {})
    if not isinstance(table, dict):
        raise InputError("expected a table", file=str(path), key="tool.tokaudit")
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise InputError(
            f"unknown key {unknown[0]!r} (known: {', '.join(KEYS)})", file=str(path), key=f"tool.tokaudit.{unknown[0]}"
        )
    select = _strings(table["select"], path, "tool.tokaudit.select") if "select" in table else ()
    ignore = _strings(table["ignore"], path, "tool.tokaudit.ignore") if "ignore" in table else ()
    require_reason = table.get("require-reason", False)
    if not isinstance(require_reason, bool):
        raise InputError("expected true or false", file=str(path), key="tool.tokaudit.require-reason")
    if require_reason and ignore:
        raise InputError(
            f"require-reason is on and ignore has no reason for {ignore[0]!r}: suppress it with "
            '[[tool.tokaudit.per-target-ignores]] (target = "*", rules, reason)',
            file=str(path),
            key="tool.tokaudit.ignore[0]",
        )
    baseline = table.get("baseline")
    if baseline is not None and not (isinstance(baseline, str) and baseline):
        raise InputError("expected a file name", file=str(path), key="tool.tokaudit.baseline")
    entries = table.get("per-target-ignores", [])
    if not isinstance(entries, list):
        raise InputError(
            "expected an array of tables [[tool.tokaudit.per-target-ignores]]",
            file=str(path),
            key="tool.tokaudit.per-target-ignores",
        )
    ignores = []
    for i, entry in enumerate(entries):
        key = f"tool.tokaudit.per-target-ignores[{i}]"
        if not isinstance(entry, dict):
            raise InputError("expected a table with target, rules and reason", file=str(path), key=key)
        extra = sorted(set(entry) - set(ENTRY_KEYS))
        if extra:
            raise InputError(
                f"unknown key {extra[0]!r} (known: {', '.join(ENTRY_KEYS)})", file=str(path), key=f"{key}.{extra[0]}"
            )
        target = entry.get("target")
        if not isinstance(target, str) or not target:
            raise InputError(
                "a per-target ignore needs a 'target' (a glob over the TARGET argument)",
                file=str(path),
                key=f"{key}.target",
            )
        reason = entry.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise InputError("a per-target ignore needs a non-empty 'reason'", file=str(path), key=f"{key}.reason")
        if "rules" not in entry:
            raise InputError("a per-target ignore needs 'rules'", file=str(path), key=f"{key}.rules")
        ignores.append(TargetIgnore(target, _strings(entry["rules"], path, f"{key}.rules"), reason.strip(), i))
    stacks = _strings(table["stacks"], path, "tool.tokaudit.stacks", "stack names") if "stacks" in table else ()
    parsers = {}
    for key in ("tool-parser", "reasoning-parser"):
        value = table.get(key)
        if value is not None and not (isinstance(value, str) and value):
            raise InputError("expected a parser name", file=str(path), key=f"tool.tokaudit.{key}")
        parsers[key] = value
    mode = table.get("parsers")
    if mode is not None and mode not in ("builtin", "installed", "auto"):
        raise InputError('expected "builtin", "installed" or "auto"', file=str(path), key="tool.tokaudit.parsers")
    return Config(
        parsers=mode,
        stacks=stacks,
        tool_parser=parsers["tool-parser"],
        reasoning_parser=parsers["reasoning-parser"],
        path=path,
        select=select,
        ignore=ignore,
        baseline=(path.parent / baseline) if baseline else None,
        per_target_ignores=tuple(ignores),
        require_reason=require_reason,
    )
