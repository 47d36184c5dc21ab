"""One template's parser round trip as a record: the case, the rows (stack, tool parser, reasoning parser), and what
the generation prompt does to reasoning; its JSON is the ``parser_runs`` entry of the template command."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tokaudit.roundtrip.case import Case
from tokaudit.roundtrip.run import Row
from tokaudit.template.source import TemplateSource
from tokaudit.template.turn import SENTINEL_REASONING, renders_call


@dataclass
class ParserRun:
    """One template's round trip: the case, the rows, and what its generation prompt does to reasoning."""

    template: TemplateSource
    case: Case | None = None
    error: str | None = None
    rows: list[Row] = field(default_factory=list)
    #: the text add_generation_prompt adds, and what it does to reasoning ("open", "closed", None)
    generation: str = ""
    state: str | None = None
    #: the chat-template kwarg whose false value changes what the generation prompt does to reasoning
    toggle: str | None = None
    #: per stack whose turn is not the run's case: why it renders none, or its own turn
    renders: dict[str, str] = field(default_factory=dict)

    @property
    def calls_rendered(self) -> bool:
        return self.case is not None and renders_call(self.case.text)

    @property
    def reasoning_rendered(self) -> bool:
        return self.case is not None and SENTINEL_REASONING in self.case.text

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per stack: the tool parsers that recover the calls, the reasoning parsers that recover the reasoning with
        one of them, and the pairs that do both."""
        out: dict[str, dict[str, Any]] = {}
        for row in self.rows:
            s = out.setdefault(row.stack, {"tool_parsers": [], "reasoning_parsers": [], "pairs": []})
            if row.tool_calls == "constrained":
                s["constrained"] = row.tool_parser
            if row.tool_calls == "ok" and row.tool_parser not in s["tool_parsers"]:
                s["tool_parsers"].append(row.tool_parser)
            if (
                row.reasoning == "ok"
                and row.reasoning_parser not in s["reasoning_parsers"]
                and row.tool_calls in ("ok", None)
            ):
                s["reasoning_parsers"].append(row.reasoning_parser)
            if row.tool_calls == "ok" and row.reasoning == "ok" and row.reasoning_parser is not None:
                s["pairs"].append(f"{row.tool_parser}+{row.reasoning_parser}")
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "template": self.template.to_json(),
            "error": self.error,
            "tokenizer": None if self.case is None else self.case.tokenizer_note,
            "output": None if self.case is None else self.case.text,
            "output_ids": None if self.case is None else self.case.output_ids,
            "calls_rendered": self.calls_rendered,
            "reasoning_rendered": self.reasoning_rendered,
            "generation_prompt": {"text": self.generation, "reasoning": self.state, "toggle": self.toggle},
            "summary": self.summary(),
            "stack_renders": self.renders,
        }
