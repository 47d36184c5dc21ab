"""The engine configurations the profiles share (one value per distinct configuration)."""

from __future__ import annotations

from tokaudit.template.renders import EngineConfig

#: transformers' ImmutableSandboxedEnvironment (transformers/utils/chat_template_utils.py:563-675 in 5.24.0):
#: trim_blocks, lstrip_blocks, loopcontrols, the AssistantTracker ``{% generation %}`` extension, json.dumps
#: ``tojson``, ``raise_exception``, ``strftime_now``, a ``dict`` and ``namespace`` refusing underscore names.
#: vLLM and SGLang render through it.
JINJA2_TRANSFORMERS = EngineConfig(kind="jinja2", name="jinja2", pins="Jinja2, as transformers 5 configures it")
