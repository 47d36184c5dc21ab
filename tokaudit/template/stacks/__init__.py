"""The serving-stack profiles: one module per stack, each a declarative :class:`StackProfile` naming the version
and source it mirrors (see ARCHITECTURE.md, "A stack profile")."""

from __future__ import annotations

from tokaudit.errors import InputError
from tokaudit.template.stacks import dynamo, llamacpp, mistralrs, sglang, smg, tgi, transformers, vllm
from tokaudit.template.stacks.profile import StackProfile

#: Every profile, in report order.
PROFILES: tuple[StackProfile, ...] = tuple(
    m.PROFILE for m in (transformers, vllm, sglang, smg, tgi, mistralrs, llamacpp, dynamo)
)
STACK_NAMES: tuple[str, ...] = tuple(p.id for p in PROFILES)
_BY_ID = {p.id: p for p in PROFILES}


def profile(stack: str) -> StackProfile:
    return _BY_ID[stack]


def parse_stacks(
    value: str | list[str] | tuple[str, ...] | None, key: str = "--stack", file: str | None = None
) -> tuple[str, ...]:
    """``--stack NAME[,NAME]`` (or ``stacks = [...]``): the stacks in report order; None or empty: all."""
    if value is None:
        return STACK_NAMES
    names = [n.strip() for n in (value.split(",") if isinstance(value, str) else value) if n.strip()]
    unknown = [n for n in names if n not in _BY_ID]
    if unknown or not names:
        bad = unknown[0] if unknown else str(value)
        raise InputError(f"unknown stack {bad!r} (choose from {', '.join(STACK_NAMES)})", key=key, file=file)
    chosen = set(names)
    return tuple(n for n in STACK_NAMES if n in chosen)
