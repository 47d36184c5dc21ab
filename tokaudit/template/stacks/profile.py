"""What a stack profile is: declarative data that says how one serving stack turns an OpenAI chat request into
the variables of a chat template (:class:`RequestRules`), which text it hands its engine (``rewrites``), how the
engine is configured (:class:`~tokaudit.template.renders.EngineConfig`), and (for issue 30) how the prompt is
tokenized, how output is detokenized and which parsers read it back.

A profile holds no code: :mod:`tokaudit.template.stacks.context` interprets the rules, as a pure function of
plain data, and :mod:`tokaudit.template.stacks.rewrites` the named text rewrites.
"""

from __future__ import annotations

from dataclasses import dataclass

from tokaudit.parsers.reasoning_table import reasoning_parsers
from tokaudit.parsers.tool_table import tool_parsers
from tokaudit.template.renders import EngineConfig

#: Special-token variables, in the order transformers' ``special_tokens_map`` lists them.
SPECIAL_TOKEN_FIELDS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")


@dataclass(frozen=True)
class RequestRules:
    """How a stack turns a request into template variables. Each field names one behaviour; the values are
    interpreted by :func:`tokaudit.template.stacks.context.build_context`."""

    #: ``request``: honours the request's ``add_generation_prompt``; ``always``: renders with it on (a request
    #: without it is not one this stack renders).
    generation_prompt: str
    #: ``tools`` when the request offers none: ``none`` (defined, null) or ``undefined`` (absent).
    tools_when_absent: str
    #: ``as-sent``; ``tgi`` (``parameters`` renamed ``arguments`` and serialized to a JSON string, a ``no_tool``
    #: function appended, the tool prompt appended to the last message); ``mistral.rs`` (rebuilt: name,
    #: description, parameters with type/properties/required/additionalProperties first, strict);
    #: ``dynamo`` (an object ``parameters`` missing ``type`` / ``properties`` gets them).
    tool_schema: str
    #: An assistant turn's ``content: null``: ``keep``; ``empty-string``; ``drop`` (the key is absent);
    #: ``by-format`` (vLLM: ``""`` for string-format templates, ``[]`` for openai-format ones).
    null_content: str
    #: ``keep``; ``tgi`` (no ``tool_calls`` key: with ``content: null`` the calls are serialized into the
    #: content as JSON, with any other content they are dropped).
    tool_calls: str
    #: Tool-call ``arguments`` (a JSON string on the wire): ``dict`` (parsed; one that does not parse is a
    #: request error); ``object`` (parsed, and must be an object); ``dict-if-parses`` (parsed when it parses, else
    #: kept); ``object-if-parses`` (parsed when it parses to an object, else kept); ``as-sent``.
    arguments: str
    #: A list of content parts: ``raw``; ``vllm`` (string-format templates: text parts joined with "\\n";
    #: openai-format templates: every content becomes a list of text parts); ``sglang`` (string format:
    #: joined with " "; openai format: text parts kept as a list); ``smg`` (string format: joined with "\\n";
    #: openai format: kept); ``join-newline`` (text-only lists joined with "\\n"); ``one-part-space`` (one
    #: text part, the texts joined with " ", user messages only); ``join-empty`` (joined with "").
    parts: str
    #: Which content-format detector decides ``vllm`` / ``sglang`` / ``smg`` parts (``vllm`` or ``sglang``).
    content_format: str = "vllm"
    #: The roles whose messages keep a ``name``.
    name_roles: tuple[str, ...] = ("system", "user", "assistant", "tool")
    #: A tool message's ``tool_call_id`` reaches the template.
    tool_call_id: bool = True
    #: Top-level None-valued message keys are removed (transformers ≥ 5.24, SGLang).
    drop_none_keys: bool = False
    #: ``aliases`` (transformers 5.24: the reasoning of ``reasoning_content`` / ``thinking`` / ``reasoning`` is
    #: set under all three of ``thinking``, ``reasoning_content`` and the name it came in); ``vllm`` (only
    #: ``reasoning`` is read, written as ``reasoning`` and ``reasoning_content``, then transformers' aliases);
    #: ``keep`` (``reasoning_content`` passes, the other names do not); ``drop``. (The request is a client's:
    #: its assistant turns carry ``reasoning_content``, as DeepSeek's API and SGLang return it.)
    reasoning: str = "keep"
    #: Other message keys (``prefix``, ``phase``...) pass through (``False``: only the keys the stack models).
    extra_message_keys: bool = False
    #: Which special-token variables the stack passes, and what a missing one is (``undefined`` or ``none``).
    special_tokens: tuple[str, ...] = SPECIAL_TOKEN_FIELDS
    missing_special_token: str = "undefined"
    #: ``documents`` is passed (None unless the request carries some).
    documents: bool = True
    #: ``all``: the request's ``chat_template_kwargs`` become variables; ``thinking``: only ``enable_thinking``
    #: and ``reasoning_effort``; ``none``.
    chat_template_kwargs: str = "all"
    #: Variables the stack always adds (mistral.rs: ``date_string``, ``enable_thinking``).
    fixed: tuple[tuple[str, object], ...] = ()


@dataclass(frozen=True)
class PromptTokens:
    """How the stack tokenizes a rendered chat prompt (None: not stated yet; issue 30 completes it)."""

    add_special_tokens: bool | None = None
    #: The rendered text's leading BOS is removed before tokenizing (llama.cpp's server).
    strips_leading_bos: bool = False
    source: str = ""


@dataclass(frozen=True)
class StackProfile:
    """One serving stack: what it passes to a chat template and how it renders it, as of the version named."""

    id: str
    title: str
    #: The version (and commit) mirrored.
    version: str
    #: Where it was read: repository and files.
    source: str
    engine: EngineConfig
    rules: RequestRules
    #: Named rewrites of the template text before it is compiled (:mod:`tokaudit.template.stacks.rewrites`).
    rewrites: tuple[str, ...] = ()
    #: One line per behaviour that sets the stack apart (the README's profile table).
    differs: tuple[str, ...] = ()
    #: Template markers of code paths the profile does not emulate: such a template is not rendered for the stack.
    not_emulated: tuple[tuple[str, str], ...] = ()
    prompt_tokens: PromptTokens = PromptTokens()
    #: The stack's tool-call and reasoning parsers and how it decodes output for them: a key of
    #: :data:`tokaudit.parsers.families.STACKS` (None: the stack parses no tool calls; transformers, mistral.rs).
    parsers: str | None = None

    @property
    def tool_parsers(self) -> tuple[str, ...]:
        """The stack's tool-call parsers, by its own names."""
        return tuple(p.name for p in tool_parsers(self.parsers)) if self.parsers else ()

    @property
    def reasoning_parsers(self) -> tuple[str, ...]:
        return tuple(p.name for p in reasoning_parsers(self.parsers)) if self.parsers else ()

    def skipped_for(self, template: str) -> str | None:
        """Why this template is not rendered for the stack (a code path the profile does not emulate), or None."""
        for marker, why in self.not_emulated:
            if marker in template:
                return why
        return None
