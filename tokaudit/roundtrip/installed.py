"""``--parsers installed|auto``: the round trip through a serving stack's own parser classes where the stack is
installed, run by :mod:`tokaudit.parsers.installed` in a bounded worker process (:mod:`tokaudit.worker`).

The worker's interpreter is tokaudit's own, or the one ``TOKAUDIT_STACK_PYTHON`` names (the deploy's venv, where
vLLM or SGLang is installed); its allow-list is that one module. Importing vLLM takes 10-30 s of CPU: the first call
of a run has a larger budget than the others.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tokaudit.errors import InputError
from tokaudit.parsers.installed import STACKS as INSTALLABLE
from tokaudit.roundtrip.run import Decoder, Pair, Row, evaluate, installed_row, is_harmony, stack_pairs
from tokaudit.template.turn import SENTINEL_TOOL
from tokaudit.worker import Limits, Worker, WorkerError, WorkerFailure, shared_worker

#: Environment variable naming the interpreter the stacks are installed in.
PYTHON_ENV = "TOKAUDIT_STACK_PYTHON"
#: torch (imported by vLLM) reserves several GiB of address space; a call's CPU covers importing both stacks.
LIMITS = Limits(memory_bytes=32 * 1024**3, cpu_seconds=240, wall_seconds=600.0)
MODULE = "tokaudit.parsers.installed"
#: Prompt ids sent with a case: the streamed reasoning check reads the prompt's tail (as the golden script does).
PROMPT_TAIL = 48


def worker() -> Worker:
    """The run's worker for the interpreter the stacks are imported from (one per interpreter)."""
    python = os.environ.get(PYTHON_ENV) or None
    return shared_worker(f"stack parsers in {python or 'tokaudit'}", LIMITS, (f"{MODULE}:",), python)


def grammars(stacks: list[str], mode: str) -> dict[str, str]:
    """Per chosen stack, whose parsers run: ``"installed (vllm 0.33.0)"`` or ``"built-in"``. ``installed``: a stack
    with installed parsers (vLLM, SGLang) that does not import is exit 2, naming it and the import error."""
    out = {s: "built-in" for s in stacks}
    if mode == "builtin":
        return out
    for stack in (s for s in stacks if s in INSTALLABLE):
        try:
            found = worker().call(f"{MODULE}:probe", stack)
        except (WorkerFailure, WorkerError) as exc:
            found = {"error": str(exc)}
        if "version" in found:
            out[stack] = f"installed ({stack} {found['version']})"
        elif mode == "installed":
            python = os.environ.get(PYTHON_ENV) or "tokaudit's Python"
            raise InputError(f"{stack} is not importable in {python}: {found['error']}", key="--parsers")
    return out


def tokenizer_dir(model: Any) -> str:
    """The directory a stack loads the tokenizer from (the model's, as its server is pointed at it)."""
    source = getattr(model, "source", None)
    path = Path(str(source.path if source is not None else model.target))
    return str(path if path.is_dir() else path.parent)


def stack_rows(
    dec: Decoder, stack: str, grammar: str, directory: str, tool_names: Any, reasoning_names: Any, strict: bool
) -> list[Row] | None:
    """The rows of ``stack``'s own classes on this case; None when they cannot run here and ``strict`` is off (the
    caller then uses the grammars): no token ids, or the stack cannot load this tokenizer."""
    pairs: list[Pair] = stack_pairs(dec, stack, tool_names, reasoning_names)
    if not pairs:
        return []
    case = dec.case
    why = None
    if case.output_ids is None or case.prompt_ids is None:
        why = f"no token ids to feed the parsers ({case.tokenizer_note})"
    else:
        data = {
            "output_ids": case.output_ids,
            "prompt_tail": case.prompt_ids[-PROMPT_TAIL:],
            "prompt_state": case.prompt_state,
            "tools": [SENTINEL_TOOL],
            "kwargs": dict(case.turn.kwargs),
            "harmony": is_harmony(dec.id_of),
            "template": case.extra.get("template"),
        }
        run = [
            p for p in pairs if p != (None, None)
        ]  # no parser at all: the decoded text is the content, no class runs
        try:
            results = worker().call(
                f"{MODULE}:run_pairs", stack, directory, data, [(t and t.name, r and r.name) for t, r in run]
            )
        except (WorkerFailure, WorkerError) as exc:
            why = f"{stack}'s installed parsers failed on {directory}: {exc}"
        else:
            got = dict(zip(run, results))
            return [
                installed_row(dec, stack, p, got[p], grammar) if p in got else evaluate(dec, stack, *p) for p in pairs
            ]
    if strict:
        raise InputError(why, key="--parsers")
    return None
