"""The real parser classes of an installed vLLM or SGLang, driven on one round-trip case (``--parsers installed`` and
``scripts/golden_parsers.py``: one way to drive them).

This module runs in the bounded worker's child (:mod:`tokaudit.worker`), never in tokaudit's own process: it imports
only the standard library at module level, so the child can run it under another interpreter (the stack's own venv)
with nothing of tokaudit installed there. The stacks are third-party code trusted as installed packages; the model's
files stay data (tokenizers are loaded as the stack loads them, without remote code).

A case is plain data: ``output_ids``, ``prompt_tail`` (the prompt's last ids, for the streamed reasoning check),
``prompt_state`` ("open" when the generation prompt opens reasoning), ``tools`` (OpenAI tool definitions),
``kwargs`` (chat_template_kwargs) and ``harmony`` (a gpt-oss tokenizer). A result is plain data too: ``refused``
(the stack's start-up or request-time refusal), or ``skip_special_tokens``, ``whole`` and ``stream<N>`` outcomes
(``reasoning``, ``content``, ``calls`` [{name, arguments}], or ``error``).
"""

from __future__ import annotations

import json
from typing import Any

#: The stacks whose parser classes this module drives, with the module imported to find whether one is installed.
STACKS = {"vllm": "vllm", "sglang": "sglang"}
#: Step sizes of the streamed parses (ids per DecodeStream step).
STEPS = (1, 3, 8)

_tokenizers: dict[str, Any] = {}


def probe(stack: str) -> dict[str, str]:
    """``{"version": "0.33.0"}`` when ``stack``'s parser classes import, else ``{"error": "<class>: <message>"}``."""
    try:
        _import_parsers(stack)
        from importlib.metadata import version

        return {"version": version(STACKS[stack])}
    except Exception as exc:  # noqa: BLE001 - any import failure is the answer
        return {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:300]}


def _import_parsers(stack: str) -> None:
    import logging

    logging.disable(logging.WARNING)  # the stacks log at import and per request: the worker keeps only a tail anyway
    if stack == "vllm":
        import vllm.entrypoints.openai.chat_completion.protocol
        import vllm.parser.parser_manager
        import vllm.tokenizers  # noqa: F401 - the probe: do the parser classes import
    elif stack == "sglang":
        import sglang.srt.entrypoints.openai.protocol
        import sglang.srt.function_call.function_call_parser
        import sglang.srt.parser.reasoning_parser  # noqa: F401 - as above, for SGLang
    else:
        raise ValueError(f"no installed parsers for {stack!r}")


def load_tokenizer(path: str) -> Any:
    """The tokenizer of a model directory as vLLM's server loads it (``vllm.tokenizers.get_tokenizer``, no remote
    code); SGLang's parsers take the same object. Loaded once per directory in this process."""
    if path not in _tokenizers:
        try:
            from vllm.tokenizers import get_tokenizer
        except ImportError:  # SGLang without vLLM: transformers' loader, as SGLang's own get_tokenizer does
            from transformers import AutoTokenizer

            _tokenizers[path] = AutoTokenizer.from_pretrained(path, trust_remote_code=False)
        else:
            _tokenizers[path] = get_tokenizer(path, trust_remote_code=False)
    return _tokenizers[path]


def run_pairs(
    stack: str, tokenizer_dir: str, case: dict[str, Any], pairs: list[tuple[str | None, str | None]]
) -> list[dict[str, Any]]:
    """The worker's entry point: each (tool parser, reasoning parser) pair of ``stack`` on ``case``."""
    _import_parsers(stack)
    tok = load_tokenizer(tokenizer_dir)
    run = run_vllm if stack == "vllm" else run_sglang
    return [run(case, tok, tool, reasoning) for tool, reasoning in pairs]


def _args(text: Any) -> Any:
    try:
        return json.loads(text)
    except (ValueError, TypeError):
        return text


def _deltas(tok: Any, ids: list[int], prompt: list[int], skip: bool, size: int) -> list[tuple[str, list[int]]]:
    """The output's deltas as the stacks' incremental detokenizer gives them (``tokenizers.DecodeStream``, primed
    with the prompt's last ids), ``size`` ids per step."""
    from tokenizers.decoders import DecodeStream

    backend = tok.backend_tokenizer if hasattr(tok, "backend_tokenizer") else tok._tokenizer
    stream = DecodeStream(skip_special_tokens=skip)
    for i in prompt[-8:]:
        stream.step(backend, i)
    out = []
    for start in range(0, len(ids), size):
        batch = ids[start : start + size]
        out.append(("".join(s for i in batch if (s := stream.step(backend, i)) is not None), batch))
    return out


class _Calls:
    """Streamed tool-call deltas joined per index."""

    def __init__(self) -> None:
        self.items: dict[int, dict[str, str]] = {}

    def add(self, index: int, name: str | None, args: str | None) -> None:
        item = self.items.setdefault(index, {"name": "", "arguments": ""})
        item["name"] += name or ""
        item["arguments"] += args or ""

    def result(self) -> list[dict[str, Any]]:
        return [{"name": v["name"], "arguments": _args(v["arguments"])} for _, v in sorted(self.items.items())]


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [""])[0][:300]


def run_vllm(case: dict[str, Any], tok: Any, tool: str | None, reasoning: str | None) -> dict[str, Any]:
    """vLLM's ``ParserManager.get_parser`` (its start-up validation with this tokenizer), the parser's
    ``adjust_request`` (skip_special_tokens), ``parse`` on the whole decode and ``parse_delta`` on the deltas."""
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.parser.parser_manager import ParserManager

    try:
        cls = ParserManager.get_parser(
            tool_parser_name=tool,
            reasoning_parser_name=reasoning,
            enable_auto_tools=tool is not None,
            is_harmony=bool(case.get("harmony")),
            tokenizer=tok,
        )
    except Exception as exc:  # noqa: BLE001 - the start-up refusal is the result
        return {"refused": _first_line(exc)}
    if cls is None:
        return {"skip": "no parser"}

    def request() -> Any:
        return ChatCompletionRequest(
            model="m",
            messages=[{"role": "user", "content": "x"}],
            tools=case["tools"],
            chat_template_kwargs=case["kwargs"] or None,
        )

    req = request()
    try:
        parser = cls(tok, req.tools, chat_template_kwargs=case["kwargs"])
    except Exception as exc:  # noqa: BLE001 - refused when the request's kwargs select a parser the tokenizer cannot serve
        return {"refused": "at request time: " + _first_line(exc)}
    req = parser.adjust_request(req)
    skip = True if req.skip_special_tokens is None else bool(req.skip_special_tokens)  # None: the default, True
    ids = case["output_ids"]
    text = tok.decode(ids, skip_special_tokens=skip)
    out: dict[str, Any] = {"skip_special_tokens": skip}
    try:
        r, content, calls = parser.parse(text, req, enable_auto_tools=tool is not None, model_output_token_ids=ids)
        out["whole"] = {
            "reasoning": r,
            "content": content,
            "calls": [{"name": c.name, "arguments": _args(c.arguments)} for c in calls or []],
        }
    except Exception as exc:  # noqa: BLE001 - what the stack's parser raises is its answer
        out["whole"] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
    for size in STEPS:
        req = request()
        p = cls(tok, req.tools, chat_template_kwargs=case["kwargs"])
        parser_req = p.adjust_request(req)
        acc = {"reasoning": "", "content": ""}
        calls_acc = _Calls()
        deltas = _deltas(tok, ids, case["prompt_tail"], skip, size)
        try:
            for k, (delta, batch) in enumerate(deltas):
                msg = p.parse_delta(
                    delta, batch, parser_req, prompt_token_ids=case["prompt_tail"], finished=k == len(deltas) - 1
                )
                if msg is None:
                    continue
                acc["reasoning"] += msg.reasoning or ""
                acc["content"] += msg.content or ""
                for c in msg.tool_calls or []:
                    fn = c.function
                    calls_acc.add(c.index, fn.name if fn else None, fn.arguments if fn else None)
            out[f"stream{size}"] = {
                "reasoning": acc["reasoning"] or None,
                "content": acc["content"] or None,
                "calls": calls_acc.result(),
            }
        except Exception as exc:  # noqa: BLE001 - what the stack's parser raises is its answer
            out[f"stream{size}"] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
    return out


def sglang_forces_reasoning(template: str, reasoning: str, kwargs: dict[str, Any]) -> bool:
    """Whether SGLang's server starts the output inside reasoning for a request with these chat_template_kwargs: its
    template detection (``detect_reasoning_pattern``: always on, or a toggle kwarg and its default) or, per request,
    ``OpenAIServingChat._get_reasoning_from_request`` (the toggle's value, else the detector's ``reasoning_default``),
    each called as the server calls it."""
    from types import SimpleNamespace

    from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest
    from sglang.srt.entrypoints.openai.serving_chat import OpenAIServingChat
    from sglang.srt.parser.reasoning_parser import ReasoningParser
    from sglang.srt.parser.template_detection import detect_reasoning_pattern

    always, config = detect_reasoning_pattern(template)
    server = SimpleNamespace(
        reasoning_parser=reasoning,
        template_manager=SimpleNamespace(reasoning_config=config),
        _reasoning_detector=ReasoningParser(model_type=reasoning).detector,
    )
    request = ChatCompletionRequest(
        model="m", messages=[{"role": "user", "content": "x"}], chat_template_kwargs=kwargs or None
    )
    return bool(always or OpenAIServingChat._get_reasoning_from_request(server, request))


def run_sglang(case: dict[str, Any], tok: Any, tool: str | None, reasoning: str | None) -> dict[str, Any]:
    """SGLang's ``ReasoningParser`` then ``FunctionCallParser``, whole and streamed, with the skip_special_tokens its
    server sets (off for a request with a tool parser, and for gpt-oss). With the case's ``template`` (the round trip
    and the golden cases) the reasoning is forced as the server decides (:func:`sglang_forces_reasoning`); without it
    when the generation prompt opens reasoning, else left to the detector's default."""
    from sglang.srt.entrypoints.openai.protocol import Tool
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    skip = not (tool is not None or case.get("harmony"))
    ids = case["output_ids"]
    force: bool | None = True if case["prompt_state"] == "open" else None
    out: dict[str, Any] = {"skip_special_tokens": skip}
    if reasoning and case.get("template") is not None:
        try:
            force = sglang_forces_reasoning(case["template"], reasoning, case["kwargs"])
        except Exception as exc:  # noqa: BLE001 - the server's own refusal of this reasoning parser
            return {"refused": f"{type(exc).__name__}: {exc}"[:300]}
        out["force_reasoning"] = force
    tools = [Tool(**t) for t in case["tools"]]

    def parsers() -> tuple[Any, Any]:
        rp = (
            ReasoningParser(
                model_type=reasoning,
                stream_reasoning=True,
                force_reasoning=force,
                tokenizer=tok,
                tool_call_parser_active=tool is not None,
            )
            if reasoning
            else None
        )
        fp = FunctionCallParser(tools, tool, tokenizer=tok) if tool else None
        return rp, fp

    try:
        rp, fp = parsers()
    except Exception as exc:  # noqa: BLE001 - whatever the stack's constructor raises is its refusal (data)
        return {"refused": f"{type(exc).__name__}: {exc}"[:300]}
    text = tok.decode(ids, skip_special_tokens=skip)
    try:
        r, normal = rp.parse_non_stream(text) if rp else (None, text)
        calls = []
        if fp is not None and normal:
            normal, items = fp.parse_non_stream(normal)
            calls = [{"name": c.name, "arguments": _args(c.parameters)} for c in items]
        out["whole"] = {"reasoning": r or None, "content": normal or None, "calls": calls}
    except Exception as exc:  # noqa: BLE001 - what the stack's parser raises is its answer
        out["whole"] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
    for size in STEPS:
        rp, fp = parsers()
        acc = {"reasoning": "", "content": ""}
        calls_acc = _Calls()
        try:
            for delta, _ in _deltas(tok, ids, case["prompt_tail"], skip, size):
                r, normal = rp.parse_stream_chunk(delta) if rp else (None, delta)
                acc["reasoning"] += r or ""
                if fp is not None and normal:
                    normal, items = fp.parse_stream_chunk(normal)
                    for c in items:
                        calls_acc.add(c.tool_index, c.name, c.parameters)
                acc["content"] += normal or ""
            if rp is not None and hasattr(rp, "parse_stream_end"):
                r, normal = rp.parse_stream_end()
                acc["reasoning"] += r or ""
                acc["content"] += normal or ""
            out[f"stream{size}"] = {
                "reasoning": acc["reasoning"] or None,
                "content": acc["content"] or None,
                "calls": calls_acc.result(),
            }
        except Exception as exc:  # noqa: BLE001 - what the stack's parser raises is its answer
            out[f"stream{size}"] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
    return out
