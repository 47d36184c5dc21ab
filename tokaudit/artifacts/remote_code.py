"""Remote tokenizer code (``tokenization_*.py``), read statically with :mod:`ast`.

The file is never imported, executed or compiled to bytecode. A small evaluator folds the
constant expressions such files use to declare their pre-tokenizer pattern and special tokens
(string literals, ``"|".join([...])``, f-strings, ``tuple(f"<|extra_{i}|>" for i in range(205))``,
``enumerate(..., start=N)``); anything else is simply not understood.

The pattern is looked for where real files put it: the ``pat_str=`` keyword (or second argument) of
``tiktoken.Encoding(...)`` (GLM-4, Qwen, Llama 3), ``self.pat_str = ...`` in a method, a class
attribute or a local in ``__init__``, or a module constant such as Qwen's ``PAT_STR``. The evaluator
has a step budget per file and size limits per value: whatever exceeds them is "not understood",
recorded with its line so that a rule can say so.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokaudit.artifacts.constant_eval import BUDGET_KEY, NOT_CONSTANT, Budget, OverBudget, evaluate, why_not_constant
from tokaudit.artifacts.safe_files import read_text
from tokaudit.records import Provenance

_PATTERN_NAME = re.compile(r"^_*(pat|pat_str|pattern|regex_pattern|pre_tokenize_regex)$", re.IGNORECASE)
_TOKEN_SHAPE = re.compile(r"^(<\|.*\|>|<[^<>\s]+>|\[[^\[\]\s]+\])$")


@dataclass(frozen=True)
class SpecialTokenList:
    """Special tokens a remote-code file declares; ``ids`` is empty when it gives none."""

    name: str
    tokens: tuple[str, ...]
    ids: tuple[int, ...]
    source: Provenance


@dataclass(frozen=True)
class RemoteCode:
    """What a ``tokenization_*.py`` sets, read with ``ast`` (never run)."""

    path: Path
    classes: tuple[str, ...]
    pat_str: str | None
    pat_str_source: Provenance | None
    num_reserved_special_tokens: int | None
    num_reserved_source: Provenance | None
    #: f-string templates for placeholder names, e.g. ``<|reserved_token_{}|>``.
    reserved_templates: tuple[str, ...]
    special_token_lists: tuple[SpecialTokenList, ...]
    #: A syntax error makes the file unusable for transformers too; kept, not raised.
    syntax_error: str | None = None
    #: Where the file sets its pattern in a way the evaluator cannot read (set only when ``pat_str`` is None).
    pat_str_unreadable: Provenance | None = None
    #: Why, e.g. "the value is a call to re.compile" or "over the evaluator's size budget".
    pat_str_unreadable_reason: str | None = None
    #: Assignments the evaluator gave up on because of its budget: (where, what) pairs.
    not_understood: tuple[tuple[Provenance, str], ...] = ()
    #: A list of special-token texts built inside a function whose length is ``num_reserved_special_tokens``: the
    #: names of the reserved slots in order (Meta's llama_models Tokenizer.__init__: the specials, then the
    #: f-string reserved names, given ids from the rank count on).
    reserved_names: SpecialTokenList | None = None

    @property
    def name(self) -> str:
        return self.path.name


def _reserved_templates(tree: ast.AST) -> tuple[str, ...]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = "".join(
                str(v.value) if isinstance(v, ast.Constant) else "{}" for v in node.values
            )  # an f-string's constants are str
            if (
                "{}" in text
                and re.search(r"reserved|extra|unused|special", text, re.IGNORECASE)
                and _TOKEN_SHAPE.match(text)
            ):
                out.append(text)
    return tuple(dict.fromkeys(out))


def _as_special_list(name: str, value: Any, source: Provenance) -> SpecialTokenList | None:
    if isinstance(value, dict) and value:
        if all(isinstance(k, str) and isinstance(v, int) for k, v in value.items()):
            return SpecialTokenList(name, tuple(value), tuple(value.values()), source)
        if all(isinstance(k, int) and isinstance(v, str) for k, v in value.items()):
            return SpecialTokenList(name, tuple(value.values()), tuple(value), source)
        return None
    if isinstance(value, (tuple, list, set)) and value:
        items = sorted(value, key=repr) if isinstance(value, set) else list(value)
        if all(isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], int) and isinstance(p[1], str) for p in items):
            return SpecialTokenList(name, tuple(p[1] for p in items), tuple(p[0] for p in items), source)
        if "special" in name.lower() and all(isinstance(t, str) and _TOKEN_SHAPE.match(t) for t in items):
            return SpecialTokenList(name, tuple(items), (), source)
    return None


def _encoding_pattern_arg(call: ast.Call) -> ast.AST | None:
    """The pattern argument of ``tiktoken.Encoding(name, pat_str, ...)`` or of any call with ``pat_str=``."""
    for kw in call.keywords:
        if kw.arg == "pat_str":
            return kw.value
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else (func.id if isinstance(func, ast.Name) else "")
    if name == "Encoding" and len(call.args) >= 2:
        return call.args[1]
    return None


def parse_remote_code(path: Path) -> RemoteCode:
    text = read_text(path)
    try:
        tree = ast.parse(text, filename=path.name)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        line = getattr(exc, "lineno", None)
        what = getattr(exc, "msg", None) or (
            "nested too deeply to parse" if isinstance(exc, (RecursionError, MemoryError)) else exc
        )
        return RemoteCode(path, (), None, None, None, None, (), (), f"line {line}: {exc.__class__.__name__}: {what}")

    reserved: tuple[int, Provenance] | None = None
    lists: dict[str, SpecialTokenList] = {}
    classes: list[str] = []
    #: (priority, order, value or None, provenance, reason); priority 0: the Encoding's pat_str argument,
    #: 1: self.<pattern name> = ..., 2: a pattern-named variable or constant.
    patterns: list[tuple[int, int, str | None, Provenance, str | None]] = []
    not_understood: list[tuple[Provenance, str]] = []
    budget = Budget()
    defined: dict[str, tuple[str, Provenance]] = {}
    uses_tiktoken = re.search(r"^\s*(import tiktoken|from tiktoken)|\bEncoding\(", text, re.MULTILINE) is not None

    def note_pattern(priority: int, node: ast.AST, env: dict[str, Any], line: int, key: str) -> None:
        source = Provenance(path.name, line=line, key=key)
        try:
            value = evaluate(node, env)
        except NOT_CONSTANT as exc:
            patterns.append((priority, len(patterns), None, source, why_not_constant(exc, node)))
            if isinstance(exc, OverBudget):
                not_understood.append((source, why_not_constant(exc, node)))
            return
        if isinstance(value, str):
            ref = f"self.{node.attr}" if isinstance(node, ast.Attribute) else getattr(node, "id", None)
            if priority == 0 and ref in defined and defined[ref][0] == value:
                source = defined[ref][1]  # pat_str=self.pat_str: point at where the value is written
            elif priority > 0:
                defined[key] = (value, source)
                if not key.startswith("self."):
                    defined.setdefault(f"self.{key}", (value, source))
            patterns.append((priority, len(patterns), value, source, None))
        else:
            patterns.append(
                (priority, len(patterns), None, source, f"the value is a {type(value).__name__}, not a string")
            )

    def scan_calls(stmt: ast.stmt, env: dict[str, Any]) -> None:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call):
                arg = _encoding_pattern_arg(node)
                if arg is not None and uses_tiktoken:
                    func = (
                        node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "Encoding")
                    )
                    note_pattern(0, arg, env, node.lineno, f"{func[:40]}(pat_str=)")

    def visit_body(body: list[ast.stmt], env: dict[str, Any], top: bool) -> None:
        """``top``: module or class level, where special-token lists and reserved counts are declared."""
        nonlocal reserved
        for stmt in body:
            if isinstance(stmt, ast.ClassDef):
                classes.append(stmt.name)
                visit_body(stmt.body, dict(env), top)
                continue
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit_body(stmt.body, dict(env), False)
                continue
            if isinstance(stmt, (ast.If, ast.With, ast.AsyncWith, ast.Try, ast.For, ast.While)):
                for part in ("body", "orelse", "finalbody"):
                    visit_body(getattr(stmt, part, []) or [], env, top)
                for handler in getattr(stmt, "handlers", []) or []:
                    visit_body(handler.body, env, top)
                continue
            scan_calls(stmt, env)
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target, value_node = stmt.targets[0], stmt.value
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                target, value_node = stmt.target, stmt.value
            else:
                continue
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                name, priority = f"self.{target.attr}", 1
            elif isinstance(target, ast.Name):
                name, priority = target.id, 2
            else:
                continue
            # outside tiktoken-based files, only module and class constants name a pattern (as before)
            if _PATTERN_NAME.match(name.removeprefix("self.")) and (uses_tiktoken or (top and priority == 2)):
                note_pattern(priority, value_node, env, stmt.lineno, name)
                value = patterns[-1][2]
                if value is None:
                    env.pop(name, None)
                    continue
                env[name] = value
                if top and priority == 2:
                    env[f"self.{name}"] = value  # a class attribute, read as self.pat_str
                continue
            try:
                value = evaluate(value_node, env)
            except NOT_CONSTANT as exc:
                env.pop(name, None)
                if isinstance(exc, OverBudget):
                    not_understood.append(
                        (Provenance(path.name, line=stmt.lineno, key=name), why_not_constant(exc, value_node))
                    )
                continue
            env[name] = value
            if isinstance(value, str):  # a constant that may be passed on as pat_str: remember where it is written
                defined[name] = (value, Provenance(path.name, line=stmt.lineno, key=name))
            if not top and "special" in name.lower() and isinstance(value, list) and value:
                local = _as_special_list(name, value, Provenance(path.name, line=stmt.lineno, key=name))
                if local is not None and not local.ids:
                    locals_found.append(local)
            if priority == 2 and top:
                env[f"self.{name}"] = value
            if not top or priority != 2:
                continue
            source = Provenance(path.name, line=stmt.lineno, key=name)
            if name.lower() == "num_reserved_special_tokens" and isinstance(value, int) and not isinstance(value, bool):
                reserved = (value, source)
            else:
                found = _as_special_list(name, value, source)
                if found is not None:
                    lists[name] = found

    locals_found: list[SpecialTokenList] = []
    try:
        visit_body(tree.body, {BUDGET_KEY: budget}, True)
    except (RecursionError, MemoryError):
        not_understood.append((Provenance(path.name), "nested too deeply to read"))
    readable = sorted((p for p in patterns if p[2] is not None), key=lambda p: (p[0], p[1]))
    unreadable = sorted((p for p in patterns if p[2] is None), key=lambda p: (p[0], p[1]))
    pat: tuple[str, Provenance] | None = None
    bad: tuple[Provenance, str] | None = None
    # the Encoding's own argument decides when there is one: a readable constant elsewhere may not be what it uses
    encoding_args = [p for p in patterns if p[0] == 0]
    if encoding_args and all(p[2] is None for p in encoding_args):
        bad = (encoding_args[0][3], encoding_args[0][4] or "not understood")
    elif readable:
        pat = (readable[0][2], readable[0][3])  # type: ignore[assignment]  # readable: the value is a str
    elif unreadable:
        bad = (unreadable[0][3], unreadable[0][4] or "not understood")
    elif uses_tiktoken:
        bad = (Provenance(path.name), "it builds a tiktoken Encoding but sets no pattern tokaudit can find")
    return RemoteCode(
        path=path,
        classes=tuple(classes),
        pat_str=pat[0] if pat else None,
        pat_str_source=pat[1] if pat else None,
        num_reserved_special_tokens=reserved[0] if reserved else None,
        num_reserved_source=reserved[1] if reserved else None,
        reserved_templates=_reserved_templates(tree),
        special_token_lists=tuple(lists.values()),
        pat_str_unreadable=bad[0] if bad else None,
        pat_str_unreadable_reason=bad[1] if bad else None,
        not_understood=tuple(not_understood),
        reserved_names=next(
            (lst for lst in reversed(locals_found) if reserved and len(lst.tokens) == reserved[0]), None
        ),
    )
