"""``--format jsonl`` for a run over many targets (``scan``): one report per target, written as each finishes."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import typer

from tokaudit.cli.common import FailOn, err, open_output, warn_about_sources
from tokaudit.report.text import plural, severity_counts


def emit_lines(command: str, outcomes: Iterable[Any], output: Path | None, fail_on: FailOn, quiet: bool) -> None:
    """``--format jsonl``: one JSON object per target (a report, or ``{"target", "error"}``), written
    and flushed as each finishes. Exit 2 when a target could not be read, else the worst report's code."""
    import json

    from tokaudit import __version__
    from tokaudit.report.render_json import report_document

    code, done, unreadable = 0, 0, 0
    totals = {"error": 0, "warning": 0, "note": 0}
    try:
        with open_output(output, "json") as stream:
            for outcome in outcomes:
                done += 1
                if outcome.error is not None:
                    err(f"tokaudit: error: {outcome.error}")
                    unreadable += 1
                    code = 2
                    doc: dict[str, Any] = {
                        "tokaudit": __version__,
                        "command": command,
                        "target": outcome.target,
                        "error": str(outcome.error),
                    }
                else:
                    from tokaudit.report.locations import with_key_positions

                    warn_about_sources(outcome.value, quiet)
                    doc = report_document(with_key_positions(outcome.value))
                    code = max(code, outcome.value.exit_code(fail_on.value))
                    for severity, n in outcome.value.summary().items():
                        totals[severity] += n
                stream.write(json.dumps(doc, ensure_ascii=False) + "\n")
                stream.flush()
    except BrokenPipeError:  # the reader stopped: stop scanning, keep the exit code
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if not quiet:
        err(f"tokaudit {command}: {plural(done, 'target')}, {unreadable} unreadable: {severity_counts(totals)}")
    raise typer.Exit(code)
