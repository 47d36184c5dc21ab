"""TA803, TA804 and TA805: the rendered prompt's tokens: a BOS the template writes and the tokenizer adds again, a
control token the template writes that does not encode to its id, and a generation prompt that is not the header
the model writes its turn after."""

from __future__ import annotations

from tokaudit.checks.literals import LiteralClassifier, literals_in
from tokaudit.ids import IdRanges
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Finding
from tokaudit.template.common import (
    EXCERPT,
    Tokens,
    excerpt,
    finding,
    first_difference,
    in_template,
    ordered,
)
from tokaudit.template.rendering import RequestRun, TemplateRun
from tokaudit.template.renders import Render

# --------------------------------------------------------------------------- TA803


#: Why TA803 is a warning: no serving stack's chat endpoint tokenizes the rendered prompt with special tokens
#: added. vLLM: ChatCompletionRequest.add_special_tokens defaults to False. SGLang: serving_chat.py keeps
#: add_special_tokens=False "to avoid double BOS". TGI: ChatRequest::try_into_generate builds its GenerateRequest
#: with add_special_tokens: false. transformers: apply_chat_template(tokenize=True) encodes with
#: add_special_tokens=False. llama.cpp's server: common/chat.cpp strips a leading bos_token from the rendered text
#: when the vocabulary adds BOS. Hit: a client that renders the template and tokenizes the text with the defaults
#: (transformers' tokenizer(text), a /v1/completions request, vLLM's LLM.generate).
DOUBLE_BOS_STACKS = (
    "no stack's chat endpoint is hit (vLLM, SGLang, TGI and transformers' apply_chat_template tokenize "
    "chat prompts without special tokens, llama.cpp's server strips the leading BOS); a client that renders "
    "the template and tokenizes the text with the defaults (tokenizer(text), a completions request) is"
)


def double_bos(model: TokenizerModel, runs: list[TemplateRun], tokens: Tokens) -> list[Finding]:
    """TA803: the template writes the token the tokenizer prepends anyway (post-processor / add_bos_token)."""
    prefix = tokens.encoder.prefix if tokens.encoder is not None else None
    if prefix is None:
        from tokaudit.template.serving import prepended

        prefix = prepended(model)
    if prefix is None:
        return []
    hits: list[tuple[RequestRun, str, Render, list[int] | None]] = []
    for trun in runs:
        for rrun in trun.requests:
            for stack, sr in rrun.stacks.items():
                r = sr.render
                if r.ok and r.text is not None and r.text.startswith(prefix.token):
                    ids = tokens.of(r.text)
                    if ids is not None and not (len(ids) >= 2 and ids[0] == ids[1]):
                        continue  # the real tokenization disagrees with the static reading: trust the ids
                    hits.append((rrun, stack, r, ids))
    if not hits:
        return []
    rrun, stack, r, ids = hits[0]
    requests = sorted({h[0].label for h in hits})
    shown = f" The prompt starts with ids {ids[:4]}." if ids is not None else ""
    return [
        finding(
            "TA803",
            f"request {rrun.label}{in_template(rrun.template)}: the template writes {prefix.token} at the start of "
            "the prompt and "
            f"{prefix.setting} adds {prefix.token} again when the text is tokenized with special tokens, so the model "
            "sees two BOS "
            f"tokens ({len(requests)} request(s)).{shown} {DOUBLE_BOS_STACKS}. Drop bos_token from the template or "
            "tokenize "
            "rendered prompts with add_special_tokens=False.",
            location=rrun.template.location,
            ids=IdRanges.from_ids([prefix.token_id]) if prefix.token_id is not None else None,
            details={
                "subject": rrun.template.name,
                "stacks": [],
                "rendered_by": ordered({h[1] for h in hits}),
                "conversation": rrun.label,
                "token": prefix.token,
                "token_id": prefix.token_id,
                "added_by": prefix.setting,
                "conversations": requests,
                "first_ids": ids[:4] if ids is not None else None,
                "excerpt": excerpt(r.text or "", 0),
            },
        )
    ]


# --------------------------------------------------------------------------- TA804


def token_splits(runs: list[TemplateRun], classifier: LiteralClassifier) -> list[Finding]:
    """TA804: control-token literals in rendered prompts that do not reach the model as their one id."""
    seen: dict[str, tuple[RequestRun, str, int]] = {}
    stacks_of: dict[str, set[str]] = {}
    for trun in runs:
        for rrun in trun.requests:
            for stack, sr in rrun.stacks.items():
                r = sr.render
                if not r.ok or r.text is None:
                    continue
                for m in literals_in(r.text):
                    stacks_of.setdefault(m.group(), set()).add(stack)
                    if m.group() not in seen:
                        seen[m.group()] = (rrun, r.text, m.start())
    out = []
    for text, (rrun, prompt, at) in seen.items():
        v = classifier.verdict(text)
        if not v.control or v.ok:
            continue
        stacks = ordered(stacks_of[text])
        out.append(
            finding(
                "TA804",
                f"request {rrun.label}{in_template(rrun.template)}, {', '.join(stacks)}: the rendered prompt holds "
                f"{text} at character {at} "
                f"({excerpt(prompt, at, 20)!r}), but {v.why()}{v.encodes()}: the model never sees the control token "
                "it was trained with.",
                location=rrun.template.location,
                ids=IdRanges.from_ids([v.token_id]) if v.token_id is not None else None,
                details={
                    "subject": text,
                    "token": text,
                    "stacks": stacks,
                    "conversation": rrun.label,
                    "position": at,
                    "registered_by": v.registered_by,
                    "encoded_ids": v.encoded_ids,
                    "encoder": v.encoder,
                },
            )
        )
    return out


# --------------------------------------------------------------------------- TA805


_HEADER_MARKERS = ("<think>", "<|channel|>", "<|message|>", "<seed:think>")


def _benign_rest(rest: str) -> bool:
    """What the model may generate itself after the generation prompt: a control or reasoning marker first."""
    m = next(iter(literals_in(rest)), None)
    return (m is not None and m.start() == 0) or rest.startswith(_HEADER_MARKERS)


#: Markers with which a generation prompt opens the model's reasoning on purpose (Qwen3.5, GLM-4.7, Command A...).
_OPENS_REASONING = ("<think>", "<seed:think>", "<|START_THINKING|>", "[THINK]")


def _opens_reasoning(header: str, suffix: str) -> bool:
    """The generation prompt is the assistant header (or its start) followed by a marker that opens reasoning,
    where a past assistant turn has none or an empty block: the template starts the model thinking, on purpose."""
    body = suffix.rstrip()
    for marker in _OPENS_REASONING:
        if body.endswith(marker):
            head = body[: -len(marker)]
            return header.startswith(head) or header.startswith(head.rstrip())
    return False


def _header_problem(header: str, suffix: str | None) -> str | None:
    if suffix is not None and _opens_reasoning(header, suffix):
        return None
    if suffix is None:
        return "the prompt with add_generation_prompt does not extend the prompt without it"
    if not suffix.strip() and header.strip():
        return (
            f"add_generation_prompt adds nothing ({suffix!r}), so the model must write the assistant header "
            f"{header!r} itself"
        )
    if suffix.startswith(header):
        return None
    if header.startswith(suffix):
        rest = header[len(suffix) :]
        return (
            None
            if _benign_rest(rest)
            else (
                f"the prompt ends with {suffix!r} but an assistant turn starts with {header!r}: the model must "
                f"generate {rest!r} first"
            )
        )
    at = first_difference(suffix, header)
    return (
        f"the prompt ends with {suffix!r} but an assistant turn starts with {header!r} "
        f"(first difference at character {at})"
    )


def generation_prompts(runs: list[TemplateRun]) -> list[Finding]:
    """TA805: the generation prompt should write the assistant header (the model starts right after it). One
    finding per template and problem, naming the stacks it holds for."""
    out = []
    for trun in runs:
        problems: dict[str, tuple[str, str | None, str | None, str, list[str]]] = {}
        for stack, rows in trun.headers.items():
            for name, header, suffix, prompt in rows:
                if header is None:
                    continue
                problem = _header_problem(header, suffix)
                if problem is not None:
                    problems.setdefault(problem, (name, header, suffix, prompt, []))[4].append(stack)
                    break  # one per template and stack
        for problem, (name, header, suffix, prompt, stacks) in problems.items():
            stacks = ordered(stacks)
            out.append(
                finding(
                    "TA805",
                    f"request {name}{in_template(trun.template)}, {', '.join(stacks)}: {problem}.",
                    location=trun.template.location,
                    details={
                        "subject": f"{trun.template.name}:{problem[:60]}",
                        "stacks": stacks,
                        "conversation": name,
                        "header": header,
                        "generation_suffix": suffix,
                        "prompt_end": prompt[-EXCERPT:],
                    },
                )
            )
    return out
