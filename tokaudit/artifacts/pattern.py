"""Which pre-tokenizer regex a model uses, and where that fact comes from.

Pattern discovery is artifact knowledge: the remote code's ``pat_str`` (read statically), tekken's
``config.pattern``, tokenizer.json's Split pre-tokenizer, or, for a bare rank file, the pattern of the
tiktoken encoding whose published file has the same sha256 (tiktoken's own registry,
``tiktoken_ext.openai_public``, read with ``ast``: nothing is downloaded or called). Backends only
consume the result.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from tokaudit.records import AddedToken, Provenance
from tokaudit.artifacts.load import Artifacts

if TYPE_CHECKING:  # ast and the remote-code reader are loaded only to read tiktoken's registry (rank-file models)
    import ast

#: cl100k_base's pattern: what transformers' tiktoken conversion falls back to when it knows none.
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""
)


@dataclass(frozen=True)
class Pattern:
    """A pre-tokenizer regex and where it comes from."""

    regex: str
    #: "tokenization_kimi.py:12 (pat_str)", "tekken.json config.pattern", "--pat-str", ...
    source: str
    #: The file (and line or key) that sets it; None for --pat-str.
    location: Provenance | None = None
    #: The engine the model's own loader runs it with: "fancy-regex" (tiktoken) or "oniguruma" (tokenizers).
    engine: str = "fancy-regex"


@dataclass(frozen=True)
class PatternSearch:
    """The pattern found, or why there is none although a file sets one."""

    pattern: Pattern | None
    #: e.g. "tokenization_glm.py:40 sets the pattern in a way tokaudit cannot read statically (...)"
    blocked: str | None = None
    blocked_at: Provenance | None = None


@dataclass(frozen=True)
class PublishedEncoding:
    """An encoding tiktoken publishes: its name, the sha256 of its rank file, its pattern and special tokens."""

    name: str
    sha256: str
    pattern: str
    special_tokens: dict[str, int]


@lru_cache(maxsize=1)
def published_encodings() -> dict[str, PublishedEncoding]:
    """sha256 -> encoding, from the constructors in tiktoken's registry module (read, never run)."""
    import ast
    import importlib.util

    from tokaudit.artifacts.constant_eval import evaluate_constant

    spec = importlib.util.find_spec("tiktoken_ext.openai_public")
    if spec is None or spec.origin is None:
        return {}
    try:
        with open(spec.origin, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
    except (OSError, SyntaxError, ValueError):
        return {}
    env: dict[str, object] = {}
    out: dict[str, PublishedEncoding] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            try:
                env[stmt.targets[0].id] = evaluate_constant(stmt.value, env)
            except ValueError:
                pass
        elif isinstance(stmt, ast.FunctionDef):
            found = _constructor(stmt, env)
            if found is not None and found.sha256 not in out:
                out[found.sha256] = found
    return out


def _constructor(func: ast.FunctionDef, module_env: dict[str, object]) -> PublishedEncoding | None:
    """``def cl100k_base(): ... load_tiktoken_bpe(url, expected_hash=H) ... return {"pat_str": ..., ...}``."""
    import ast

    from tokaudit.artifacts.constant_eval import evaluate_constant

    env = dict(module_env)
    digest = None
    result = None
    for stmt in func.body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call):
                for kw in node.keywords:
                    if (
                        kw.arg == "expected_hash"
                        and isinstance(kw.value, ast.Constant)
                        and isinstance(kw.value.value, str)
                    ):
                        digest = kw.value.value
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            try:
                env[stmt.targets[0].id] = evaluate_constant(stmt.value, env)
            except ValueError:
                env.pop(stmt.targets[0].id, None)
        elif isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Dict):
            result = stmt.value
    if digest is None or result is None:
        return None
    fields: dict[str, object] = {}
    for key, value in zip(result.keys, result.values):
        if isinstance(key, ast.Constant) and key.value in ("name", "pat_str", "special_tokens"):
            try:
                fields[key.value] = evaluate_constant(value, env)
            except ValueError:
                return None
    pattern, specials = fields.get("pat_str"), fields.get("special_tokens", {})
    if not isinstance(pattern, str) or not isinstance(specials, dict):
        return None
    return PublishedEncoding(str(fields.get("name", func.name)), digest, pattern, dict(specials))


def published_encoding(a: Artifacts) -> PublishedEncoding | None:
    """The tiktoken encoding whose published rank file is byte-identical to this target's."""
    if a.tiktoken is None:
        return None
    return published_encodings().get(a.tiktoken.sha256)


def search_pattern(a: Artifacts, override: str | None = None) -> PatternSearch:
    """The model's own pattern, by precedence, never a guess and never borrowed across a file that sets one."""
    if override:
        return PatternSearch(Pattern(override, "--pat-str"))
    for rc in a.remote_code:
        if rc.pat_str is not None:
            src = rc.pat_str_source
            return PatternSearch(
                Pattern(rc.pat_str, f"{src} ({src.key})" if src else rc.name, src or Provenance(rc.name))
            )
    for rc in a.remote_code:
        if rc.pat_str_unreadable is not None:
            other = " (tokenizer.json's may differ: not borrowed)" if a.tokenizer_json else ""
            return PatternSearch(
                None,
                f"{rc.pat_str_unreadable} sets the pattern in a way tokaudit cannot read statically "
                f"({rc.pat_str_unreadable_reason}){other}; pass --pat-str",
                rc.pat_str_unreadable,
            )
    if a.tekken and a.tekken.pattern:
        return PatternSearch(
            Pattern(
                a.tekken.pattern, f"{a.tekken.name} config.pattern", Provenance(a.tekken.name, key="config.pattern")
            )
        )
    if a.tokenizer_json and len(a.tokenizer_json.patterns) == 1:
        tj = a.tokenizer_json
        return PatternSearch(
            Pattern(tj.patterns[0], f"{tj.name} pre_tokenizer", Provenance(tj.name, key="pre_tokenizer"), "oniguruma")
        )
    known = published_encoding(a)
    if known is not None:
        name = a.tiktoken.name  # type: ignore[union-attr]  # a published encoding is a tiktoken rank file  # a published encoding is a tiktoken rank file
        return PatternSearch(
            Pattern(known.pattern, f"tiktoken's {known.name} ({name} has its published sha256)", Provenance(name))
        )
    return PatternSearch(None)


def find_pattern(a: Artifacts, override: str | None = None) -> Pattern | None:
    """The pattern of :func:`search_pattern`, or ``None``."""
    return search_pattern(a, override).pattern


def registry_special_tokens(a: Artifacts) -> tuple[AddedToken, ...]:
    """The special tokens tiktoken's registry gives a bare published rank file (p50k_base's ``<|endoftext|>``
    50256, cl100k_base's five, o200k_base's two): what ``tiktoken.get_encoding`` builds from this very file
    (litellm and every tiktoken cache user). None when another file declares added tokens (tokenizer_config's
    added_tokens_decoder, added_tokens.json, remote code): the model then says which specials it uses."""
    known = published_encoding(a)
    if known is None or a.remote_code or a.added_tokens_json is not None:
        return ()
    if a.tokenizer_config is not None and a.tokenizer_config.declares_added_tokens:
        return ()
    name = a.tiktoken.name  # type: ignore[union-attr]  # a published encoding is a tiktoken rank file
    src = Provenance(name, key=f"tiktoken registry: {known.name} special_tokens")
    return tuple(
        AddedToken(i, text, True, src) for text, i in sorted(known.special_tokens.items(), key=lambda kv: kv[1])
    )
