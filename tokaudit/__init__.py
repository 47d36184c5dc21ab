"""tokaudit: diagnostic and audit tool for LLM tokenizers."""

__version__ = "0.1.0"
