"""The remote-code constant evaluator has a step and size budget (issue 13): hostile tokenization_*.py
files end in bounded time and memory, what exceeds the budget is "not understood" and said in a
finding, and deeply nested code is a finding, never exit 3. Each case is a whole ``python -m tokaudit``
process with a wall-clock bound; the files are generated here, never committed."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT
from tests.hostile_cases import MEMORY_BOUND_MIB, Run, run

SCAN_SECONDS = 10


def _model(tmp_path: Path, source: str, vocab_size: int = 1024) -> Path:
    target = tmp_path / "model"
    target.mkdir()
    shutil.copy(FIXTURES / "tiny-tiktoken" / "tiktoken.model", target / "tiktoken.model")
    (target / "config.json").write_text(json.dumps({"vocab_size": vocab_size}))
    (target / "tokenization_hostile.py").write_text(source)
    return target


def _scan(target: Path) -> tuple[int, dict, str, float]:
    """A whole scan process; its own peak RSS comes from the hostile-input launcher (``RUSAGE_CHILDREN``
    would report the largest child any earlier test started)."""
    outcome = run(Run(["scan", str(target), "--format", "json"], cwd=ROOT), timeout=60)
    stderr = outcome.stderr.decode()
    assert outcome.exit_code in (0, 1), stderr
    assert "Traceback" not in stderr
    assert outcome.peak_mib < MEMORY_BOUND_MIB
    return outcome.exit_code, json.loads(outcome.stdout), stderr, outcome.seconds


def _by_code(doc: dict, code: str) -> list[dict]:
    return [f for f in doc["findings"] if f["code"] == code]


@pytest.mark.parametrize(
    ("n", "why"),
    [
        (1_000_000, "a collection of 1000000 items (limit 100000)"),  # the size limit stops it first
        (50_000, "over the evaluator's budget of 300000 steps"),  # each list fits; the steps run out
    ],
)
def test_nested_comprehension(tmp_path: Path, n: int, why: str) -> None:
    target = _model(tmp_path, f"import tiktoken\n\nspecial_tokens = [[i for i in range({n})] for j in range({n})]\n")
    _, doc, _, seconds = _scan(target)
    assert seconds < SCAN_SECONDS
    (note,) = _by_code(doc, "TA302")
    assert note["severity"] == "note" and note["location"] == {
        "file": "tokenization_hostile.py",
        "line": 3,
        "key": "special_tokens",
    }
    assert note["details"]["not_understood"] == [f"tokenization_hostile.py:3: {why}"]


def test_join_of_3000_big_strings_as_the_pattern(tmp_path: Path) -> None:
    big = "x" * 1000
    source = f"import tiktoken\n\nBIG = {big!r}\npat_str = ''.join([{', '.join(['BIG'] * 3000)}])\n"
    _, doc, _, seconds = _scan(_model(tmp_path, source))
    assert seconds < SCAN_SECONDS
    (unknown,) = _by_code(doc, "TA304")
    assert unknown["location"] == {"file": "tokenization_hostile.py", "line": 4, "key": "pat_str"}
    assert "a join of 3000000 characters (limit 100000)" in unknown["message"]


def test_one_megabyte_pattern_is_not_understood(tmp_path: Path) -> None:
    source = "import tiktoken\n\npat_str = " + repr("a|" * 500_000) + "\n"
    _, doc, _, seconds = _scan(_model(tmp_path, source))
    assert seconds < SCAN_SECONDS
    (unknown,) = _by_code(doc, "TA304")
    assert "a string of 1000000 characters (limit 100000)" in unknown["message"]
    (note,) = _by_code(doc, "TA302")
    assert note["details"]["not_understood"] == [
        "tokenization_hostile.py:3: a string of 1000000 characters (limit 100000)"
    ]


def test_ten_million_reserved_slots_stay_a_range(tmp_path: Path) -> None:
    source = 'import tiktoken\n\nnum_reserved_special_tokens = 10000000\npat_str = r"\\S+|\\s+"\n'
    target = _model(tmp_path, source)
    (target / "tokenizer_config.json").write_text(
        json.dumps({"auto_map": {"AutoTokenizer": ["tokenization_hostile.Tok", None]}})
    )
    _, doc, _, seconds = _scan(target)
    assert seconds < SCAN_SECONDS
    (past,) = [f for f in _by_code(doc, "TA104") if f["details"].get("num_reserved_special_tokens")]
    assert past["ids"] == [[1024, 10000999]] and past["count"] == 10000999 - 1024 + 1
    assert past["location"] == {"file": "tokenization_hostile.py", "line": 3, "key": "num_reserved_special_tokens"}
    assert doc["vocab"]["profiles"]["remote-code"]["unmapped"] == 0  # 1000..1023 filled, nothing past 1024 built


@pytest.mark.parametrize("shape", ["-", "not ", "lambda: "])
def test_deeply_nested_expressions_are_a_finding_not_a_crash(tmp_path: Path, shape: str) -> None:
    source = "x = " + shape * 200_000 + "1\n"
    _, doc, stderr, seconds = _scan(_model(tmp_path, source))
    assert seconds < SCAN_SECONDS and "internal error" not in stderr
    (note,) = _by_code(doc, "TA302")
    (problem,) = note["details"]["not_understood"]
    assert problem.startswith("tokenization_hostile.py: not parsed (line ")
    assert "nested too deeply to parse" in problem or "too many nested" in problem or "RecursionError" in problem


# --- the evaluator on generated code: never raises, always within its budget -------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402 - the property tests' imports open their section
from hypothesis import strategies as st  # noqa: E402 - the property tests' imports open their section

from tokaudit.artifacts.remote_code import parse_remote_code  # noqa: E402 - the property tests' imports open their section

_atoms = st.one_of(
    st.integers(min_value=-(10**12), max_value=10**12).map(str),
    st.text(alphabet="ab|\\{}<>", max_size=8).map(repr),
    st.sampled_from(["PAT", "N", "self.pat_str", "undefined_name"]),
)


def _expr(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(children, children).map(lambda t: f"({t[0]} + {t[1]})"),
        st.tuples(children, children).map(lambda t: f"({t[0]} * {t[1]})"),
        st.lists(children, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"),
        children.map(lambda x: f"'|'.join({x})"),
        st.tuples(children, st.integers(0, 10**7)).map(lambda t: f"[{t[0]} for i in range({t[1]})]"),
        st.tuples(children, st.integers(0, 10**7)).map(lambda t: f"tuple(f'<|x_{{i}}|>' for i in range({t[1]}))"),
        children.map(lambda x: f"enumerate({x}, start=5)"),
        children.map(lambda x: f"-{x}"),
    )


_expressions = st.recursive(_atoms, _expr, max_leaves=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["PAT", "N", "pat_str", "SPECIAL_TOKENS", "num_reserved_special_tokens"]), _expressions
        ),
        min_size=1,
        max_size=5,
    )
)
def test_evaluator_never_raises_and_stays_in_budget(
    tmp_path_factory: pytest.TempPathFactory, assignments: list[tuple[str, str]]
) -> None:
    body = "\n".join(f"{name} = {expr}" for name, expr in assignments)
    source = (
        f"import tiktoken\n\n{body}\n\n\nclass T:\n    def __init__(self):\n"
        "        self.model = tiktoken.Encoding('t', pat_str=pat_str)\n"
    )
    path = tmp_path_factory.mktemp("rc") / "tokenization_gen.py"
    path.write_text(source)
    start = time.monotonic()
    rc = parse_remote_code(path)
    assert time.monotonic() - start < 5
    assert rc.syntax_error is None
    assert (rc.pat_str is None) != (rc.pat_str_unreadable is None)  # a pattern, or where and why not
    assert rc.pat_str is None or len(rc.pat_str) <= 100_000
    for lst in rc.special_token_lists:
        assert len(lst.tokens) <= 100_000
