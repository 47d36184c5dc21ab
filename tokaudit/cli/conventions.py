"""Help-text conventions every command follows, whoever adds it: usage lines and option placeholders
that say what they take (``TARGET...``, ``--jobs N``), ``-h`` as ``--help``, and ``--version``.

typer 0.28 renders a required argument as ``{name}`` in usage lines and an option without a metavar
as ``<str>``/``<int range>``; the command class here replaces both with the conventional forms, so a
new option gets a sensible placeholder without anyone remembering to set one.
"""

from __future__ import annotations

import platform
from typing import Any

import typer
from typer.core import TyperArgument, TyperCommand

#: ``-h`` works like ``--help`` on the app and, through context inheritance, on every command.
CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}

#: Libraries whose versions ``--version`` prints; the optional ones are reported present or absent.
CORE_LIBRARIES = ("tokenizers", "tiktoken", "sentencepiece", "jinja2", "minijinja", "huggingface_hub", "typer", "rich")
OPTIONAL_LIBRARIES = ("transformers", "fastokens", "mistral_common", "llama_cpp_python")


#: Placeholders of string options by name, where "TEXT" would not say what they take.
NAMED_PLACEHOLDERS = {
    "--backends": "LIST",
    "--detokenizers": "LIST",
    "--stack": "LIST",
    "--backend": "NAME",
    "--pat-str": "REGEX",
    "--prompt": "IDS",
    "--steps": "RANGE",
}


def _placeholder(param: Any) -> str:
    """What an option without an explicit metavar takes, from its name or its type."""
    for opt in param.opts:
        if opt in NAMED_PLACEHOLDERS:
            return NAMED_PLACEHOLDERS[opt]
    type_ = param.type
    choices = getattr(type_, "choices", None)
    if choices:
        return "|".join(str(getattr(c, "value", c)) for c in choices)
    name = getattr(type_, "name", "")
    if name in ("int", "integer", "int range", "integer range"):
        return "N"
    if name in ("float", "float range"):
        return "X"
    if name in ("path", "file", "filename", "directory"):
        if getattr(type_, "file_okay", True) is False:
            return "DIR"
        return "FILE" if getattr(type_, "dir_okay", True) is False else "PATH"
    return "TEXT"


class TokauditCommand(TyperCommand):
    """A typer command whose help shows ``TARGET...`` rather than ``{targets}...`` and ``--jobs N``
    rather than ``--jobs <int range>``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if param.metavar is not None:
                continue
            if isinstance(param, TyperArgument):
                param.metavar = (param.name or "arg").upper() + ("..." if param.nargs != 1 else "")
            elif not getattr(param, "is_flag", False) and not getattr(param, "count", False):
                param.metavar = _placeholder(param)

    def get_short_help_str(self, limit: int = 45) -> str:
        """The whole first sentence of the help for the root help's command list (click cuts it at ``limit``
        characters with "..."; the list wraps it instead)."""
        first = (self.help or "").strip().split("\n\n")[0]
        return " ".join(first.split())

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                var = param.make_metavar(ctx)  # without usage=True: no braces around required ones (0.28)
                pieces.append(var if param.required or var.startswith("[") else f"[{var}]")  # 0.26 adds [] itself
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces


class TokauditTyper(typer.Typer):
    """``app.command(...)`` registers a :class:`TokauditCommand` unless told otherwise."""

    def command(self, name: str | None = None, *, cls: type[TyperCommand] | None = None, **kwargs: Any) -> Any:
        return super().command(name, cls=cls or TokauditCommand, **kwargs)


def version_text() -> str:
    """``tokaudit --version``: tokaudit, Python, the libraries in use, and which optional ones are present."""
    from tokaudit import __version__
    from tokaudit.report.report import installed_version

    lines = [f"tokaudit {__version__}", f"python {platform.python_version()} ({platform.python_implementation()})"]
    for dist in CORE_LIBRARIES:
        lines.append(f"{dist} {installed_version(dist) or 'not installed'}")
    for dist in OPTIONAL_LIBRARIES:
        version = installed_version(dist)
        shown = dist.replace("_", "-") if dist == "llama_cpp_python" else dist
        lines.append(f"{shown} {version} (optional: present)" if version else f"{shown} not installed (optional)")
    return "\n".join(lines)
