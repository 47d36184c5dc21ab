"""The parser round trip's findings (TA820-TA825): per template, the stacks and parser pairs that lose the calls or
the reasoning (for the parsers the deploy names, or a verdict over all of them), and what the generation prompt does
to reasoning (opens it, or already closes it)."""

from __future__ import annotations

from typing import Any

from tokaudit.report.finding import Finding, Severity
from tokaudit.roundtrip.choice import CODES, ParserChoice
from tokaudit.roundtrip.parser_run import ParserRun
from tokaudit.roundtrip.run import Row


(TOOL_CALL, REASONING, STARTUP, STREAM, MARKER_IN_PROMPT, PREFILL) = CODES.values()


def _where(run: ParserRun) -> dict[str, Any]:
    return {"location": run.template.location}


def _pair(row: Row) -> str:
    return "+".join(n for n in (row.tool_parser, row.reasoning_parser) if n) or "no parser"


_STAGES = {
    "format": "the parser does not read the format the template teaches",
    "skip_special_tokens": "skip_special_tokens deleted the call's special markers before the parser ran",
    "marker-not-one-token": "a marker the parser finds by token id is not one token of this tokenizer",
    "arguments": "the call is found but its arguments do not come back as the same JSON value",
    "reasoning": "the reasoning parser took the call into reasoning",
}


def named_findings(run: ParserRun, choice: ParserChoice) -> list[Finding]:
    """A named parser (pair) on each stack that offers it: its refusal, lost call, misplaced reasoning, divergence."""
    out: list[Finding] = []
    name = run.template.file
    for row in run.rows:
        details = {
            "stacks": [row.stack],
            "tool_parser": row.tool_parser,
            "reasoning_parser": row.reasoning_parser,
            "template": run.template.name,
            "stage": row.stage,
            "skip_special_tokens": row.skip_special_tokens,
        }
        pair = f"{row.stack} {_pair(row)}"
        if row.stage == "startup":
            out.append(STARTUP.finding(f"{row.reason}", details=details, **_where(run)))
            continue
        if row.tool_calls == "lost":
            out.append(
                TOOL_CALL.finding(
                    f"{pair}: the tool call {name} teaches does not come back: "
                    f"{_STAGES.get(row.stage or '', row.stage)}",
                    details={**details, "parsed": row.to_json().get("parsed")},
                    **_where(run),
                )
            )
        elif row.tool_calls == "ok" and row.without_tools == "lost":
            out.append(
                TOOL_CALL.finding(
                    f"{pair}: the call comes back only because the request carries tools; a request without "
                    "tools keeps skip_special_tokens on and loses its markers",
                    severity=Severity.NOTE,
                    details={**details, "stage": "skip_special_tokens"},
                    **_where(run),
                )
            )
        if row.reasoning in ("overran", "leaked") and (
            row.reasoning_parser is not None or choice.reasoning_parser is None and run.reasoning_rendered
        ):
            what = (
                "the call or content went into reasoning"
                if row.reasoning == "overran"
                else "reasoning went into content"
            )
            out.append(
                REASONING.finding(f"{pair}: {what}", details={**details, "reasoning": row.reasoning}, **_where(run))
            )
        if row.stream_differs:
            out.append(
                STREAM.finding(
                    f"{pair}: the streamed parse differs from the whole one (steps of "
                    f"{', '.join(map(str, row.stream_differs))} ids)",
                    details={
                        **details,
                        "steps": row.stream_differs,
                        "streamed": row.details.get("streamed"),
                        "whole": row.to_json().get("parsed"),
                    },
                    **_where(run),
                )
            )
    return out


def verdict(run: ParserRun) -> str:
    """One line: per stack, the tool parsers (and pairs) that recover this template's calls and reasoning."""
    parts = []
    for stack, s in run.summary().items():
        tools = ", ".join(s["tool_parsers"]) or (
            "its own JSON grammar, not the template's format" if s.get("constrained") else "none"
        )
        pairs = (
            f" (with reasoning: {', '.join(s['pairs'][:4])}{', ...' if len(s['pairs']) > 4 else ''})"
            if s["pairs"] and run.reasoning_rendered
            else ""
        )
        parts.append(f"{stack}: {tools}{pairs}")
    return "; ".join(parts)


def unnamed_findings(run: ParserRun) -> list[Finding]:
    """No parser named: a note with the verdict, and a warning for each recovering pair whose streamed parse differs."""
    out: list[Finding] = []
    if not run.calls_rendered:
        return out
    summary = run.summary()
    lost = [s for s, v in summary.items() if not v["tool_parsers"] and not v.get("constrained")]
    message = f"tool calls of {run.template.file} recovered by {verdict(run)}"
    if lost:
        message = f"no parser of {', '.join(lost)} recovers the tool call {run.template.file} teaches; " + message
    out.append(
        TOOL_CALL.finding(
            message,
            severity=Severity.NOTE,
            details={"stacks": lost, "template": run.template.name, "summary": summary},
            **_where(run),
        )
    )
    for row in run.rows:
        if row.tool_calls == "ok" and row.stream_differs and row.reasoning_parser is None:
            out.append(
                STREAM.finding(
                    f"{row.stack} {row.tool_parser}: recovers the call whole, but not streamed in steps of "
                    f"{', '.join(map(str, row.stream_differs))} ids",
                    details={
                        "stacks": [row.stack],
                        "tool_parser": row.tool_parser,
                        "steps": row.stream_differs,
                        "streamed": row.details.get("streamed"),
                    },
                    **_where(run),
                )
            )
    return out


def prompt_findings(run: ParserRun) -> list[Finding]:
    """What the generation prompt does to reasoning: a closed block (TA824) or an opened one (TA825)."""
    if run.case is None or run.state is None:
        return []
    if run.state == "closed":
        hurt = sorted(
            {
                f"{r.stack} {r.reasoning_parser}"
                for r in run.rows
                if r.reasoning_parser is not None and r.reasoning == "overran"
            }
        )
        stacks = sorted({s.split(" ")[0] for s in hurt})
        tail = f"; parsers that misplace the output: {', '.join(hurt)}" if hurt else ""
        return [
            MARKER_IN_PROMPT.finding(
                f"the generation prompt of {run.template.file} already closes reasoning "
                f"({run.generation.strip()!r}){tail}",
                details={"stacks": stacks, "generation_prompt": run.generation, "parsers": hurt, "toggle": run.toggle},
                **_where(run),
            )
        ]
    toggle = f"; {run.toggle} turns it off" if run.toggle else ""
    return [
        PREFILL.finding(
            f"the generation prompt of {run.template.file} opens reasoning ({run.generation.strip()!r}): output cut by "
            f"max_tokens is reasoning, not content{toggle}",
            details={"stacks": [], "generation_prompt": run.generation, "toggle": run.toggle},
            **_where(run),
        )
    ]


def parser_findings(runs: list[ParserRun], choice: ParserChoice) -> list[Finding]:
    out: list[Finding] = []
    for run in runs:
        out += named_findings(run, choice) if choice.named else unnamed_findings(run)
        out += prompt_findings(run)
    return out
