"""Remote tokenizer code (``tokenization_*.py``), read statically with :mod:`ast`.

The file is never imported, executed or compiled to bytecode. A small evaluator folds the
constant expressions such files use to declare their pre-tokenizer pattern and special tokens
(string literals, ``"|".join([...])``, f-strings, ``tuple(f"<|extra_{i}|>" for i in range(205))``,
``enumerate(..., start=N)``); anything else is simply not understood.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokaudit.artifacts.base import Provenance, read_text

_MAX_ITEMS = 1_000_000
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

    @property
    def name(self) -> str:
        return self.path.name


class _Unknown(Exception):
    """The expression is not a constant this evaluator understands."""


def _check_size(value: Any) -> Any:
    if isinstance(value, (str, bytes, tuple, list, set, dict)) and len(value) > _MAX_ITEMS:
        raise _Unknown
    return value


def _evaluate(node: ast.AST, env: dict[str, Any]) -> Any:
    ev = lambda n: _evaluate(n, env)  # noqa: E731
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        raise _Unknown
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = [ev(e) for e in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else (set(items) if isinstance(node, ast.Set) else items)
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise _Unknown
        return {ev(k): ev(v) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                if value.format_spec is not None or value.conversion not in (-1, None):
                    raise _Unknown
                inner = ev(value.value)
                if not isinstance(inner, (str, int)):
                    raise _Unknown
                parts.append(str(inner))
            else:
                parts.append(ev(value))
        return "".join(parts)
    if isinstance(node, ast.BinOp):
        left, right = ev(node.left), ev(node.right)
        if isinstance(node.op, ast.Add) and type(left) is type(right) and isinstance(left, (str, int, tuple, list)):
            return _check_size(left + right)
        if isinstance(node.op, (ast.Sub, ast.Mult)) and all(isinstance(x, int) and not isinstance(x, bool) for x in (left, right)):
            if abs(left) > 2**40 or abs(right) > 2**40:
                raise _Unknown
            return left - right if isinstance(node.op, ast.Sub) else left * right
        raise _Unknown
    if isinstance(node, (ast.GeneratorExp, ast.ListComp, ast.SetComp)):
        return _comprehension(node, env)
    if isinstance(node, ast.Call):
        return _call(node, env)
    raise _Unknown


def _bind(target: ast.AST, value: Any, env: dict[str, Any]) -> None:
    if isinstance(target, ast.Name):
        env[target.id] = value
    elif isinstance(target, ast.Tuple) and isinstance(value, (tuple, list)) and len(value) == len(target.elts):
        for t, v in zip(target.elts, value):
            _bind(t, v, env)
    else:
        raise _Unknown


def _comprehension(node: ast.GeneratorExp | ast.ListComp | ast.SetComp, env: dict[str, Any]) -> Any:
    if len(node.generators) != 1 or node.generators[0].is_async:
        raise _Unknown
    gen = node.generators[0]
    iterable = _evaluate(gen.iter, env)
    if not isinstance(iterable, (range, tuple, list, str)) or len(iterable) > _MAX_ITEMS:
        raise _Unknown
    out = []
    for item in iterable:
        local = dict(env)
        _bind(gen.target, item, local)
        if all(_evaluate(cond, local) for cond in gen.ifs):
            out.append(_evaluate(node.elt, local))
    return set(out) if isinstance(node, ast.SetComp) else (out if isinstance(node, ast.ListComp) else tuple(out))


def _call(node: ast.Call, env: dict[str, Any]) -> Any:
    args = [_evaluate(a, env) for a in node.args]
    kwargs = {k.arg: _evaluate(k.value, env) for k in node.keywords if k.arg}
    if len(kwargs) != len(node.keywords):
        raise _Unknown
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == "join" and not kwargs and len(args) == 1:
        sep = _evaluate(func.value, env)
        if isinstance(sep, str) and isinstance(args[0], (tuple, list)) and all(isinstance(a, str) for a in args[0]):
            return _check_size(sep.join(args[0]))
        raise _Unknown
    if not isinstance(func, ast.Name):
        raise _Unknown
    name = func.id
    if name == "range" and not kwargs and 1 <= len(args) <= 3 and all(isinstance(a, int) for a in args):
        r = range(*args)
        if len(r) > _MAX_ITEMS:
            raise _Unknown
        return r
    if name in ("tuple", "list", "set") and not kwargs and len(args) <= 1:
        items = args[0] if args else ()
        if not isinstance(items, (tuple, list, set, range, str)):
            raise _Unknown
        return {"tuple": tuple, "list": list, "set": set}[name](items)
    if name == "enumerate" and 1 <= len(args) <= 2 and set(kwargs) <= {"start"}:
        start = kwargs.get("start", args[1] if len(args) == 2 else 0)
        if not isinstance(start, int) or not isinstance(args[0], (tuple, list, range)):
            raise _Unknown
        return tuple(enumerate(args[0], start))
    if name == "dict" and not args:
        return dict(kwargs)
    raise _Unknown


def _reserved_templates(tree: ast.AST) -> tuple[str, ...]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            if "{}" in text and re.search(r"reserved|extra|unused|special", text, re.IGNORECASE) and _TOKEN_SHAPE.match(text):
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


def parse_remote_code(path: Path) -> RemoteCode:
    text = read_text(path)
    try:
        tree = ast.parse(text, filename=path.name)
    except (SyntaxError, ValueError, RecursionError) as exc:
        line = getattr(exc, "lineno", None)
        return RemoteCode(path, (), None, None, None, None, (), (), f"line {line}: {exc.__class__.__name__}: {getattr(exc, 'msg', exc)}")

    pat: tuple[str, Provenance] | None = None
    reserved: tuple[int, Provenance] | None = None
    lists: dict[str, SpecialTokenList] = {}
    classes: list[str] = []

    def visit_body(body: list[ast.stmt], env: dict[str, Any]) -> None:
        nonlocal pat, reserved
        for stmt in body:
            if isinstance(stmt, ast.ClassDef):
                classes.append(stmt.name)
                visit_body(stmt.body, dict(env))
                continue
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target, value_node = stmt.targets[0], stmt.value
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                target, value_node = stmt.target, stmt.value
            else:
                continue
            if not isinstance(target, ast.Name):
                continue
            try:
                value = _evaluate(value_node, env)
            except (_Unknown, RecursionError, TypeError, ValueError, OverflowError, MemoryError):
                env.pop(target.id, None)
                continue
            env[target.id] = value
            source = Provenance(path.name, line=stmt.lineno, key=target.id)
            if pat is None and isinstance(value, str) and _PATTERN_NAME.match(target.id):
                pat = (value, source)
            elif target.id.lower() == "num_reserved_special_tokens" and isinstance(value, int):
                reserved = (value, source)
            else:
                found = _as_special_list(target.id, value, source)
                if found is not None:
                    lists[target.id] = found

    try:
        visit_body(tree.body, {})
    except RecursionError:
        pass
    return RemoteCode(
        path=path,
        classes=tuple(classes),
        pat_str=pat[0] if pat else None,
        pat_str_source=pat[1] if pat else None,
        num_reserved_special_tokens=reserved[0] if reserved else None,
        num_reserved_source=reserved[1] if reserved else None,
        reserved_templates=_reserved_templates(tree),
        special_token_lists=tuple(lists.values()),
    )
