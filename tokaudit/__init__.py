"""tokaudit: diagnostic and audit tool for LLM tokenizers."""

__version__ = "0.2.0"

#: The project's source repository: rule pages (SARIF ``helpUri``) link to it at the release's tag. Set once,
#: here and in pyproject.toml's ``[project.urls]``, when the repository moves (see README, "Releasing").
REPOSITORY_URL = "https://github.com/OWNER/tokaudit"
