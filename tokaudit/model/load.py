"""A target's model: resolve it, parse its files, build its :class:`TokenizerModel`."""

from __future__ import annotations

from dataclasses import replace

from tokaudit.artifacts.load import load_artifacts
from tokaudit.collector import collector_paused
from tokaudit.model.tokenizer_model import TokenizerModel, build_model
from tokaudit.source.resolve import resolve


def load_model(target: str, revision: str | None = None, pat_str: str | None = None) -> TokenizerModel:
    """``pat_str``: a --pat-str for the encoders built from this model (scan --deep, template)."""
    source = resolve(target, revision)
    # millions of containers (a 262k vocabulary, its merges), long-lived and acyclic: the collector would only
    # re-scan them (a third of a Gemma 3 load); frozen out of later collections (see tokaudit.collector)
    with collector_paused(freeze=True):
        model = build_model(load_artifacts(source.path), source.display)
    return replace(model, pat_str=pat_str, source=replace(source, primary=model.vocab_artifact or None))
