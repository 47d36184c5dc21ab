"""When Ollama replaces a GGUF's chat template with one of its own Go templates.

What Ollama does (ollama/ollama at fb307609, 2026-08-21): ``ollama create`` from a GGUF reads
``tokenizer.chat_template`` and calls ``template.Named`` (``server/model.go`` ``detectChatTemplate``), which
computes the Levenshtein distance (over code points, ``agnivade/levenshtein``) from that text to each Jinja template
of ``template/index.json`` (37 entries, each naming one of its ``.gotmpl`` templates), keeps the strictly smallest,
and accepts it when it is under 100: the model then gets that Go template (and its stop parameters) as its
TEMPLATE layer. At run time a model with a Go template renders prompts with it and starts llama-server with
``--no-jinja`` (``server/routes.go`` ``usesOllamaRenderedChat``, ``llm/llama_server.go`` ``appendJinjaArgs``), unless
``shouldPreferChatTemplate`` finds the GGUF's template more capable (tools, thinking) or ``OLLAMA_GO_TEMPLATE=0``.

Ollama's index is not part of tokaudit: it is read from ``$TOKAUDIT_OLLAMA_INDEX`` (a path to ``template/index.json``
of an Ollama checkout or module), else from the Go module cache (``$GOMODCACHE``, ``$GOPATH/pkg/mod`` or
``~/go/pkg/mod``: ``github.com/ollama/ollama@VERSION/template/index.json``, the newest version there).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from tokaudit.artifacts.safe_files import read_bytes
from tokaudit.checks.registry import rule
from tokaudit.errors import InputError
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Finding

#: template.Named accepts the closest template when its distance is below this.
THRESHOLD = 100
#: The index is a small JSON list; a larger file is not Ollama's.
MAX_INDEX_BYTES = 4 << 20
#: Templates longer than this are not compared (none of Ollama's index is near it; the DP is O(n * band)).
MAX_TEMPLATE_CHARS = 200_000
_VERSION = re.compile(r"@v(\d+)\.(\d+)\.(\d+)")


@dataclass(frozen=True)
class Match:
    """The Go template Ollama would use, its edit distance, and the index that says so."""

    name: str
    distance: int
    index: str


def find_index() -> Path | None:
    env = os.environ.get("TOKAUDIT_OLLAMA_INDEX")
    if env:
        return Path(env).expanduser()
    roots = [
        os.environ.get("GOMODCACHE"),
        *(str(Path(p) / "pkg" / "mod") for p in os.environ.get("GOPATH", "").split(os.pathsep) if p),
        str(Path.home() / "go" / "pkg" / "mod"),
    ]
    found = []
    for root in filter(None, roots):
        base = Path(root) / "github.com" / "ollama"
        if base.is_dir():
            found += [
                p / "template" / "index.json"
                for p in base.glob("ollama@v*")
                if (p / "template" / "index.json").is_file()
            ]
    if not found:
        return None

    def version(p: Path) -> tuple[int, ...]:
        m = _VERSION.search(str(p.parent.parent.name))
        return tuple(int(x) for x in m.groups()) if m else ()

    return max(found, key=version)


@lru_cache(maxsize=4)
def load_index(path: Path) -> tuple[tuple[str, str], ...]:
    """(name, Jinja template) of each entry; a file that is not such a list is an error naming it."""
    data = read_bytes(path, MAX_INDEX_BYTES)
    try:
        entries = json.loads(data)
    except ValueError as exc:
        raise InputError(f"not Ollama's template index: {exc}", file=str(path)) from None
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get("name"), str) and isinstance(e.get("template"), str) for e in entries
    ):
        raise InputError('not Ollama\'s template index (expected a list of {"name", "template"})', file=str(path))
    return tuple((e["name"], e["template"]) for e in entries)


def distance_below(a: str, b: str, limit: int) -> int | None:
    """The Levenshtein distance of ``a`` and ``b`` when it is below ``limit``, else None (a band of ``limit`` around
    the diagonal, given up as soon as a whole row of the band is at the limit)."""
    if abs(len(a) - len(b)) >= limit:
        return None
    if len(a) < len(b):
        a, b = b, a
    n, m = len(a), len(b)
    big = limit
    previous = [j if j < limit else big for j in range(m + 1)]
    for i in range(1, n + 1):
        lo, hi = max(1, i - limit + 1), min(m, i + limit - 1)
        current = [big] * (m + 1)
        current[0] = i if i < limit else big
        ca = a[i - 1]
        best = current[0]
        for j in range(lo, hi + 1):
            cost = previous[j - 1] + (ca != b[j - 1])
            if previous[j] + 1 < cost:
                cost = previous[j] + 1
            if current[j - 1] + 1 < cost:
                cost = current[j - 1] + 1
            current[j] = cost if cost < big else big
            if current[j] < best:
                best = current[j]
        if best >= limit:
            return None
        previous = current
    return previous[m] if previous[m] < limit else None


def predict(template: str, index_path: Path) -> Match | None:
    """The Go template ``ollama create`` would give a GGUF with this chat template, or None (it keeps the GGUF's)."""
    if len(template) > MAX_TEMPLATE_CHARS:
        return None
    best: tuple[int, str] | None = None
    for name, candidate in load_index(index_path):
        limit = THRESHOLD if best is None else min(THRESHOLD, best[0])
        d = distance_below(template, candidate, limit)
        if d is not None and (best is None or d < best[0]):  # the strictly smallest, first in index order on ties
            best = (d, name)
    return None if best is None else Match(best[1], best[0], str(index_path))


# ---- TA853, a note on GGUF targets ---------------------------------------------------------------------------------


def _cached_predict(template: str, index: Path) -> Match | None:
    """:func:`predict`, from the result cache when this template was matched against an index with these bytes."""
    import hashlib

    from tokaudit.result_cache import OneOf, cache_key, conforms, load, store

    digest = hashlib.blake2b(read_bytes(index, MAX_INDEX_BYTES), digest_size=32).hexdigest()
    key = cache_key("ollama-template", {"template": template, "index": digest}, (__name__,))
    hit = load(key, lambda v: conforms(v, {"match": OneOf(None, (str, int))}))
    if isinstance(hit, dict) and "match" in hit:
        m = hit["match"]
        if m is None:
            return None
        if isinstance(m, list) and len(m) == 2:
            return Match(str(m[0]), int(m[1]), str(index))
    match = predict(template, index)
    store(key, {"match": None if match is None else [match.name, match.distance]})
    return match


def gguf_template(model: TokenizerModel) -> str | None:
    g = model.artifacts.gguf
    return None if g is None else g.chat_templates.get("default")


@rule("TA853")
def ollama_template_substitution(model: TokenizerModel) -> Iterator[Finding]:
    template = gguf_template(model)
    index = find_index() if template else None
    if template is None or index is None:
        return
    match = _cached_predict(template, index)
    if match is None:
        return
    g = model.artifacts.gguf
    assert g is not None
    yield ollama_template_substitution.finding(
        f"ollama create from {g.name} would replace its chat template with Ollama's own Go template {match.name!r}: "
        "the "
        f"template is {match.distance} edit{'s' if match.distance != 1 else ''} from Ollama's copy of it, under the "
        f"threshold of {THRESHOLD} of template.Named (index {match.index}). Ollama then renders prompts with that Go "
        "template and starts llama-server with --no-jinja, so a change to this template does not reach Ollama's "
        "users; "
        f"it keeps this template only when it finds it more capable (tools, thinking) than the Go template, or with "
        f"OLLAMA_GO_TEMPLATE=0.",
        location=g.source("tokenizer.chat_template"),
        details={
            "subject": match.name,
            "ollama_template": match.name,
            "distance": match.distance,
            "index": match.index,
            "stacks": ["ollama"],
        },
    )
