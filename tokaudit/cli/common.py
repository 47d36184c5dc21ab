"""Options shared by every command, error handling and report output."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated, TextIO

import typer

from tokaudit.errors import InputError
from tokaudit.report.formats import FORMATS, RenderOptions
from tokaudit.report.report import Report
from tokaudit.cli.report_stream import ValidText, printable
from tokaudit.report.text import plural, safe, severity_counts


class OutputFormat(str, Enum):
    """``--format``'s choices: the names of ``report/formats.py``'s FORMATS, in its order (tests/test_tooling.py)."""

    rich = "rich"
    json = "json"
    sarif = "sarif"
    junit = "junit"
    markdown = "markdown"
    github = "github"
    #: one JSON object per line: per target for scan (written as each finishes), else the json report
    jsonl = "jsonl"
    #: one line per finding, ``path:line:col: CODE name message`` (as ruff's concise output)
    concise = "concise"


class Color(str, Enum):
    auto = "auto"
    always = "always"
    never = "never"


class FailOn(str, Enum):
    error = "error"
    warning = "warning"
    note = "note"
    never = "never"


TargetArg = Annotated[
    str,
    typer.Argument(
        metavar="TARGET",
        help="Model directory, tokenizer file, or Hugging Face repo id (org/name).",
        show_default=False,
    ),
]
#: ``--format``'s help: each format's help line from the table, in its order.
FORMAT_HELP = "Output format: " + "; ".join(f"{name}: {f.help}" for name, f in FORMATS.items()) + "."
FormatOpt = Annotated[OutputFormat, typer.Option("--format", "-f", help=FORMAT_HELP, case_sensitive=False)]
OutputOpt = Annotated[
    Path | None,
    typer.Option(
        "--output",
        "-o",
        metavar="FILE",
        help="Write the report to this file instead of stdout (- is stdout).",
        dir_okay=False,
    ),
]
ColorOpt = Annotated[
    Color,
    typer.Option(
        "--color",
        help="Colour the rich report: auto (a terminal, unless NO_COLOR is set; FORCE_COLOR forces it), "
        "always or never.",
        case_sensitive=False,
    ),
]
FailOnOpt = Annotated[
    FailOn, typer.Option("--fail-on", help="Lowest severity that makes the exit code 1.", case_sensitive=False)
]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show Python tracebacks for errors.")]
QuietOpt = Annotated[
    bool,
    typer.Option(
        "--quiet", "-q", help="Findings and the verdict only: no tables, no progress, no summary line on stderr."
    ),
]
RevisionOpt = Annotated[
    str | None,
    typer.Option("--revision", metavar="REV", help="Branch, tag or commit for a Hugging Face repo id target."),
]
SelectOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--select",
        metavar="RULES",
        help="Only these rules: codes, names or code prefixes (TA2), comma-separated or repeated.",
    ),
]
IgnoreOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--ignore",
        metavar="RULES",
        help="Skip these rules: codes, names or code prefixes; comma-separated or repeated.",
    ),
]
StackOpt = Annotated[
    str | None,
    typer.Option(
        "--stack",
        help="Only these serving stacks (comma-separated): transformers, vllm, sglang, smg, tgi, mistral.rs, "
        "llama.cpp, dynamo; the template findings and the exit code concern them alone (the parser round trip "
        "runs for vllm, sglang, llama.cpp among them). Default: every stack, or [tool.tokaudit] stacks.",
    ),
]
ParsersOpt = Annotated[
    str | None,
    typer.Option(
        "--parsers",
        help="Whose parsers the round trip runs: builtin (tokaudit's grammars, default), installed (the "
        "installed vLLM/SGLang parser classes; exit 2 if a chosen stack does not import) or auto (installed where "
        "importable). TOKAUDIT_STACK_PYTHON names another interpreter to import them from. Default: [tool.tokaudit] "
        "parsers.",
    ),
]
BaselineOpt = Annotated[
    Path | None,
    typer.Option("--baseline", help="A previous --format json report: only findings not in it count.", dir_okay=False),
]
SkipSpecialOpt = Annotated[
    bool,
    typer.Option(
        "--skip-special-tokens/--keep-special-tokens",
        help="Leave special tokens out of the text, as servers do by default (vLLM, TGI, SGLang, smg); "
        "--keep-special-tokens shows them. The token table lists every id either way.",
    ),
]
GgufOpt = Annotated[
    Path | None,
    typer.Option(
        "--gguf",
        help="A GGUF of the model for the llama.cpp and transformers-gguf backends (default: the target's own, "
        "or the one GGUF beside the HF files).",
    ),
]
JobsOpt = Annotated[
    int, typer.Option("--jobs", "-j", metavar="N", help="Targets checked in parallel (threads).", min=1)
]
AlsoOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--also",
        metavar="FORMAT=FILE",
        help="Also write the report in FORMAT to FILE (repeatable): one run, "
        "several reports, e.g. --format sarif -o tokaudit.sarif --also markdown=summary.md --also junit=junit.xml.",
    ),
]


#: Upper bounds of numeric options: beyond them a run cannot end in reasonable time or memory.
OPTION_LIMITS = {"--concurrency": 64, "--max-length": 4096, "--iterations": 100_000, "--examples": 1000}
#: Longest TEXT (argument or stdin) ``encode`` takes: its JSON lists every token (~75k here, 40 MB).
MAX_TEXT_BYTES = 256 * 1024


#: Ids ``decode`` takes: it shows (and its JSON lists) one row per id; 250k rows took 16 s and 324 MiB.
MAX_DECODE_IDS = 200_000


def within_limit(value: int, option: str) -> int:
    """``value`` when it is at most the option's limit (OPTION_LIMITS), else an error naming both."""
    limit = OPTION_LIMITS[option]
    if value > limit:
        raise InputError(f"{value} is over the limit of {limit}", key=option)
    return value


def read_text_arg(text: str, name: str = "TEXT") -> str:
    """A text argument, or stdin for ``-``, at most MAX_TEXT_BYTES of UTF-8."""
    if text == "-":
        if sys.stdin is None:
            raise InputError("stdin is closed", key=name)
        raw = getattr(sys.stdin, "buffer", None)  # a text-only stdin (tests, embedding) has none
        data = (
            raw.read(MAX_TEXT_BYTES + 1)
            if raw is not None
            else sys.stdin.read(MAX_TEXT_BYTES + 1).encode("utf-8", "surrogateescape")
        )
        if len(data) > MAX_TEXT_BYTES:
            raise InputError(f"stdin is over the limit of {MAX_TEXT_BYTES >> 10} KiB", key=name)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"stdin is not UTF-8 (byte {exc.start})", key=name) from None
    if len(text.encode("utf-8", "surrogatepass")) > MAX_TEXT_BYTES:
        raise InputError(f"over the limit of {MAX_TEXT_BYTES >> 10} KiB", key=name)
    return text


def err(message: str) -> None:
    """One plain line on stderr (never through rich markup). A closed stderr loses the line, never the exit code."""
    if sys.stderr is None:
        return
    try:
        sys.stderr.write(safe(printable(message)) + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def guard_std_streams(argv: list[str]) -> None:
    """Started with stderr closed (``2>&-``): messages go to /dev/null, exit codes stay what they are.

    Otherwise Python's stderr moves to a duplicate of fd 2 and fd 2 itself to /dev/null: Rust panic
    hooks (tokenizers' onig, tiktoken) print their banner straight to fd 2, and the panic is already
    reported as a finding. ``--debug`` keeps the banners.
    """
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # lives as long as the process
        return
    if "--debug" in argv:
        return
    try:
        sys.stderr.flush()
        fd = os.dup(2)
        stream = open(fd, "w", encoding="utf-8", errors="backslashreplace", buffering=1)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 2)
        os.close(null)
    except (OSError, ValueError, AttributeError):
        return
    sys.stderr = stream


@contextmanager
def handle_errors(debug: bool) -> Iterator[None]:
    """Input errors: one line, exit 2. Anything else: a short internal-error line, exit 3.

    Rust panics from backends are ``BaseException``s; they are caught here as a last resort.
    """
    try:
        yield
    except typer.Exit:
        raise
    except InputError as exc:
        if debug:  # the traceback, and the same exit code as without --debug
            traceback.print_exc()
        err(f"tokaudit: error: {exc}")
        raise typer.Exit(2) from None
    except (KeyboardInterrupt, SystemExit, GeneratorExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - the whole point: never a traceback without --debug
        if debug:
            traceback.print_exc()
            err(f"tokaudit: internal error: {type(exc).__name__}")
            raise typer.Exit(3) from None
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        err(f"tokaudit: internal error: {type(exc).__name__}: {text} (re-run with --debug for the traceback)")
        raise typer.Exit(3) from None


def to_stdout(output: Path | None) -> bool:
    """No ``--output``, or ``-o -`` (the convention for stdout)."""
    return output is None or str(output) == "-"


@contextmanager
def open_output(output: Path | None, kind: str = "text") -> Iterator[TextIO]:
    if output is None or to_stdout(output):
        if sys.stdout is None:  # started with stdout closed (>&-)
            raise InputError("cannot write report: stdout is closed", file="<stdout>")
        stream = ValidText(sys.stdout, kind)
        yield stream  # type: ignore[misc]  # ValidText writes as a TextIO
        stream.flush()
        return
    try:
        fh = output.open("w", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write report: {exc.strerror or exc}", file=str(output)) from None
    try:
        with fh:
            stream = ValidText(fh, kind)
            yield stream  # type: ignore[misc]  # ValidText writes as a TextIO
            stream.flush()
    except OSError as exc:  # /dev/full, /proc files: the write or the close fails
        if isinstance(exc, BrokenPipeError):
            raise
        raise InputError(f"cannot write report: {exc.strerror or exc}", file=str(output)) from None


def emit(
    report: Report,
    fmt: OutputFormat,
    output: Path | None,
    fail_on: FailOn,
    quiet: bool,
    color: Color = Color.auto,
    also: Iterable[tuple[OutputFormat, Path]] = (),
) -> None:
    """Render the report (and, for ``--also FORMAT=FILE``, the same report in other formats to files) and exit
    with the policy's code."""
    from tokaudit.report.locations import with_key_positions

    warn_about_sources(report, quiet)
    report = with_key_positions(report)
    for extra_fmt, path in also:
        try:
            with open_output(path, _stream_kind(extra_fmt)) as stream:
                _render(report, extra_fmt, stream, fail_on, quiet, Color.never)
        except OSError as exc:
            raise InputError(f"cannot write report: {exc.strerror or exc}", file=str(path)) from None
    try:
        with open_output(output, _stream_kind(fmt)) as stream:
            _render(report, fmt, stream, fail_on, quiet, color)
            stream.flush()  # a closed pipe must surface here, not at exit (where it would become exit 1)
    except BrokenPipeError:  # e.g. piped into `head`: stop writing, keep the exit code
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except OSError as exc:  # stdout on a full disk, or closed underneath us (EBADF)
        _drop_stdout()
        raise InputError(f"cannot write report: {exc.strerror or exc}", file="<stdout>") from None
    if not quiet and (fmt is not OutputFormat.rich or not to_stdout(output)):
        s = report.summary()
        unreadable = f" ({plural(len(report.unreadable), 'target')} unreadable)" if report.unreadable else ""
        err(f"tokaudit {report.command}: {severity_counts(s)}{unreadable}")
    raise typer.Exit(report.exit_code(fail_on.value))


def _stream_kind(fmt: OutputFormat) -> str:
    """What the report stream guards (:class:`ValidText`): a JSON document, GitHub's commands, or text."""
    return FORMATS[fmt.value].stream


def _render(report: Report, fmt: OutputFormat, stream: TextIO, fail_on: FailOn, quiet: bool, color: Color) -> None:
    FORMATS[fmt.value].render(report, stream, RenderOptions(fail_on.value, quiet, color.value))


def parse_also(values: Iterable[str] | None) -> list[tuple[OutputFormat, Path]]:
    """``--also sarif=tokaudit.sarif --also markdown=summary.md`` -> [(sarif, path), (markdown, path)]."""
    out = []
    for value in values or ():
        name, sep, path = value.partition("=")
        choices = [f.value for f in OutputFormat if FORMATS[f.value].also]
        if not sep or not path or name.lower() not in choices:
            raise InputError(
                f"expected FORMAT=FILE with FORMAT one of {', '.join(choices)}, got {value!r}", key="--also"
            )
        out.append((OutputFormat(name.lower()), Path(path)))
    return out


def warn_about_sources(report: Report, quiet: bool = False) -> None:
    """On stderr, how each Hub target resolved (``tokaudit: acme/tiny: main resolved to commit 0123...``, not with
    --quiet) and a ``tokaudit: warning:`` line for each thing the user should know (``--revision`` given for a local
    path; shown with --quiet too: it changes what was audited)."""
    seen: set[str] = set()
    for result in report.results:
        source = result.source
        if source is None:
            continue
        if source.repo_id is not None and source.commit is not None and not quiet:
            err(f"tokaudit: {source.repo_id}: {source.revision or 'main'} resolved to commit {source.commit}")
        for warning in source.warnings:
            if warning not in seen:
                seen.add(warning)
                err(f"tokaudit: warning: {warning}")


def _drop_stdout() -> None:
    """Point fd 1 at /dev/null so that the interpreter's final flush cannot fail (exit 120) after a write error."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    except OSError:
        pass
