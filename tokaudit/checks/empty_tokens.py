"""TA206 empty-token: an added (special) token whose content is empty.

tiktoken (and the Rust loaders built on it) loops forever encoding with an empty special token, and
Ctrl-C does not stop it; tokaudit keeps such tokens out of the encoders it builds
(:func:`tokaudit.backends.vocab.byte_vocab`) and reports them here. An empty *rank* is harmless to
tiktoken (whisper's multilingual.tiktoken has one) and is not reported.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokaudit.records import AddedToken
from tokaudit.checks.registry import rule
from tokaudit.ids import IdRanges
from tokaudit.model.tokenizer_model import TokenizerModel
from tokaudit.report.finding import Finding


def _empty_added(model: TokenizerModel) -> Iterator[AddedToken]:
    """Every file's empty added tokens, file by file in the file-kind table's order (artifacts/kinds.py)."""
    return (t for t in model.artifacts.added_tokens_of_every_file() if t.content == "")


@rule("TA206")
def empty_token(model: TokenizerModel) -> Iterator[Finding]:
    for tok in _empty_added(model):
        yield empty_token.finding(
            f"added token {tok.id} ({tok.source}) has empty content: tiktoken-based loaders loop forever encoding "
            "with it (and Ctrl-C does not stop them); tokaudit's backends leave it out.",
            location=tok.source,
            ids=IdRanges.from_ids([tok.id]) if tok.id is not None else None,
            details={"subject": f"{tok.source.file}:{tok.source.key}", "id": tok.id},
        )
