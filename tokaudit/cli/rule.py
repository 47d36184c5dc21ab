"""``tokaudit rule CODE`` and ``tokaudit rules``: the rule pages of docs/rules, from the command line."""

from __future__ import annotations

import json
import sys
from enum import Enum
from typing import Annotated

import typer

from tokaudit.cli.common import DebugOpt, handle_errors


class RuleFormat(str, Enum):
    rich = "rich"
    json = "json"


RuleFormatOpt = Annotated[
    RuleFormat,
    typer.Option("--format", "-f", help="Output format: the page as Markdown (rich) or JSON.", case_sensitive=False),
]


def rule(
    code: Annotated[
        str, typer.Argument(metavar="CODE", help="A finding code (TA101) or name (vocab-gap).", show_default=False)
    ],
    fmt: RuleFormatOpt = RuleFormat.rich,
    debug: DebugOpt = False,
) -> None:
    """Show a rule's page: what it finds, why it breaks serving, which stacks, how to fix it, an example.

    \b
    Examples:
      tokaudit rule TA101
      tokaudit rule vocab-gap
      tokaudit rule TA802 --format json
    """
    with handle_errors(debug):
        from tokaudit.errors import InputError
        from tokaudit.rule_docs import close_match, find_code, rule_json, rule_page

        found = find_code(code)
        if found is None:
            hint = close_match(code)
            raise InputError(f"unknown rule {code!r}" + (f" (did you mean {hint}?)" if hint else ""), key="CODE")
        if fmt is RuleFormat.json:
            sys.stdout.write(json.dumps(rule_json(found), ensure_ascii=False) + "\n")
            return
        page = rule_page(found)
        if page is None:
            raise InputError(f"no page for {found}: this installation has no rule pages (docs/rules)", key="CODE")
        sys.stdout.write(page.text if page.text.endswith("\n") else page.text + "\n")


def rules(
    fmt: RuleFormatOpt = RuleFormat.rich,
    debug: DebugOpt = False,
) -> None:
    """List every rule: code, name, default severity and what it finds (tokaudit rule CODE shows one's page).

    \b
    Examples:
      tokaudit rules
      tokaudit rules -f json | jq -r '.[] | select(.severity == "error").code'
    """
    with handle_errors(debug):
        from tokaudit.catalog import CATALOG
        from tokaudit.rule_docs import rule_json

        if fmt is RuleFormat.json:
            sys.stdout.write(json.dumps([rule_json(code) for code in sorted(CATALOG)], ensure_ascii=False) + "\n")
            return
        width = max(len(info.name) for info in CATALOG.values())
        for code, info in sorted(CATALOG.items()):
            sys.stdout.write(f"{code}  {info.name:<{width}}  {info.severity:<7}  {info.summary}\n")
