"""The TA8xx findings of rendered templates, each naming the stacks it is true for (``details.stacks``).

TA801 a stack cannot render a request; TA802 a stack's engine renders its own context other than Jinja2
(transformers' engine) does; TA803 the prompt starts with the BOS a client's tokenizer adds again; TA804 a
control-token literal of a rendered prompt does not encode to its id; TA805 the generation prompt is not the
header of an assistant turn; TA806 a past tool call never reaches the prompt; TA807 turn k's prompt and reply
are not a prefix of turn k+1's prompt; TA810-TA813 the structural rules (:mod:`tokaudit.template.structure`).
"""

from __future__ import annotations

from tokaudit.checks.literals import LiteralClassifier
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Finding
from tokaudit.template.rendering import TemplateRun
from tokaudit.template.serving import ServingEncoder
from tokaudit.template.common import Tokens
from tokaudit.template.engine_findings import divergences, render_errors
from tokaudit.template.prompt_findings import double_bos, generation_prompts, token_splits
from tokaudit.template.structure import structure_findings
from tokaudit.template.turn_findings import dropped_tool_calls, prefix_instability


def analyse(
    model: TokenizerModel,
    runs: list[TemplateRun],
    encoder: ServingEncoder | None,
    classifier: LiteralClassifier | None = None,
) -> list[Finding]:
    classifier = classifier or LiteralClassifier(model)
    tokens = Tokens(encoder, classifier)
    return [
        *render_errors(runs),
        *divergences(runs, tokens),
        *double_bos(model, runs, tokens),
        *token_splits(runs, classifier),
        *generation_prompts(runs),
        *dropped_tool_calls(runs),
        *prefix_instability(runs, tokens),
        *structure_findings(runs),
    ]
