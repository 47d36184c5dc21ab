"""``--format markdown``: a PR comment or ``$GITHUB_STEP_SUMMARY``. Token text is data: markdown and
HTML metacharacters are escaped so ``<think>`` or ``[PAD]`` show as written."""

from __future__ import annotations

import re
from typing import TextIO

from tokaudit.report.finding import Finding
from tokaudit.report.locations import location_text
from tokaudit.report.report import Report, tool_version, versions
from tokaudit.report.text import safe, severity_counts

_ICON = {"error": "❌", "warning": "⚠️", "note": "ℹ️"}
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~>-])")


def md(text: str) -> str:
    """Escape text for a markdown table cell: control characters shown (:func:`safe`), HTML entities, markdown
    punctuation, no line breaks."""
    text = safe(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_SPECIAL.sub(r"\\\1", text)
    return text.replace("\r", " ").replace("\n", "<br>")


def _location(f: Finding) -> str:
    return f"`{safe(location_text(f)).replace('`', '')}`"


def render_markdown(report: Report, stream: TextIO, fail_on: str = "error") -> None:
    s = report.summary()
    failing = report.failing(fail_on)
    counts = severity_counts(s)
    dropped = "".join(f", {n} {kind}" for kind, n in report.suppressed().items() if n)
    missing = report.not_checked()
    if missing:
        dropped += "; not checked: " + ", ".join(m.replace("`", "'") for m in missing)
    if report.judged:
        verdict = "❌ FAIL" if failing else "✅ PASS"
        out = [
            f"## tokaudit {report.command}: {verdict}",
            "",
            f"{counts} ({len(failing)} at or above `--fail-on {fail_on}`{dropped})",
            "",
        ]
    else:  # a command that reports, not judges
        out = [f"## tokaudit {report.command}", ""]
    for result in report.results:
        findings = sorted(
            (f for f in report.findings if f.target == result.target), key=lambda f: (-f.severity.rank, f.code)
        )
        out.append(f"### `{safe(result.target).replace('`', '')}`")
        out.append("")
        source = result.source
        if source is not None and source.repo_id is not None and source.commit is not None:
            out += [f"Hugging Face commit `{source.commit}` ({md(source.revision or 'main')})", ""]
        if not findings:
            out += ["No findings.", ""]
            continue
        out += ["| | code | name | location | message | ids |", "|---|---|---|---|---|---|"]
        for f in findings:
            ids = "" if f.ids is None else md(f"{f.ids.describe(limit=4)} ({f.ids.count})")
            out.append(
                f"| {_ICON[f.severity.value]} | {f.code} | `{f.name}` | {_location(f)} | {md(f.message)} | {ids} |"
            )
        out.append("")
    for target, error in report.unreadable.items():
        out += [f"### `{target.replace('`', '')}`", "", f"❌ could not be read: {md(error)}", ""]
    lib = ", ".join(f"{k} {v}" for k, v in versions().items())
    out += ["---", f"<sub>tokaudit {tool_version()} · {md(lib)}</sub>", ""]
    stream.write("\n".join(out))
