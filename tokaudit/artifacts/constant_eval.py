"""Folding the constant expressions of untrusted Python source with :mod:`ast`, within a budget: string
literals, ``"|".join([...])``, f-strings, ``tuple(f"<|extra_{i}|>" for i in range(205))``, ``enumerate(..., start=N)``;
anything else is "not a constant". Nothing is imported, executed or compiled. :mod:`tokaudit.artifacts.remote_code`
reads a tokenizer's code with it; :mod:`tokaudit.artifacts.pattern` a pattern given as Python.
"""

from __future__ import annotations

import ast
from typing import Any

#: Size limits for one evaluated value: container items and string characters (a real pattern is < 2 KB,
#: Qwen's extra-token list 205 items, Llama 3's reserved block 256).
_MAX_ITEMS = 100_000
_MAX_CHARS = 100_000
#: Expression nodes evaluated per file (comprehension items included); real files need a few thousand.
_MAX_STEPS = 300_000
BUDGET_KEY = " budget"  # not an identifier: cannot collide with a name in the file


class NotConstant(Exception):
    """The expression is not a constant this evaluator understands."""


class OverBudget(NotConstant):
    """The expression exceeds the evaluator's step or size budget."""


class Budget:
    def __init__(self, steps: int = _MAX_STEPS) -> None:
        self.steps = steps

    def step(self) -> None:
        self.steps -= 1
        if self.steps < 0:
            raise OverBudget(f"over the evaluator's budget of {_MAX_STEPS} steps")


def _check_size(value: Any) -> Any:
    if isinstance(value, (str, bytes)) and len(value) > _MAX_CHARS:
        raise OverBudget(f"a string of {len(value)} characters (limit {_MAX_CHARS})")
    if isinstance(value, (tuple, list, set, dict, range)) and len(value) > _MAX_ITEMS:
        raise OverBudget(f"a collection of {len(value)} items (limit {_MAX_ITEMS})")
    return value


def evaluate(node: ast.AST, env: dict[str, Any]) -> Any:
    env[BUDGET_KEY].step()
    ev = lambda n: evaluate(n, env)  # noqa: E731 - a closure over env, as short as the calls it shortens
    if isinstance(node, ast.Constant):
        return _check_size(node.value)
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        raise NotConstant
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        if f"self.{node.attr}" in env:
            return env[f"self.{node.attr}"]
        raise NotConstant
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        _check_size(node.elts)
        items = [ev(e) for e in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else (set(items) if isinstance(node, ast.Set) else items)
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise NotConstant
        return {ev(k): ev(v) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                if value.format_spec is not None or value.conversion not in (-1, None):
                    raise NotConstant
                inner = ev(value.value)
                if not isinstance(inner, (str, int)):
                    raise NotConstant
                parts.append(str(inner))
            else:
                parts.append(ev(value))
        if sum(len(p) for p in parts) > _MAX_CHARS:
            raise OverBudget(f"an f-string longer than {_MAX_CHARS} characters")
        return "".join(parts)
    if isinstance(node, ast.BinOp):
        left, right = ev(node.left), ev(node.right)
        if isinstance(node.op, ast.Add) and type(left) is type(right) and isinstance(left, (str, int, tuple, list)):
            if not isinstance(left, int) and len(left) + len(right) > max(_MAX_CHARS, _MAX_ITEMS):
                raise OverBudget(f"a concatenation of {len(left) + len(right)} items")
            return _check_size(left + right)
        if isinstance(node.op, (ast.Sub, ast.Mult)) and all(
            isinstance(x, int) and not isinstance(x, bool) for x in (left, right)
        ):
            if abs(left) > 2**40 or abs(right) > 2**40:
                raise NotConstant
            return left - right if isinstance(node.op, ast.Sub) else left * right
        raise NotConstant
    if isinstance(node, (ast.GeneratorExp, ast.ListComp, ast.SetComp)):
        return _comprehension(node, env)
    if isinstance(node, ast.Call):
        return _call(node, env)
    raise NotConstant


def evaluate_constant(node: ast.AST, env: dict[str, Any]) -> Any:
    """Fold one constant expression with a fresh budget; ``ValueError`` when it is not understood."""
    try:
        return evaluate(node, {**env, BUDGET_KEY: Budget()})
    except (NotConstant, RecursionError, TypeError, OverflowError, MemoryError, AttributeError, KeyError) as exc:
        raise ValueError(why_not_constant(exc, node)) from None


def bind(target: ast.AST, value: Any, env: dict[str, Any]) -> None:
    if isinstance(target, ast.Name):
        env[target.id] = value
    elif isinstance(target, ast.Tuple) and isinstance(value, (tuple, list)) and len(value) == len(target.elts):
        for t, v in zip(target.elts, value):
            bind(t, v, env)
    else:
        raise NotConstant


def _comprehension(node: ast.GeneratorExp | ast.ListComp | ast.SetComp, env: dict[str, Any]) -> Any:
    if len(node.generators) != 1 or node.generators[0].is_async:
        raise NotConstant
    gen = node.generators[0]
    iterable = evaluate(gen.iter, env)
    if not isinstance(iterable, (range, tuple, list, str)):
        raise NotConstant
    _check_size(iterable)
    out = []
    for item in iterable:
        local = dict(env)
        bind(gen.target, item, local)
        if all(evaluate(cond, local) for cond in gen.ifs):
            out.append(evaluate(node.elt, local))
    return set(out) if isinstance(node, ast.SetComp) else (out if isinstance(node, ast.ListComp) else tuple(out))


def _call(node: ast.Call, env: dict[str, Any]) -> Any:
    args = [evaluate(a, env) for a in node.args]
    kwargs = {k.arg: evaluate(k.value, env) for k in node.keywords if k.arg}
    if len(kwargs) != len(node.keywords):
        raise NotConstant
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == "join" and not kwargs and len(args) == 1:
        sep = evaluate(func.value, env)
        if isinstance(sep, str) and isinstance(args[0], (tuple, list)) and all(isinstance(a, str) for a in args[0]):
            total = sum(len(a) for a in args[0]) + len(sep) * max(len(args[0]) - 1, 0)
            if total > _MAX_CHARS:
                raise OverBudget(f"a join of {total} characters (limit {_MAX_CHARS})")
            return sep.join(args[0])
        raise NotConstant
    if not isinstance(func, ast.Name):
        raise NotConstant
    name = func.id
    if name == "range" and not kwargs and 1 <= len(args) <= 3 and all(isinstance(a, int) for a in args):
        if len(args) == 3 and args[2] == 0:
            raise NotConstant  # range(a, b, 0) raises
        return _check_size(range(*args))
    if name == "len" and not kwargs and len(args) == 1 and isinstance(args[0], (str, tuple, list, set, dict, range)):
        return len(args[0])
    if name in ("tuple", "list", "set") and not kwargs and len(args) <= 1:
        items = args[0] if args else ()
        if not isinstance(items, (tuple, list, set, range, str)):
            raise NotConstant
        _check_size(items)
        return {"tuple": tuple, "list": list, "set": set}[name](items)
    if name == "enumerate" and 1 <= len(args) <= 2 and set(kwargs) <= {"start"}:
        start = kwargs.get("start", args[1] if len(args) == 2 else 0)
        if not isinstance(start, int) or not isinstance(args[0], (tuple, list, range)):
            raise NotConstant
        _check_size(args[0])
        return tuple(enumerate(args[0], start))
    if name == "dict" and not args:
        return dict(kwargs)
    raise NotConstant


NOT_CONSTANT = (
    NotConstant,
    RecursionError,
    TypeError,
    ValueError,
    OverflowError,
    MemoryError,
    AttributeError,
    KeyError,
)


def why_not_constant(exc: BaseException, node: ast.AST) -> str:
    """A short reason an expression was not understood."""
    if isinstance(exc, OverBudget) and exc.args:
        return str(exc.args[0])
    if isinstance(exc, (RecursionError, MemoryError)):
        return "nested too deeply"
    if isinstance(node, ast.Call):
        try:
            return f"the value is a call to {ast.unparse(node.func)[:60]}"
        except (RecursionError, ValueError):
            return "the value is a call"
    return f"the value is not a constant ({type(node).__name__})"
