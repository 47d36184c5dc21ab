"""``compare --golden FILE``: expected ids per text, checked for every backend that encodes.

Two formats:

* llama.cpp's ``NAME.inp`` with ``NAME.out`` beside it (either may be named). Read as llama.cpp's
  ``tests/test-tokenizer-0.cpp`` reads them: the ``.inp`` is split on ``"\\n__ggml_vocab_test__\\n"``
  (nothing follows a final separator; a last text without one counts), the ``.out`` has one line of
  ids per text, stripped, ids separated by spaces, an empty line for an empty encoding. The counts
  must agree. Unlike llama.cpp (a ``std::map``), duplicate texts are kept, in order.
* JSONL: one object per line, ``{"text": "...", "ids": [1, 2]}``; blank lines are skipped.

The ids are what the tokenizer gives for the text with nothing added (llama.cpp's ``.out`` comes from
HF ``encode(add_special_tokens=False)``): each backend's ``encode``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokaudit.artifacts.safe_files import read_bytes
from tokaudit.artifacts.strict_json import parse_json_text
from tokaudit.errors import InputError, shorten

#: llama.cpp's separator between the texts of a ``.inp`` file.
SEPARATOR = "\n__ggml_vocab_test__\n"
#: A golden file (either half) is at most this large.
MAX_GOLDEN_BYTES = 16 * 1024 * 1024
#: At most this many golden cases.
MAX_CASES = 100_000
#: Largest id a golden file may expect (llama.cpp's ids are int32).
MAX_GOLDEN_ID = 2**31 - 1


@dataclass(frozen=True)
class GoldenCase:
    text: str
    ids: tuple[int, ...]
    #: "ggml-vocab-gpt-2.gguf.inp case 3" or "golden.jsonl:12"
    where: str


@dataclass(frozen=True)
class Golden:
    path: Path
    #: "llama.cpp .inp/.out" or "jsonl"
    kind: str
    cases: list[GoldenCase]

    def to_json(self) -> dict[str, Any]:
        return {"file": str(self.path), "format": self.kind, "cases": len(self.cases)}


def _utf8(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"not UTF-8 (byte 0x{data[exc.start]:02X} at offset {exc.start})", file=str(path), line=line
        ) from None


def _check_id(value: Any, path: Path, line: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_GOLDEN_ID:
        raise InputError(
            f"{what} {shorten(repr(value), 40)} is not a token id (an integer 0..{MAX_GOLDEN_ID})",
            file=str(path),
            line=line,
        )
    return value


def split_inp(raw: str) -> list[str]:
    """The texts of a ``.inp``, split exactly as test-tokenizer-0's ``read_tests`` splits them."""
    texts, pos = [], 0
    while pos < len(raw):
        nxt = raw.find(SEPARATOR, pos)
        if nxt == -1:
            texts.append(raw[pos:])
            break
        texts.append(raw[pos:nxt])
        pos = nxt + len(SEPARATOR)
    return texts


def _read_llamacpp(inp: Path, out: Path) -> Golden:
    texts = split_inp(_utf8(read_bytes(inp, MAX_GOLDEN_BYTES), inp))
    # std::getline: lines end at "\n" only, and a final "\n" ends the last line (no empty line after it)
    raw_out = _utf8(read_bytes(out, MAX_GOLDEN_BYTES), out)
    lines = raw_out.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(texts) > MAX_CASES or len(lines) > MAX_CASES:
        raise InputError(f"more than {MAX_CASES:,} golden cases", file=str(inp if len(texts) > MAX_CASES else out))
    if len(texts) != len(lines):
        raise InputError(
            f"{inp.name} has {len(texts)} texts but {out.name} has {len(lines)} lines of ids "
            "(llama.cpp's test-tokenizer-0 stops there: 'input and output files have different number of tests')",
            file=str(out),
        )
    if not texts:
        raise InputError("no golden cases (llama.cpp's test-tokenizer-0 stops there: 'no tests found')", file=str(inp))
    cases = []
    for number, (text, line) in enumerate(zip(texts, lines), start=1):
        ids = []
        for piece in line.split():
            if not piece.lstrip("-").isdigit() or len(piece) > 12:
                raise InputError(f"{shorten(piece, 40)!r} is not a token id", file=str(out), line=number)
            ids.append(_check_id(int(piece), out, number, "id"))
        cases.append(GoldenCase(text, tuple(ids), f"{inp.name} case {number}"))
    return Golden(inp, "llama.cpp .inp/.out", cases)


def _read_jsonl(path: Path) -> Golden:
    text = _utf8(read_bytes(path, MAX_GOLDEN_BYTES), path)
    cases = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        value = parse_json_text(line, str(path), number)
        if not isinstance(value, dict):
            raise InputError(
                f'a golden line is an object {{"text": ..., "ids": [...]}}, not {type(value).__name__}',
                file=str(path),
                line=number,
            )
        for key in ("text", "ids"):
            if key not in value:
                raise InputError(f"no {key!r}", file=str(path), line=number, key=key)
        if not isinstance(value["text"], str):
            raise InputError("not a string", file=str(path), line=number, key="text")
        if not isinstance(value["ids"], list):
            raise InputError("not a list of ids", file=str(path), line=number, key="ids")
        ids = tuple(_check_id(i, path, number, "id") for i in value["ids"])
        cases.append(GoldenCase(value["text"], ids, f"{path.name}:{number}"))
        if len(cases) > MAX_CASES:
            raise InputError(f"more than {MAX_CASES:,} golden cases", file=str(path), line=number)
    if not cases:
        raise InputError('no golden cases (a line is {"text": ..., "ids": [...]})', file=str(path))
    return Golden(path, "jsonl", cases)


def read_golden(path: Path) -> Golden:
    """A golden file: ``NAME.inp`` / ``NAME.out`` (the other beside it) or JSONL; bad input is an InputError."""
    name = path.name
    if name.endswith((".inp", ".out")):
        stem = path.with_name(name[:-4])
        inp, out = stem.with_name(stem.name + ".inp"), stem.with_name(stem.name + ".out")
        other = out if name.endswith(".inp") else inp
        if not other.is_file():
            raise InputError(f"a llama.cpp golden file needs {other.name} beside it", file=str(path))
        return _read_llamacpp(inp, out)
    if not path.is_file():
        raise InputError("no such golden file", file=str(path), key="--golden")
    return _read_jsonl(path)


# -- checking ---------------------------------------------------------------------------------------


@dataclass
class GoldenResult:
    """One backend's ids on the golden cases."""

    backend: str
    checked: int = 0
    mismatches: int = 0
    crashes: int = 0
    examples: list[dict[str, Any]] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "checked": self.checked,
            "mismatches": self.mismatches,
            "crashes": self.crashes,
            "examples": self.examples or [],
        }


def first_difference(a: list[int] | tuple[int, ...], b: list[int] | tuple[int, ...]) -> int:
    """Index of the first id where two sequences differ (the shorter length when one is a prefix)."""
    for k, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return k
    return min(len(a), len(b))


def _window(ids: list[int] | tuple[int, ...], k: int) -> str:
    """The ids around position ``k``, with "…" where the sequence goes on: "… 11, 12, 13 …"."""
    lo, hi = max(0, k - 2), k + 6
    return ("… " if lo else "") + ", ".join(map(str, ids[lo:hi])) + (" …" if hi < len(ids) else "")


def check_golden(golden: Golden, name: str, ids: list[list[int] | None], max_examples: int) -> GoldenResult:
    """Compare one backend's ids (one entry per golden case, None where encoding raised) with the file's."""
    from tokaudit.report.text import visible

    result = GoldenResult(name, examples=[])
    for case, got in zip(golden.cases, ids):
        if got is None:
            result.crashes += 1
            continue
        result.checked += 1
        if tuple(got) == case.ids:
            continue
        result.mismatches += 1
        if len(result.examples) < max_examples:  # type: ignore[arg-type]  # a result that checks keeps examples
            k = first_difference(case.ids, got)
            result.examples.append(  # type: ignore[union-attr]  # a result that checks keeps examples
                {
                    "case": case.where,
                    "text": visible(case.text[:200]),
                    "position": k,
                    "expected": _window(case.ids, k),
                    "got": _window(got, k),
                    "expected_count": len(case.ids),
                    "got_count": len(got),
                }
            )
    return result


def golden_findings(golden: Golden, results: list[GoldenResult], target: str) -> list[Any]:
    from tokaudit.compare.codes import GOLDEN_MISMATCH
    from tokaudit.report.finding import Finding
    from tokaudit.report.text import plural

    out = []
    for r in results:
        if not r.mismatches:
            continue
        ex = r.examples[0]  # type: ignore[index]  # a mismatch keeps an example
        out.append(
            Finding(
                GOLDEN_MISMATCH.code,
                GOLDEN_MISMATCH.name,
                GOLDEN_MISMATCH.severity,
                f"{r.backend}: {r.mismatches} of {plural(r.checked, 'golden case')} encode to other ids than "
                f"{golden.path.name} expects. "
                f'First, {ex["case"]} "{ex["text"]}", from position {ex["position"]}: expected [{ex["expected"]}], '
                f"got [{ex['got']}]",
                None,
                None,
                {
                    "backend": r.backend,
                    "golden": str(golden.path),
                    "format": golden.kind,
                    "checked": r.checked,
                    "mismatches": r.mismatches,
                    "examples": r.examples,
                },
                target,
            )
        )
    return out
