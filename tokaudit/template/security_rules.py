"""Template security rules inside ``scan`` (static: nothing is rendered): TA850 template-injection, TA851
hidden-instruction, TA852 invisible-characters (templates, added tokens' text, config strings)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from threading import Lock
from typing import Any

from tokaudit.artifacts.safe_files import read_bytes
from tokaudit.records import Provenance
from tokaudit.checks.registry import rule
from tokaudit.errors import InputError
from tokaudit.ids import IdRanges
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Finding, Severity
from tokaudit.result_cache import cache_key, conforms, installed_version, load, store
from tokaudit.template.hidden import Hidden, hidden_instructions
from tokaudit.template.invisible import Invisible, has_invisible_bytes, invisible_characters
from tokaudit.template.security import MAX_HITS, Pattern, injection_patterns
from tokaudit.template.source import TemplateSource, model_templates

#: Renderers a template reaches and what each does with these patterns.
_SANDBOXES = (
    "transformers and vLLM render in Jinja2's ImmutableSandboxedEnvironment and the Rust gateways in "
    "MiniJinja, which refuse underscore attributes at render time; a renderer without a sandbox runs them "
    "(llama-cpp-python before 0.2.72 rendered GGUF templates with a plain jinja2.Environment: CVE-2024-34359)"
)
#: Invisible characters whose purpose in a template is to make what a reviewer reads differ from what runs.
_DECEPTIVE = ("bidi-control", "tag")
#: GGUF token types whose text a person wrote (not learned): CONTROL (3) and USER_DEFINED (4).
_GGUF_CHOSEN_TYPES = (3, 4)
#: At most this many strings are walked in one config file.
MAX_STRINGS = 1_000_000


#: The modules whose code decides a reading (a change to either misses the result cache).
_MODULES = ("tokaudit.template.security", "tokaudit.template.hidden", "tokaudit.template.invisible", __name__)


#: A cached reading: patterns [kind, text, line]; hidden [triggers, text, condition line, line].
_READING = {"patterns": [(str, str, int)], "hidden": [([str], str, int, int)]}
#: A cached config walk: [key, string, [[line, column, code point, name, class]]].
_CONFIG_HITS = [(str, str, [(int, int, int, str, str)])]


def _reading(text: str) -> tuple[list[Pattern], list[Hidden]]:
    """TA850's patterns and TA851's hidden instructions of one template, from the result cache when this text was
    read before by this code and Jinja2 version (so a rescan does not import Jinja2)."""
    key = cache_key("template-security", {"template": text, "jinja2": installed_version("jinja2")}, _MODULES)
    hit = load(key, lambda v: conforms(v, _READING))
    try:
        if hit is not None:
            return (
                [Pattern(*p) for p in hit["patterns"]],
                [Hidden(tuple(h[0]), h[1], h[2], h[3]) for h in hit["hidden"]],
            )
    except (KeyError, TypeError, ValueError):
        pass  # a corrupted entry: read it again
    patterns, hidden = injection_patterns(text), hidden_instructions(text)
    store(
        key,
        {
            "patterns": [[p.kind, p.text, p.line] for p in patterns],
            "hidden": [[list(h.triggers), h.text, h.condition_line, h.line] for h in hidden],
        },
    )
    return patterns, hidden


_lock = Lock()
_templates_of: dict[int, tuple[TokenizerModel, list[TemplateSource]]] = {}


def _templates(model: TokenizerModel) -> list[TemplateSource]:
    """The model's templates, once per model object (reading them may parse tokenizer_config.json again)."""
    with _lock:
        hit = _templates_of.get(id(model))
        if hit is not None and hit[0] is model:
            return hit[1]
    found = model_templates(model)
    with _lock:
        if len(_templates_of) > 16:
            _templates_of.clear()
        _templates_of[id(model)] = (model, found)
    return found


def _where(t: TemplateSource, line: int) -> Provenance:
    loc = t.location
    if loc.key is None:  # a file of its own: the line inside it
        return Provenance(loc.file, line=(loc.line or 1) + line - 1)
    return loc


@rule("TA850")
def template_injection(model: TokenizerModel) -> Iterator[Finding]:
    for t in _templates(model):
        patterns = _reading(t.text)[0]
        if not patterns:
            continue
        shown = ", ".join(f"{p.text} (line {p.line})" for p in patterns[:6])
        more = f" and {len(patterns) - 6} more" if len(patterns) > 6 else ""
        yield template_injection.finding(
            f"the chat template {t.name!r} reaches Python internals or files the way sandbox-escape payloads do: "
            f"{shown}{more}. No chat template needs these. {_SANDBOXES}.",
            location=_where(t, patterns[0].line),
            details={
                "subject": f"{t.name}:{','.join(sorted({p.kind for p in patterns}))}",
                "template": t.name,
                "patterns": [{"kind": p.kind, "text": p.text, "line": p.line} for p in patterns],
            },
        )


@rule("TA851")
def hidden_instruction(model: TokenizerModel) -> Iterator[Finding]:
    for t in _templates(model):
        for h in _reading(t.text)[1]:
            triggers = " or ".join(repr(s) for s in h.triggers[:3])
            yield hidden_instruction.finding(
                f"the chat template {t.name!r} writes {h.text!r} only when a message's content matches {triggers} "
                f"(the condition at line {h.condition_line}): text nobody in the conversation wrote, which the model "
                f"reads as part of the prompt, switched on by what a user types.",
                location=_where(t, h.condition_line),
                details={
                    "subject": f"{t.name}:{h.condition_line}:{h.triggers[0]}",
                    "template": t.name,
                    "triggers": list(h.triggers),
                    "text": h.text,
                    "condition_line": h.condition_line,
                    "text_line": h.line,
                },
            )


@rule("TA852")
def invisible_chars(model: TokenizerModel) -> Iterator[Finding]:
    for t in _templates(model):
        found = invisible_characters(t.text)
        if found:
            first = found[0]
            yield _invisible(
                f"the chat template {t.name!r}",
                found,
                _where(t, first.line),
                f"template:{t.name}",
                template=True,
                column=first.column,
            )
    yield from _token_findings(model)
    yield from _config_findings(model)


def _invisible(
    what: str,
    found: list[Invisible],
    location: Provenance,
    subject: str,
    *,
    template: bool = False,
    column: int | None = None,
    extra: dict[str, Any] | None = None,
) -> Finding:
    kinds = sorted({i.kind for i in found})
    shown = "; ".join(f"{i.label} at line {i.line}, column {i.column}" for i in found[:4])
    more = f" and {len(found) - 4} more" if len(found) > 4 else ""
    deceptive = template and any(k in _DECEPTIVE for k in kinds)
    why = (
        "bidi controls reorder what an editor shows and tag characters are not shown at all, while the model reads "
        "them: what a reviewer approves is not what runs"
        if deceptive
        else "they are invisible where the text is reviewed, and the model still reads them"
    )
    return invisible_chars.finding(
        f"{what} holds {len(found)}{'+' if len(found) >= MAX_HITS else ''} invisible character"
        f"{'s' if len(found) != 1 else ''} ({', '.join(kinds)}): {shown}{more}; {why}.",
        severity=Severity.ERROR if deceptive else Severity.WARNING,
        location=location,
        details={"subject": subject, "characters": [i.to_json() for i in found], "column": column, **(extra or {})},
    )


def _added_tokens(model: TokenizerModel) -> Iterator[tuple[int | None, str, Provenance]]:
    """(id, text, where) of every token a person chose the text of: added and special tokens, GGUF
    CONTROL/USER_DEFINED tokens (the learned vocabulary is left out: joiners are part of real words there)."""
    a = model.artifacts
    for r in a.added_tokens_of_every_file():  # in the file-kind table's order
        yield r.id, r.content, r.source
    g = a.gguf
    if g is not None and g.types is not None:
        for i, kind in enumerate(g.types):
            if kind in _GGUF_CHOSEN_TYPES and has_invisible_bytes(g.tokens[i]):
                yield i, g.tokens[i].decode("utf-8", "replace"), g.source("tokenizer.ggml.tokens")


def _token_findings(model: TokenizerModel) -> Iterator[Finding]:
    by_file: dict[str, list[tuple[int | None, str, list[Invisible], Provenance]]] = {}
    seen: set[tuple[str, int | None, str]] = set()
    tokens = list(_added_tokens(model))
    if not invisible_characters("\n".join(text for _, text, _ in tokens)):  # one pass over all (Gemma 3: 12.8k texts)
        return
    for token_id, text, where in tokens:
        if (where.file, token_id, text) in seen:
            continue
        seen.add((where.file, token_id, text))
        found = invisible_characters(text)
        if found:
            by_file.setdefault(where.file, []).append((token_id, text, found, where))
    for file, file_tokens in by_file.items():
        shown = ", ".join(
            f"{i} = {text!r} ({', '.join(c.label for c in found[:2])})" for i, text, found, _ in file_tokens[:4]
        )
        more = f" and {len(file_tokens) - 4} more" if len(file_tokens) > 4 else ""
        characters = [c for _, _, found, _ in file_tokens for c in found]
        ids = sorted(i for i, _, _, _ in file_tokens if i is not None)
        yield invisible_chars.finding(
            f"{len(file_tokens)} added or control token{'s' if len(file_tokens) != 1 else ''} of {file} "
            f"hold{'' if len(file_tokens) != 1 else 's'} invisible characters "
            f"({', '.join(sorted({c.kind for c in characters}))}): {shown}{more}. Such a token looks like another one "
            "(or "
            f"like nothing) wherever it is printed, and text that spells the visible part does not encode to it.",
            location=file_tokens[0][3],
            ids=IdRanges.from_ids(ids) if ids else None,
            details={
                "subject": f"tokens:{file}",
                "tokens": [
                    {"id": i, "content": text, "characters": [c.to_json() for c in found]}
                    for i, text, found, _ in file_tokens[:MAX_HITS]
                ],
            },
        )


def _config_files(model: TokenizerModel) -> Iterator[Path]:
    a = model.artifacts
    for record in (a.tokenizer_config, a.special_tokens_map, a.config, a.generation_config):
        if record is not None and record.path.is_file():
            yield record.path


def _strings(value: Any, key: str, budget: list[int]) -> Iterator[tuple[str, str]]:
    """(key path, string) of every string in a JSON value, keys included, until the budget is spent."""
    stack: list[tuple[str, Any]] = [(key, value)]
    while stack and budget[0] > 0:
        path, v = stack.pop()
        budget[0] -= 1
        if isinstance(v, str):
            yield path, v
        elif isinstance(v, dict):
            for k, item in reversed(list(v.items())):
                yield f"{path}.{k}" if path else k, k
                stack.append((f"{path}.{k}" if path else k, item))
        elif isinstance(v, list):
            stack.extend((f"{path}[{i}]", item) for i, item in reversed(list(enumerate(v))))


def _reported_elsewhere(key: str) -> bool:
    """Templates and added tokens' text have their own findings."""
    return (
        key == "chat_template"
        or key.startswith(("chat_template[", "chat_template."))
        or (key.startswith("added_tokens_decoder.") and key.endswith(".content"))
    )


def _config_hits(data: bytes) -> list[tuple[str, str, list[Invisible]]]:
    """(key, string, characters) of a config file's strings that hold invisible characters: from the result cache
    when these bytes were walked before (Gemma 3's tokenizer_config.json costs ~90 ms to walk)."""
    import hashlib
    import json

    key = cache_key("config-invisible", {"bytes": hashlib.blake2b(data, digest_size=32).hexdigest()}, _MODULES)
    hit = load(key, lambda v: conforms(v, _CONFIG_HITS))
    try:
        if hit is not None:
            return [(k, text, [Invisible(*c) for c in chars]) for k, text, chars in hit]
    except (TypeError, ValueError):
        pass
    try:
        value = json.loads(data)
    except ValueError:
        return []
    hits = []
    for k, text in _strings(value, "", [MAX_STRINGS]):
        if _reported_elsewhere(k):
            continue
        found = invisible_characters(text)
        if found:
            hits.append((k, text, found))
        if len(hits) >= MAX_HITS:
            break
    store(key, [[k, text, [[c.line, c.column, c.codepoint, c.name, c.kind] for c in found]] for k, text, found in hits])
    return hits


def _config_findings(model: TokenizerModel) -> Iterator[Finding]:
    for path in _config_files(model):
        try:
            data = read_bytes(path)
        except InputError:
            continue  # the file's own parser already judged it readable; a race is not this rule's business
        if not has_invisible_bytes(data):
            continue
        hits = _config_hits(data)
        if not hits:
            continue
        key, _, found = hits[0]
        keys = ", ".join(f"{k} ({', '.join(c.label for c in f[:2])})" for k, _, f in hits[:4])
        more = f" and {len(hits) - 4} more" if len(hits) > 4 else ""
        yield invisible_chars.finding(
            f"{len(hits)} string{'s' if len(hits) != 1 else ''} of {path.name} hold{'' if len(hits) != 1 else 's'} "
            "invisible "
            f"characters: {keys}{more}; "
            f"they are invisible where the file is reviewed, and stacks read these values as they are.",
            location=Provenance(path.name, key=key),
            details={
                "subject": f"config:{path.name}",
                "strings": [{"key": k, "characters": [c.to_json() for c in f]} for k, _, f in hits],
            },
        )
