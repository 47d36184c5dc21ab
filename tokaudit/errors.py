"""Errors about the user's input. Each becomes one line on stderr and exit code 2."""

from __future__ import annotations


class InputError(Exception):
    """A target, file, stream or option that cannot be used as given.

    ``file`` and ``line``/``key`` are rendered in front of the message so that the one line on
    stderr says exactly where the problem is.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        key: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.key = key

    def __str__(self) -> str:
        return _one_line(self._text())

    def _text(self) -> str:
        where = self.file or ""
        if self.file and self.line is not None:
            where = f"{self.file}:{self.line}"
        if self.key is not None:
            where = f"{where} (key {self.key})" if where else f"key {self.key}"
        return f"{where}: {self.message}" if where else self.message


def chosen_names(value: str, choices: tuple[str, ...], what: str, key: str) -> list[str]:
    """The names of a comma-separated option value, each one of ``choices`` (else one InputError naming the first
    unknown one and the choices)."""
    names = [n.strip() for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in choices]
    if unknown:
        raise InputError(f"unknown {what} {unknown[0]!r} (choose from {', '.join(choices)})", key=key)
    return names


#: Longest error line: data quoted from a file (a 1 MB word) must not make a 1 MB line.
MAX_LINE = 400


def shorten(text: str, limit: int = 80) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis, for quoting input data in a message."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _one_line(text: str) -> str:
    """Keys and messages can carry data from the file: keep the error on one short line."""
    text = text.replace("\r", "\\r").replace("\n", "\\n")
    return shorten(text, MAX_LINE)
