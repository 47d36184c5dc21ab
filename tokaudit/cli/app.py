"""The ``tokaudit`` command: wiring only.

No ``from __future__ import annotations``: typer reads ``_root``'s annotations on every run (see cli/scan.py).
"""

import sys
from importlib import import_module
from typing import Annotated, Any

from tokaudit.collector import collector_paused, own_process

# The CLI owns its process: the collector may freeze what lives to the end (a library caller's never is).
own_process()

# Importing typer and the command's modules makes ~20k objects that live until exit: collecting during
# the imports only re-scans them, so the collector waits, and then freezes them out of later collections
# (~10 ms of a scan's start-up).
with collector_paused(freeze=True):
    import typer

    from tokaudit.cli.common import guard_std_streams
    from tokaudit.cli.conventions import CONTEXT_SETTINGS, TokauditTyper, version_text

#: Command name -> (module, function), in help order. A run imports only its own command's module
#: (``scan`` never imports compare's or replay's wiring); ``app`` (tests, help) has them all.
COMMANDS = {
    "scan": ("tokaudit.cli.scan", "scan"),
    "compare": ("tokaudit.cli.compare", "compare"),
    "replay": ("tokaudit.cli.replay", "replay"),
    "explain": ("tokaudit.cli.explain", "explain"),
    "decode": ("tokaudit.cli.decode", "decode"),
    "encode": ("tokaudit.cli.decode", "encode"),
    "fuzz": ("tokaudit.cli.fuzz", "fuzz"),
    "diff": ("tokaudit.cli.diff", "diff"),
    "template": ("tokaudit.cli.template", "template"),
    "rule": ("tokaudit.cli.rule", "rule"),
    "rules": ("tokaudit.cli.rule", "rules"),
}


def build_app(names: Any = COMMANDS) -> TokauditTyper:
    """The typer app with the named commands registered."""
    app = TokauditTyper(
        name="tokaudit",
        help="Diagnose and audit LLM tokenizers: id-space gaps, special tokens, backend parity, stream replay.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        context_settings=CONTEXT_SETTINGS,
    )
    app.callback()(_root)
    for name in names:
        module, function = COMMANDS[name]
        app.command(name)(getattr(import_module(module), function))
    return app


def _command_of(argv: list[str]) -> list[str] | None:
    """The one command a command line runs, when it names one and asks for no top-level help or
    completion; None otherwise (every command is registered then)."""
    if any(name.endswith("_COMPLETE") for name in __import__("os").environ):
        return None
    for arg in argv[1:]:
        if arg.startswith("-"):
            return None  # a top-level option (--help, --version, ...) comes before any command
        return [arg] if arg in COMMANDS else None
    return None


def _version(value: bool) -> None:
    if value:
        print(version_text())
        raise typer.Exit()


def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_version,
            is_eager=True,
            help="Show the version of tokaudit and of the libraries it uses, and exit.",
        ),
    ] = False,
) -> None:
    """tokaudit: diagnostic and audit tool for LLM tokenizers."""


def __getattr__(name: str) -> Any:
    if name == "app":  # ``from tokaudit.cli.app import app``: every command
        globals()["app"] = full = build_app()
        return full
    raise AttributeError(name)


def main() -> None:
    guard_std_streams(sys.argv)
    command = _command_of(sys.argv)
    with collector_paused(freeze=True):  # the command's modules: see the imports above
        app = build_app(command or COMMANDS)
    if command != ["scan"]:
        app(prog_name="tokaudit")
        return
    try:
        app(prog_name="tokaudit")
    except SystemExit as exc:
        _exit_now(exc)
        raise


def _exit_now(exc: SystemExit) -> None:
    """End a scan without the interpreter's teardown: its models (millions of objects for a 200k vocabulary
    and its merges) are freed by the OS at once instead of object by object (~50 ms of a Llama 3 scan).
    Only when nothing waits for the teardown (no atexit callback, no other non-daemon thread) and both
    streams flush; otherwise this returns and the exit runs as usual."""
    import atexit
    import os
    import threading

    code = exc.code
    if code is not None and not isinstance(code, int):
        return  # a message: the interpreter prints it
    pending = getattr(atexit, "_ncallbacks", None)
    if (
        pending is None
        or pending()
        or any(not t.daemon for t in threading.enumerate() if t is not threading.main_thread())
    ):
        return
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return
    os._exit(code or 0)
