"""The model's pre-tokenizer pattern, as backends consume it (discovery lives in :mod:`tokaudit.artifacts.pattern`)."""

from __future__ import annotations

from dataclasses import dataclass

from tokaudit.artifacts.pattern import CL100K_PATTERN, Pattern, PatternSearch, search_pattern
from tokaudit.model.tokenizer_model import TokenizerModel

__all__ = [
    "CL100K_PATTERN",
    "Pattern",
    "PatternSearch",
    "divergences",
    "find_pattern",
    "no_pattern_reason",
    "onig_pattern",
]


def find_pattern(model: TokenizerModel, override: str | None = None) -> Pattern | None:
    """The model's own pattern, by precedence (``--pat-str`` first); ``None`` when nothing declares one (never a
    guess)."""
    return search_pattern(model.artifacts, override or model.pat_str).pattern


def no_pattern_reason(model: TokenizerModel, override: str | None = None) -> str | None:
    """Why an encoder cannot be built (``None`` when there is a pattern): names the file that blocks borrowing."""
    found = search_pattern(model.artifacts, override or model.pat_str)
    if found.pattern is not None:
        return None
    return found.blocked or "no pre-tokenizer pattern found (pattern-unknown); pass --pat-str"


# --- engine portability -------------------------------------------------------------------------
# tiktoken runs patterns with fancy-regex, HF tokenizers with Oniguruma (Ruby syntax), slow
# transformers tokenizers and tokaudit's reference with Python ``regex``. They read a few constructs
# differently: Oniguruma has no possessive interval (``X{1,3}+`` is ``(X{1,3})+``), and its ``$`` / ``^``
# match at every line end / start where the others match only at the end / start of the text.

ENGINES = ("fancy-regex", "oniguruma", "regex")
#: Short inputs that exercise digits, whitespace and line ends, contractions, case, scripts and marks.
#: Python regex's per-call timeout (wall time): a guard against catastrophic backtracking, long enough that a
#: loaded machine does not reach it on a short probe.
REGEX_CALL_SECONDS = 2.0

PROBES = (
    "1314151",
    "12345678 9",
    "$1,234,567.89",
    "3.14159e10",
    "٣٤٥٦٧",
    "a  \n  b",
    "x   ",
    "  \n\n  y",
    "a\r\n\r\nb",
    "\t\tx\t",
    "hello world  ",
    "I'M DON'T we'll You'Re",
    "HelloWorld ABCdef aBC",
    "...!!!\n\n???",
    "foo/bar//baz\n/x",
    "e\u0301t\u00e9",
    "你好世界 中文字符",
    "日本語のテキスト",
    "한국어 텍스트",
    "Привет, мир!",
    "مرحبا بالعالم",
    "ကမ္ဘာ မင်္ဂလာ",
    "🙂👍🏽 ok",
    "def f(x):\n    return x**2\n",
    "<|im_start|>user\n",
    "x\n",
    "\n",
    " ",
    "a\u00a0b\u2009c",
    "ALLCAPS123abc",
    "snake_case_name",
)


def translate_for_onig(regex: str) -> str:
    """``regex`` rewritten so that Oniguruma reads it as fancy-regex does: a possessive interval
    ``X{n,m}+`` becomes the atomic group ``(?>X{n,m})``, and ``$`` / ``^`` outside classes become
    ``\\z`` / ``\\A``. Everything else is copied unchanged."""
    out: list[str] = []
    starts: list[int] = []  # positions in ``out`` where each atom starts (for the atomic-group rewrite)
    groups: list[int] = []
    i, n, depth = 0, len(regex), 0
    while i < n:
        c = regex[i]
        if c == "\\":
            j = i + 2
            if i + 1 < n and regex[i + 1] in "pPx" and j < n and regex[j] == "{":
                j = regex.find("}", j) + 1 or n
            starts.append(len(out))
            out.append(regex[i:j])
            i = j
        elif c == "[":
            j = i + 1
            if j < n and regex[j] == "^":
                j += 1
            if j < n and regex[j] == "]":
                j += 1
            while j < n and regex[j] != "]":
                j += 2 if regex[j] == "\\" else 1
            starts.append(len(out))
            out.append(regex[i : j + 1])
            i = j + 1
        elif c == "(":
            groups.append(len(out))
            out.append(c)
            depth += 1
            i += 1
        elif c == ")":
            starts.append(groups.pop() if groups else len(out))
            out.append(c)
            depth = max(depth - 1, 0)
            i += 1
        elif c == "{" and starts:
            j = regex.find("}", i)
            body = regex[i + 1 : j] if j > 0 else ""
            if j > 0 and body.replace(",", "").isdigit() and j + 1 < n and regex[j + 1] == "+":
                atom = starts[-1]
                out[atom:] = ["(?>" + "".join(out[atom:]) + regex[i : j + 1] + ")"]
                i = j + 2
            else:
                out.append(regex[i : j + 1] if j > 0 else c)
                i = j + 1 if j > 0 else i + 1
        elif c == "$":
            out.append(r"\z")
            i += 1
        elif c == "^":
            out.append(r"\A")
            i += 1
        else:
            if c not in "|*+?":
                starts.append(len(out))
            out.append(c)
            i += 1
    return "".join(out)


def _tiktoken_splitter(regex: str, probes: tuple[str, ...]):
    """fancy-regex pieces through tiktoken itself: ranks holding every byte and every substring of the
    probes make each pre-token exactly one token, so the ids show the split."""
    import tiktoken

    ranks: dict[bytes, int] = {bytes([b]): b for b in range(256)}
    for probe in probes:
        data = probe.encode("utf-8")
        for a in range(len(data)):
            for b in range(a + 2, len(data) + 1):
                ranks.setdefault(data[a:b], len(ranks))
    enc = tiktoken.Encoding("tokaudit-probe", pat_str=regex, mergeable_ranks=ranks, special_tokens={})

    def split(text: str) -> list[str]:
        return [enc.decode_single_token_bytes(i).decode("utf-8", "replace") for i in enc.encode_ordinary(text)]

    return split


def splitters(regex: str, probes: tuple[str, ...] = PROBES, onig_regex: str | None = None) -> dict[str, object]:
    """engine -> a function text -> pieces, or the error string when the engine rejects the pattern.
    ``onig_regex``: what Oniguruma runs instead (a translation of ``regex``)."""
    out: dict[str, object] = {}
    try:
        out["fancy-regex"] = _tiktoken_splitter(regex, probes)
    except (ValueError, BaseException) as exc:  # tiktoken raises ValueError; a panic is a BaseException
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        out["fancy-regex"] = f"rejected: {str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__}"
    try:
        from tokenizers import Regex, pre_tokenizers

        split = pre_tokenizers.Split(
            Regex(onig_regex or regex), behavior="removed", invert=True
        )  # the matches only, as tiktoken
        out["oniguruma"] = lambda text: [p for p, _ in split.pre_tokenize_str(text)]
    except BaseException as exc:  # tokenizers raises plain Exception (or panics) on a bad regex
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        out["oniguruma"] = f"rejected: {str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__}"
    try:
        import regex as regex_module

        compiled = regex_module.compile(regex, regex_module.VERSION1)  # set operations (&&) as fancy-regex reads them
        out["regex"] = lambda text: [
            m.group(0) for m in compiled.finditer(text, timeout=REGEX_CALL_SECONDS) if m.group(0)
        ]
    except Exception as exc:  # noqa: BLE001 - regex.error, and anything else the module raises on a pattern
        out["regex"] = f"rejected: {str(exc).splitlines()[0][:120]}"
    return out


@dataclass(frozen=True)
class Divergence:
    """One probe the engines split differently."""

    text: str
    pieces: dict[str, list[str]]


def divergences(
    regex: str,
    engines: tuple[str, ...] = ENGINES,
    probes: tuple[str, ...] = PROBES,
    budget_seconds: float = 2.0,
    onig_regex: str | None = None,
) -> tuple[list[Divergence], dict[str, str], bool]:
    """Probes the engines split differently, engines that reject the pattern (engine -> why), and
    whether every probe ran within the time budget.

    The budget is this thread's CPU time, not the wall clock: under load, or beside other scan threads waiting
    for the GIL, a wall-clock budget ran out in one run and not in another, so the same model got other findings.
    Python regex's own per-call timeout is wall time; when it fires the probe's result is unknown (an incomplete
    probe), never a divergence."""
    import time

    split = splitters(regex, probes, onig_regex)
    rejected = {e: str(split[e]) for e in engines if isinstance(split.get(e), str)}
    usable = [e for e in engines if callable(split.get(e))]
    found: list[Divergence] = []
    deadline = time.thread_time() + budget_seconds
    for text in probes:
        if time.thread_time() > deadline:
            return found, rejected, False
        pieces: dict[str, list[str]] = {}
        for engine in usable:
            try:
                pieces[engine] = split[engine](text)  # type: ignore[operator]  # usable: callable ones only
            except TimeoutError:
                return found, rejected, False
            except BaseException as exc:  # a panic inside an engine
                if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                    raise
                pieces[engine] = [f"<{type(exc).__name__}>"]
        if len({tuple(p) for p in pieces.values()}) > 1:
            found.append(Divergence(text, pieces))
    return found, rejected, True


def shrink(
    regex: str, text: str, engines: tuple[str, ...] = ENGINES, onig_regex: str | None = None, steps: int = 60
) -> Divergence | None:
    """A shorter input the engines still split differently (drop one character at a time, bounded)."""

    def diverges(t: str) -> dict[str, list[str]] | None:
        split = splitters(regex, (t,), onig_regex)  # tiktoken's splitter knows only the substrings of t
        pieces = {e: split[e](t) for e in engines if callable(split.get(e))}  # type: ignore[operator]  # callable: tested
        return pieces if len({tuple(p) for p in pieces.values()}) > 1 else None

    try:
        best = diverges(text)
        if best is None:
            return None
        i = 0
        while i < len(text) and steps > 0:
            steps -= 1
            shorter = text[:i] + text[i + 1 :]
            found = diverges(shorter) if shorter else None
            if found is not None:
                text, best = shorter, found
            else:
                i += 1
        return Divergence(text, best)
    except BaseException as exc:  # an engine timing out or panicking on a shorter text
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return None


def onig_pattern(regex: str) -> str:
    """The pattern tokaudit's hf backend hands Oniguruma for a tiktoken pattern: translated, and checked on
    the probes against fancy-regex; :class:`BackendUnavailable` with the reason when it still differs."""
    from tokaudit.backends.base import BackendUnavailable

    translated = translate_for_onig(regex)
    found, rejected, _ = divergences(regex, ("fancy-regex", "oniguruma"), onig_regex=translated)
    if "oniguruma" in rejected:
        raise BackendUnavailable(f"tokenizers (Oniguruma) rejects the pattern: {rejected['oniguruma']}")
    if found:
        d = found[0]
        raise BackendUnavailable(
            f"the pattern splits {d.text!r} differently in Oniguruma ({d.pieces.get('oniguruma')}) than in tiktoken's "
            f"fancy-regex ({d.pieces.get('fancy-regex')}), even translated (pattern-portability)"
        )
    return translated
