"""The scan rules: the one list of the modules that declare them (importing one registers its rules).

It sits above ``checks`` and ``template``, so that every import points down: the rule modules import
the registry, the registry imports no rule module.
"""

from __future__ import annotations

import importlib
import sys
from contextlib import nullcontext

from tokaudit.checks.registry import RULES, Rule
from tokaudit.collector import collector_paused

#: Every module that declares scan rules; a new rule module is added here.
RULE_MODULES = (
    "tokaudit.checks.artifact_rules",
    "tokaudit.checks.empty_tokens",
    "tokaudit.checks.gguf_rules",
    "tokaudit.checks.id_rules",
    "tokaudit.checks.id_space",
    "tokaudit.checks.special_tokens",
    "tokaudit.checks.stop_rules",  # TA220
    "tokaudit.checks.token_classes",
    "tokaudit.template.rules",  # the TA8xx family
    "tokaudit.roundtrip.rules",  # TA820-TA825, the parser round trip
    "tokaudit.template.security_rules",  # TA850-TA852
    "tokaudit.template.ollama",  # TA853
    "tokaudit.checks.pattern_rules",  # TA305
    "tokaudit.checks.pipeline_rules",  # TA309, TA310
)


def all_rules() -> list[Rule]:
    """Every registered rule, in code order (the first call imports the rule modules)."""
    first = RULE_MODULES[-1] not in sys.modules
    # no collection while the rule modules load (see tokaudit.collector)
    with collector_paused(freeze=True) if first else nullcontext():
        for module in RULE_MODULES:
            importlib.import_module(module)
    return sorted(RULES.values(), key=lambda r: r.code)
