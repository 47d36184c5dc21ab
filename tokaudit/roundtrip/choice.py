"""What a deploy names for the parser round trip (stacks, parsers, chat-template kwargs) and the TA820-TA825 codes:
light enough for the scan's rule module to import without the round trip itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tokaudit.errors import InputError
from tokaudit.parsers.reasoning_table import reasoning_parsers
from tokaudit.parsers.tool_table import tool_parsers
from tokaudit.report.finding import Code, catalog_codes
from tokaudit.template.stacks import PROFILES

#: The stacks whose round trip is computed: the profiles that name parser data (Ollama's rows are data only: its
#: renderer is a Go template, no profile renders it).
ROUNDTRIP_STACKS = tuple(p.id for p in PROFILES if p.parsers)

#: ``--parsers``: tokaudit's grammars, the stacks' installed classes (exit 2 when a chosen stack does not import),
#: or the installed classes where a stack imports and the grammars elsewhere
PARSERS_MODES = ("builtin", "installed", "auto")

CODES: dict[str, Code] = {c.code: c for c in catalog_codes("TA820", "TA821", "TA822", "TA823", "TA824", "TA825")}


@dataclass(frozen=True)
class ParserChoice:
    """What a deploy names: its stacks (None: every stack whose round trip is computed) and parsers."""

    stacks: tuple[str, ...] | None = None
    tool_parser: str | None = None
    reasoning_parser: str | None = None
    #: the request's chat_template_kwargs (``thinking``, ``enable_thinking``...), as (key, value) pairs
    kwargs: tuple[tuple[str, Any], ...] = ()
    #: ``--parsers``: builtin, installed or auto (:mod:`tokaudit.roundtrip.installed`)
    parsers: str = "builtin"
    #: per stack, whose parsers run ("built-in", "installed (vllm 0.33.0)"), as resolved by :func:`resolve_parsers`
    grammars: tuple[tuple[str, str], ...] = ()

    def grammar(self, stack: str) -> str:
        return dict(self.grammars).get(stack, "built-in")

    @property
    def named(self) -> bool:
        return self.tool_parser is not None or self.reasoning_parser is not None

    def chosen_stacks(self) -> list[str]:
        names = list(self.stacks) if self.stacks else list(ROUNDTRIP_STACKS)
        return [s for s in names if s in ROUNDTRIP_STACKS]


def parse_kwargs(value: str | None) -> tuple[tuple[str, Any], ...]:
    """``--chat-template-kwargs '{"thinking": true}'``: a JSON object (exit 2 otherwise)."""
    if not value:
        return ()
    import json

    try:
        data = json.loads(value)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"invalid JSON: {exc}", key="--chat-template-kwargs") from None
    if not isinstance(data, dict):
        raise InputError("expected a JSON object", key="--chat-template-kwargs")
    return tuple(data.items())


def check_choice(
    choice: ParserChoice, where: str = "--stack", known_stacks: tuple[str, ...] = ROUNDTRIP_STACKS
) -> None:
    """Exit 2 on a stack name not in ``known_stacks`` (``template`` and ``scan`` pass every stack profile: a stack
    without a round trip is rendered, not parsed), or a parser name no selected stack has."""
    for s in choice.stacks or ():
        if s not in known_stacks:
            raise InputError(
                f"unknown stack {s!r} for the parser round trip (choose from {', '.join(known_stacks)})", key=where
            )
    stacks = choice.chosen_stacks()
    if choice.named and not stacks:
        option = "--tool-parser" if choice.tool_parser is not None else "--reasoning-parser"
        raise InputError(
            f"no selected stack has a parser round trip (choose from {', '.join(ROUNDTRIP_STACKS)})", key=option
        )
    if choice.tool_parser is not None:
        known = sorted({p.name for s in stacks for p in tool_parsers(s)})
        if choice.tool_parser not in known:
            raise InputError(
                f"unknown tool parser {choice.tool_parser!r} for {', '.join(stacks)} (choose from {', '.join(known)})",
                key="--tool-parser",
            )
    if choice.reasoning_parser is not None:
        known = sorted({p.name for s in stacks for p in reasoning_parsers(s)})
        if choice.reasoning_parser not in known:
            raise InputError(
                f"unknown reasoning parser {choice.reasoning_parser!r} for {', '.join(stacks)} (choose from "
                f"{', '.join(known)})",
                key="--reasoning-parser",
            )


def resolve_parsers(choice: ParserChoice) -> ParserChoice:
    """The choice with each stack's parsers resolved (``--parsers installed|auto`` imports the stacks in a worker
    process; ``installed`` exits 2 on a stack that does not import)."""
    if choice.parsers == "builtin" or not choice.chosen_stacks():
        return choice
    from dataclasses import replace

    from tokaudit.roundtrip.installed import grammars

    return replace(choice, grammars=tuple(grammars(choice.chosen_stacks(), choice.parsers).items()))


def parsers_mode(value: str | None, config_value: str | None) -> str:
    """``--parsers`` (exit 2 on another value), else ``[tool.tokaudit] parsers`` (checked when read), else builtin."""
    if value is not None and value not in PARSERS_MODES:
        raise InputError(f"unknown parsers mode {value!r} (choose from {', '.join(PARSERS_MODES)})", key="--parsers")
    return value or config_value or "builtin"
