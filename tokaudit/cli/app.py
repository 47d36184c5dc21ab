"""The ``tokaudit`` command: wiring only."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from tokaudit.cli.common import guard_std_streams
from tokaudit.cli.compare import compare
from tokaudit.cli.conventions import CONTEXT_SETTINGS, TokauditTyper, version_text
from tokaudit.cli.decode import decode, encode
from tokaudit.cli.diff import diff
from tokaudit.cli.explain import explain
from tokaudit.cli.fuzz import fuzz
from tokaudit.cli.replay import replay
from tokaudit.cli.scan import scan
from tokaudit.cli.template import template

app = TokauditTyper(
    name="tokaudit",
    help="Diagnose and audit LLM tokenizers: id-space gaps, special tokens, backend parity, stream replay.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings=CONTEXT_SETTINGS,
)


def _version(value: bool) -> None:
    if value:
        print(version_text())
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version of tokaudit and of the libraries it uses, and exit.")
    ] = False,
) -> None:
    """tokaudit: diagnostic and audit tool for LLM tokenizers."""


app.command("scan")(scan)
app.command("compare")(compare)
app.command("replay")(replay)
app.command("explain")(explain)
app.command("decode")(decode)
app.command("encode")(encode)
app.command("fuzz")(fuzz)
app.command("diff")(diff)
app.command("template")(template)


def main() -> None:
    guard_std_streams(sys.argv)
    app(prog_name="tokaudit")
