"""Special tokens and EOS (TA201-TA204; TA205, which needs rendered prompts, is a template rule)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokaudit.records import AddedToken, Provenance
from tokaudit.checks.common import find_content, is_tool_or_reasoning_marker, looks_control, turn_terminator
from tokaudit.checks.registry import rule
from tokaudit.ids import IdRanges
from tokaudit.model.tokenizer_model import REMOTE_CODE, TokenizerModel
from tokaudit.report.finding import Finding, Severity


def content_id(model: TokenizerModel, content: str) -> tuple[int | None, str]:
    """(id, which profile maps it) for a token's text; files first, then the remote code."""
    hit = find_content(model.files, content)
    if hit is not None:
        return hit[0], "files"
    if REMOTE_CODE in model.profiles:
        hit = find_content(model.profiles[REMOTE_CODE], content)
        if hit is not None:
            return hit[0], REMOTE_CODE
    return None, ""


def token_text(model: TokenizerModel, token_id: int) -> str | None:
    for table in model.profiles.values():
        found = table.lookup(token_id)
        if found is not None:
            return found.token.decode("utf-8", "replace")
    return None


@rule("TA201")
def special_token_missing(model: TokenizerModel) -> Iterator[Finding]:
    a = model.artifacts
    size = model.checked_size
    for record in (a.tokenizer_config, a.special_tokens_map):
        if record is None:
            continue
        for field, tok in record.special.items():
            token_id, profile = content_id(model, tok.content)
            if profile == "files":
                continue
            why = (
                "only the remote code registers it, so files-only loaders (smg, tiktoken-rs) cannot encode or decode it"
                if profile == REMOTE_CODE
                else "no vocabulary entry or added token has this text"
            )
            yield special_token_missing.finding(
                f"{field} {tok.content} ({record.name}) is not a token for a loader of the data files: {why}.",
                location=tok.source,
                ids=IdRanges.from_ids([token_id]) if token_id is not None else None,
                details={
                    "subject": f"{record.name}:{field}",
                    "field": field,
                    "token": tok.content,
                    "remote_code_id": token_id,
                },
            )
    for ids_record in (a.config, a.generation_config):
        if ids_record is None:
            continue
        for name, ids in (("bos", ids_record.ids.bos), ("eos", ids_record.ids.eos), ("pad", ids_record.ids.pad)):
            key = ids_record.ids.keys.get(name, f"{name}_token_id")
            for token_id in ids:
                if token_id in model.files.mapped and token_id < size:
                    continue
                if token_id >= size:
                    why = f"it is at or beyond the declared size {size}"
                elif REMOTE_CODE in model.profiles and token_id in model.profiles[REMOTE_CODE].mapped:
                    why = (
                        "it is in the vocabulary gap: only the remote code maps it, files-only loaders cannot decode it"
                    )
                else:
                    why = "it is in the vocabulary gap: no loader maps it"
                yield special_token_missing.finding(
                    f"{key} {token_id} ({ids_record.name}) has no token for a loader of the data files: {why}.",
                    location=Provenance(ids_record.name, key=key),
                    ids=IdRanges.from_ids([token_id]),
                    details={"subject": f"{ids_record.name}:{key}:{token_id}", "field": key, "id": token_id},
                )
    from tokaudit.checks.gguf_rules import gguf_special_out_of_range

    for name, value, used, key in gguf_special_out_of_range(model):
        g = a.gguf
        assert g is not None, "gguf_special_out_of_range yields only for a GGUF"
        instead = f"its {g.model} default id {used}" if used is not None else "no id at all"
        yield special_token_missing.finding(
            f'{key} = {value} is outside the {len(g.tokens)} tokens of {g.path.name}: llama.cpp warns "bad special '
            'token" '
            f"and uses {instead} as {name}, other GGUF readers fail or index past the vocabulary.",
            location=g.source(key),
            ids=IdRanges.from_ids([value]),
            details={"subject": f"gguf:{key}", "field": key, "id": value, "llamacpp_uses": used},
        )


def eos_sets(model: TokenizerModel) -> list[dict[str, Any]]:
    """The eos ids each file declares: config.json, generation_config.json, tokenizer_config.json (by text)."""
    a = model.artifacts
    sets: list[dict[str, Any]] = []
    for record in (a.config, a.generation_config):
        if record is not None and record.ids.eos:
            key = record.ids.keys.get("eos", "eos_token_id")
            ids = sorted(set(record.ids.eos))
            sets.append(
                {
                    "source": f"{record.name} {key}",
                    "ids": ids,
                    "location": Provenance(record.name, key=key),
                    "tokens": [token_text(model, i) or "?" for i in ids],
                }
            )
    if a.tokenizer_config is not None and "eos_token" in a.tokenizer_config.special:
        tok = a.tokenizer_config.special["eos_token"]
        token_id, _ = content_id(model, tok.content)
        sets.append(
            {
                "source": f"{a.tokenizer_config.name} eos_token",
                "ids": [] if token_id is None else [token_id],
                "location": tok.source,
                "tokens": [tok.content],
            }
        )
    return sets


def _fmt(entry: dict[str, Any]) -> str:
    pairs = " ".join(f"{i} {t}" for i, t in zip(entry["ids"], entry["tokens"]))
    return f"{entry['source']} {pairs or entry['tokens'][0] + ' (not a token)'}"


@rule("TA202")
def eos_mismatch(model: TokenizerModel) -> Iterator[Finding]:
    sets = eos_sets(model)
    term = turn_terminator(model)
    term_id = content_id(model, term.text)[0] if term else None
    distinct = {tuple(s["ids"]) for s in sets}
    union = {i for s in sets for i in s["ids"]}
    term_outside = [s for s in sets if term_id is not None and term_id not in s["ids"]]
    if len(distinct) <= 1 and not term_outside:
        return
    severity = Severity.ERROR if term_id is not None and sets and term_id not in union else Severity.WARNING
    parts = [_fmt(s) for s in sets]
    if term is not None:
        parts.append(
            f"and the chat template's turn terminator {term.text} ({term_id if term_id is not None else 'not a token'})"
        )
    stacks = (
        "transformers generate() stops on generation_config.json (falling back to config.json); vLLM stops on the "
        "tokenizer's eos_token plus generation_config.json's eos_token_id; smg stops on the union of config.json and "
        "generation_config.json"
    )
    narrow = [s["source"] for s in term_outside]
    tail = (
        f". A stack that reads only {' or '.join(narrow)} never stops on {term.text} and runs into a fake next turn"
        if narrow and term is not None
        else ""
    )
    if severity is Severity.ERROR:
        tail += f". No file lists {term.text}: generation only stops at max_tokens"  # type: ignore[union-attr]  # ERROR needs term_id, set only from a term
    location = (
        term_outside[0]["location"]
        if term_outside
        else sets[0]["location"]
        if sets
        else (term.source if term else None)
    )
    yield eos_mismatch.finding(
        f"end-of-sequence sets disagree between {', '.join(parts)}. {stacks}{tail}.",
        severity=severity,
        location=location,
        ids=IdRanges.from_ids(union | ({term_id} if term_id is not None else set())),
        details={
            "sets": [{"source": s["source"], "ids": s["ids"], "tokens": s["tokens"]} for s in sets],
            "template_terminator": None
            if term is None
            else {"token": term.text, "id": term_id, "location": term.source.to_json()},
        },
    )


def _primary_added(model: TokenizerModel) -> tuple[AddedToken, ...]:
    a = model.artifacts
    if a.tokenizer_json is not None:
        return a.tokenizer_json.added_tokens
    return a.tokenizer_config.added_tokens_decoder if a.tokenizer_config else ()


#: HTML element names. Gemma 3 adds <table>, <h1>, <b>, <code>, ... as ordinary (special: false) tokens so
#: that web markup encodes compactly: vocabulary, not control tokens.
HTML_ELEMENTS = frozenset(
    """a abbr address article aside audio b bdi bdo blockquote body br button canvas caption cite code col colgroup
data dd del details dfn dialog div dl dt em embed fieldset figcaption figure footer form h1 h2 h3 h4 h5 h6 head
header hr html i iframe img input ins kbd label legend li link main mark meta nav noscript object ol optgroup
option output p param picture pre progress q rp rt ruby s samp script section select small source span strong
style sub summary sup table tbody td template textarea tfoot th thead time title tr track u ul var video wbr""".split()
)
#: At least this many distinct HTML elements among the plain added tokens make them markup vocabulary
#: (a lone <s> or <code> stays a control-token candidate).
MIN_HTML_FAMILY = 4


def _html_name(content: str) -> str | None:
    if len(content) > 2 and content[0] == "<" and content[-1] == ">":
        name = content[2:-1] if content[1] == "/" else content[1:-1]
        if name.lower() in HTML_ELEMENTS:
            return name.lower()
    return None


def html_vocabulary(tokens: list[AddedToken]) -> set[str]:
    """Contents of the added tokens that are HTML tags, when they form a markup family."""
    names = {t.content: n for t in tokens if (n := _html_name(t.content)) is not None}
    return set(names) if len(set(names.values())) >= MIN_HTML_FAMILY else set()


@rule("TA203")
def control_token_not_special(model: TokenizerModel) -> Iterator[Finding]:
    plain = [t for t in _primary_added(model) if t.special is False and t.id is not None and looks_control(t.content)]
    markup = html_vocabulary(plain)
    plain = [t for t in plain if t.content not in markup]
    groups = {
        "tool/reasoning markers": [t for t in plain if is_tool_or_reasoning_marker(t.content)],
        "control tokens": [t for t in plain if not is_tool_or_reasoning_marker(t.content)],
    }
    for group, tokens in groups.items():
        if not tokens:
            continue
        names = ", ".join(f"{t.content} ({t.id})" for t in tokens[:8]) + (" …" if len(tokens) > 8 else "")
        if group == "control tokens":
            message = (
                f"{len(tokens)} added tokens look like control tokens but are marked special: false: {names}. "
                "skip_special_tokens keeps them in user-visible text and transformers may split them "
                "(split_special_tokens); mark them special unless a parser must see them."
            )
            severity = Severity.WARNING
        else:
            message = (
                f"{len(tokens)} tool-call/reasoning markers are marked special: false: {names}. This is often "
                "deliberate (skip_special_tokens must keep them so the tool/reasoning parser sees them); check that "
                "your serving stack does not strip or split them."
            )
            severity = Severity.NOTE
        yield control_token_not_special.finding(
            message,
            severity=severity,
            location=tokens[0].source,
            ids=IdRanges.from_ids(t.id for t in tokens if t.id is not None),
            details={"subject": group, "tokens": [{"id": t.id, "token": t.content} for t in tokens]},
        )


_FLAG_EFFECT = {
    "special": "whether skip_special_tokens drops it",
    "normalized": "whether it is matched before or after normalization",
    "lstrip": "whether whitespace on its left is absorbed",
    "rstrip": "whether whitespace on its right is absorbed",
    "single_word": "whether it matches inside words",
}


@rule("TA204")
def added_token_flags_mismatch(model: TokenizerModel) -> Iterator[Finding]:
    a = model.artifacts
    if a.tokenizer_json is None or a.tokenizer_config is None:
        return
    in_json = {t.id: t for t in a.tokenizer_json.added_tokens}
    for tok in a.tokenizer_config.added_tokens_decoder:
        other = in_json.get(tok.id)
        if other is None or other.content != tok.content:
            continue
        diff = {
            k: (v, other.flags()[k])
            for k, v in tok.flags().items()
            if v is not None and other.flags()[k] is not None and v != other.flags()[k]
        }
        if not diff:
            continue
        text = "; ".join(
            f"{k}: {a.tokenizer_config.name} {str(c).lower()}, {a.tokenizer_json.name} {str(j).lower()} "
            f"({_FLAG_EFFECT[k]})"
            for k, (c, j) in diff.items()
        )
        yield added_token_flags_mismatch.finding(
            f"{tok.content} ({tok.id}) has different flags in the two files: {text}. Fast (tokenizer.json) and slow "
            "(tokenizer_config.json) loaders then treat it differently.",
            location=tok.source,
            ids=IdRanges.from_ids([tok.id]) if tok.id is not None else None,
            details={
                "subject": tok.content,
                "token": tok.content,
                "flags": {k: {"tokenizer_config": c, "tokenizer_json": j} for k, (c, j) in diff.items()},
            },
        )
