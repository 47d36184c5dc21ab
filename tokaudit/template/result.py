"""What ``template`` reports of one target: a frozen record whose ``to_json()`` writes the target's keys of
``--format json`` (``report.schema.json``), and whose ``rich()`` draws its section (``template/view.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tokaudit.template.records import Conversation, StackInfo, TemplateRef, TokenizerInfo

if TYPE_CHECKING:
    from rich.console import Console

    from tokaudit.report.policy import PolicyCounts


@dataclass(frozen=True)
class TemplateResult:
    """One target's ``template`` run (a :class:`tokaudit.report.report.CommandResult`)."""

    target: str
    #: where the target's files came from (a :class:`tokaudit.source.resolve.Source`)
    source: Any
    templates: tuple[TemplateRef, ...]
    stacks: tuple[StackInfo, ...]
    tokenizer: TokenizerInfo
    distinct_renders: int
    conversations: tuple[Conversation, ...]
    #: the parser round trip's keys (``parser_runs``, ``parsers``, ``parser_choice``) as
    #: ``roundtrip.analysis.add_round_trip`` writes them; empty before it runs
    round_trip: Mapping[str, Any] = field(default_factory=dict)

    @property
    def not_checked(self) -> tuple[str, ...]:
        return ()

    @property
    def policy(self) -> PolicyCounts | None:
        return None

    @property
    def rules(self) -> tuple[tuple[str, str], ...]:
        return ()

    def to_json(self) -> dict[str, Any]:
        return {
            "template": self.templates[0].to_json(),
            "templates": [t.to_json() for t in self.templates],
            "stacks": [s.to_json() for s in self.stacks],
            "tokenizer": self.tokenizer.to_json(),
            "distinct_renders": self.distinct_renders,
            "conversations": [c.to_json() for c in self.conversations],
            **self.round_trip,
        }

    def rich(self, console: Console) -> None:
        from tokaudit.template.view import template_view

        template_view(console, self.templates, self.stacks, self.tokenizer, self.conversations, self.round_trip)
