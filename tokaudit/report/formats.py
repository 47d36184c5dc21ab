"""The output formats, one row each: its name, its renderer, what the report stream guards and its help line.

The CLI's ``--format`` and ``--also`` read this table (``cli/common.py``: the choices, the help, the dispatch), and
``tests/test_tooling.py`` renders a report in every format with its own renderer, so a format without a row, or a
row without a renderer, fails there instead of printing the rich report. A new format is a ``render_<name>.py``
module and a row here. The renderers are imported when used (importing them all would cost every run's start-up).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from tokaudit.report.report import Report


@dataclass(frozen=True)
class RenderOptions:
    """What a renderer may be told besides the report: the policy's ``--fail-on``, ``--quiet`` and ``--color``."""

    fail_on: str = "error"
    quiet: bool = False
    color: str = "never"


@dataclass(frozen=True)
class Format:
    """One output format: ``--format NAME``, rendered by ``render``."""

    name: str
    render: Callable[[Report, TextIO, RenderOptions], None]
    #: What the report stream guards (``cli/report_stream.py``'s ``ValidText``): a JSON document, GitHub's commands,
    #: or text.
    stream: str
    #: One line, for ``--help`` and the docs.
    help: str
    #: Whether ``--also FORMAT=FILE`` may write it (jsonl is scan's stream of lines on stdout).
    also: bool = True


def _rich(report: Report, stream: TextIO, o: RenderOptions) -> None:
    from tokaudit.report.render_rich import render_rich

    render_rich(report, stream, o.fail_on, color=o.color, quiet=o.quiet)


def _json(report: Report, stream: TextIO, o: RenderOptions) -> None:
    from tokaudit.report.render_json import render_json

    render_json(report, stream)


def _sarif(report: Report, stream: TextIO, o: RenderOptions) -> None:
    from tokaudit.report.render_sarif import render_sarif

    render_sarif(report, stream)


def _junit(report: Report, stream: TextIO, o: RenderOptions) -> None:
    from tokaudit.report.render_junit import render_junit

    render_junit(report, stream, o.fail_on)


def _markdown(report: Report, stream: TextIO, o: RenderOptions) -> None:
    from tokaudit.report.render_markdown import render_markdown

    render_markdown(report, stream, o.fail_on)


def _github(report: Report, stream: TextIO, o: RenderOptions) -> None:
    from tokaudit.report.render_github import render_github

    render_github(report, stream, o.fail_on)


def _concise(report: Report, stream: TextIO, o: RenderOptions) -> None:
    from tokaudit.report.render_concise import render_concise

    render_concise(report, stream)


#: In the order ``--help`` lists them.
FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("rich", _rich, "text", "the report for a terminal (the default)"),
        Format("json", _json, "json", "one JSON object (tokaudit/report/report.schema.json)"),
        Format("sarif", _sarif, "json", "SARIF 2.1.0, for GitHub code scanning"),
        Format("junit", _junit, "text", "JUnit XML, a test case per rule and target"),
        Format("markdown", _markdown, "text", "a Markdown summary (a pull-request comment, a job summary)"),
        Format("github", _github, "commands", "GitHub Actions workflow commands (annotations)"),
        # the same renderer as json: scan writes one line per target as each finishes (cli/scan.py), other commands one
        # line
        Format("jsonl", _json, "json", "one JSON object per line (scan: one per target)", also=False),
        Format("concise", _concise, "text", "one line per finding, path:line:col: CODE name message"),
    )
}
