"""What a template render is, what bounds it and how an engine is configured: the records the engines make
and the template rules keep (and cache). Importing this does not import the engines
(:mod:`tokaudit.template.engines`), which a scan whose renders are all cached never runs.

One render is a pure function of plain data: ``(EngineConfig, template text, context) -> Render``, where the
context holds only JSON values (dicts, lists, strings, numbers, booleans, None) and the engine configuration is
a small frozen value. So a render can be repeated in another process, cached, and shared by every stack
profile that builds the same context for the same engine configuration.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Protocol

#: The engine kinds: Jinja2 as transformers configures it, MiniJinja (the Python binding, 3.x) configured and
#: patched to behave as the MiniJinja 2.x a Rust stack pins, and llama.cpp's own template engine (a child process:
#: :mod:`tokaudit.template.llamacpp_engine`).
ENGINE_KINDS = ("jinja2", "minijinja", "llama.cpp")

#: How Jinja2's operator guard starts its error: an allocation no render may make.
SIZE_BOMB = "a repetition of"

#: ``tojson`` flavours. ``python``: ``json.dumps`` with transformers' keyword arguments (ensure_ascii, indent,
#: separators, sort_keys), no HTML escaping. ``minijinja-2``: MiniJinja 2.x's builtin (compact ``{"a":1}``,
#: ``< > & '`` escaped as ``\\u003c`` ..., only ``indent``; another keyword argument is an error).
#: ``serde-escaped``: Dynamo's own filter (compact, escaped, only ``indent`` read, others ignored).
#: ``python-spacing``: mistral.rs' own filter (``", "`` and ``": "`` separators, no escaping, only ``indent``
#: read, others ignored).
TOJSON_FLAVOURS = ("python", "minijinja-2", "serde-escaped", "python-spacing")


@dataclass(frozen=True)
class EngineConfig:
    """How a stack configures its template engine: a small value an engine is built from (in this process or
    another). Each knob is a behaviour that changes a prompt or an error; the profiles say which stack sets
    which, and from what source."""

    kind: str
    #: A short label for reports (``jinja2``, ``minijinja-2.8``, ...).
    name: str
    #: The engine version the stack pins (stated; MiniJinja renders with the installed 3.x binding, patched).
    pins: str
    trim_blocks: bool = True
    lstrip_blocks: bool = True
    #: ``{% break %}`` / ``{% continue %}``: MiniJinja's ``loop_controls`` feature (mistral.rs builds without it).
    loop_controls: bool = True
    tojson: str = "python"
    strftime_now: bool = True
    #: ``{% generation %}``: True renders its body (transformers' AssistantTracker extension); False, MiniJinja
    #: has no such tag and the template does not compile (a stack may strip the tag from the text first).
    generation_tag: bool = True
    #: MiniJinja built without ``preserve_order`` keeps every map in key order (a BTreeMap): TGI.
    sorted_maps: bool = False
    #: pycompat ``dict.get(key, default)``: MiniJinja-contrib ≥ 2.15 (#852); 2.8 and 2.14 accept one argument.
    get_default: bool = True
    #: Dynamo registers a ``length`` filter that gives 0 for none and undefined.
    length_of_none_is_zero: bool = False

    def key(self) -> str:
        """A canonical text of every knob: two configurations with the same key render alike."""
        key = _KEYS.get(self)
        if key is None:
            key = _KEYS[self] = json.dumps(asdict(self), sort_keys=True)
        return key


_KEYS: dict[EngineConfig, str] = {}


@dataclass(frozen=True)
class Budget:
    """Bounds of one render: wall time (Jinja2), steps (MiniJinja fuel, ~20 M steps ≈ 1 s), output size."""

    seconds: float = 2.0
    fuel: int = 20_000_000
    max_chars: int = 1_000_000
    #: Time all renders of one template may take together (the render worker's CPU time; see template/rendering.py).
    total_seconds: float = 30.0


@dataclass(frozen=True)
class Render:
    """What one engine configuration made of one context: the text, or an error and its kind.

    kinds: ``syntax`` (the template does not compile), ``raise`` (the template called raise_exception),
    ``budget`` (time, steps, output size or recursion depth ran out), ``error``, ``unavailable`` (the engine is
    not available here: llama.cpp's), ``skipped`` (an earlier render of the template exhausted its budget).
    """

    engine: str
    text: str | None
    error: str | None = None
    kind: str | None = None

    @property
    def ok(self) -> bool:
        return self.text is not None

    def to_json(self) -> list[Any]:
        return [self.engine, self.text, self.error, self.kind]


class Prepared(Protocol):
    def render(self, context: dict[str, Any]) -> Render: ...
