"""The hostile-input catalog of issue 13: each case builds its input in a temp dir and runs
``python -m tokaudit`` as a whole process under a wall-clock and memory bound.

Shared by tests/test_hostile.py (which asserts the contract) and bench/hostile_cases.py (which
prints the case x (exit, seconds, peak MiB) table). Sizes are the smallest that show the problem.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"

#: Address-space ceiling of every run: a runaway allocation fails fast instead of swapping.
MEMORY_LIMIT = 3 * 1024**3
#: What the contract allows (peak RSS).
MEMORY_BOUND_MIB = 1536


@dataclass
class Run:
    """One process to run: arguments after ``python -m tokaudit``, stdin, and how to start it."""

    args: list[str]
    stdin: bytes | None = None
    cwd: Path | None = None
    #: close the child's stdout (``>&-``) or stderr (``2>&-``).
    close_stdout: bool = False
    close_stderr: bool = False
    #: the directory that must be left unchanged.
    target: Path | None = None
    #: environment variables set (or, with None, removed) for this run
    env: dict[str, str | None] = field(default_factory=dict)
    #: objects that must live while the run does (a listening socket)
    keep: tuple[Any, ...] = ()


@dataclass
class Outcome:
    exit_code: int | None  # None: killed at the time limit
    seconds: float
    peak_mib: float
    stdout: bytes
    stderr: bytes


@dataclass
class Case:
    name: str
    build: Callable[[Path], Run]
    #: exit codes the contract allows
    exits: tuple[int, ...]
    #: a substring the single stderr line must contain (None: no check; "" for no stderr check)
    stderr_has: str | None = None
    #: wall-clock bound (10 s for scan, else 60 s)
    seconds: float = 60.0
    #: owned by another engineer (remote-code evaluator): shown in the table, not asserted here
    owner: str = ""
    #: JSON finding codes stdout must contain (with --format json)
    codes: tuple[str, ...] = field(default=())
    #: a substring stderr must not contain (an option the user never passed, a double escape)
    stderr_lacks: str | None = None
    #: what the case needs to run ("llama.cpp": llama-cpp-python; "chown": root, to plant another user's files)
    requires: str = ""
    #: the JSON report must equal that of the same command with the result cache off (a poisoned or corrupt
    #: cache entry is recomputed)
    same_as_uncached: bool = False
    #: lines on stderr (--format jsonl: one per unreadable target, then the summary)
    stderr_lines: int = 1


def run(r: Run, timeout: float) -> Outcome:
    """Run the case in a child process; peak RSS comes from the child's own rusage (wait4)."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_HUB_DISABLE_TELEMETRY="1", COLUMNS="120", TERM="dumb")
    for name in ("FORCE_COLOR", "NO_COLOR", "GITHUB_ACTIONS", "CI", "TOKAUDIT_DEBUG"):
        env.pop(name, None)
    env["PYTHONPATH"] = str(ROOT)
    for name, value in r.env.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value

    # A small launcher forks the run and reports its peak RSS on fd 3: ru_maxrss of a process forked
    # straight from this (big) one would carry this process's peak across exec (Linux keeps it).
    read_fd, write_fd = os.pipe()
    start = time.monotonic()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _LAUNCHER,
            str(MEMORY_LIMIT),
            str(int(r.close_stdout)),
            str(int(r.close_stderr)),
            str(write_fd),
            sys.executable,
            "-m",
            "tokaudit",
            *r.args,
        ],
        stdin=subprocess.PIPE if r.stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=r.cwd,
        env=env,
        start_new_session=True,
        pass_fds=(write_fd,),
    )
    os.close(write_fd)
    chunks: dict[str, bytes] = {}

    def pump(name: str, stream: Any) -> None:
        chunks[name] = stream.read()

    def feed() -> None:
        try:
            proc.stdin.write(r.stdin)  # type: ignore[union-attr]
            proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass

    threads = [
        threading.Thread(target=pump, args=("out", proc.stdout)),
        threading.Thread(target=pump, args=("err", proc.stderr)),
    ]
    if r.stdin is not None:
        threads.append(threading.Thread(target=feed))
    for t in threads:
        t.start()
    killed = False
    report_file = os.fdopen(read_fd, "rb")
    child = int(report_file.readline() or 0)  # the launcher's first line: the run's pid
    seconds = 0.0
    while proc.poll() is None:
        if time.monotonic() - start > timeout and not killed:
            seconds = time.monotonic() - start
            if child:
                os.kill(child, signal.SIGKILL)  # the launcher survives to report the run's peak RSS
            killed = True
        if killed and time.monotonic() - start > timeout + 10:
            os.killpg(proc.pid, signal.SIGKILL)
        time.sleep(0.01)
    seconds = seconds or time.monotonic() - start
    with report_file:
        report = report_file.read().decode().split()
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # anything the run left behind
    except ProcessLookupError:
        pass
    for t in threads:
        t.join(5)
    code = int(report[0]) if report else None
    peak = int(report[1]) / 1024 if len(report) > 1 else float("nan")
    return Outcome(None if killed else code, seconds, peak, chunks.get("out", b""), chunks.get("err", b""))


_LAUNCHER = """
import os, resource, sys
limit, close_out, close_err, report = int(sys.argv[1]), sys.argv[2] == "1", sys.argv[3] == "1", int(sys.argv[4])
pid = os.fork()
if pid:
    os.write(report, b"%d\\n" % pid)
if pid == 0:
    os.close(report)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    if close_out:
        os.close(1)
    if close_err:
        os.close(2)
    os.execv(sys.argv[5], sys.argv[5:])
_, status, usage = os.wait4(pid, 0)
code = os.waitstatus_to_exitcode(status)
os.write(report, f"{code} {usage.ru_maxrss}".encode())
sys.exit(code if code >= 0 else 128 - code)
"""


# ---------------------------------------------------------------- builders


def _copy(name: str, tmp: Path, dest: str = "model") -> Path:
    target = tmp / dest
    shutil.copytree(FIXTURES / name, target)
    return target


def _tiny(tmp: Path) -> Path:
    return _copy("tiny-tiktoken", tmp)


def _edit_json(path: Path, edit: Callable[[dict], None]) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def _add_rank(target: Path, token: bytes) -> None:
    ranks = target / "tiktoken.model"
    n = sum(1 for line in ranks.read_bytes().splitlines() if line.strip())
    with ranks.open("ab") as fh:
        fh.write(base64.b64encode(token) + b" " + str(n).encode() + b"\n")


def _remote(tmp: Path, old: str, new: str) -> Path:
    target = _tiny(tmp)
    code = target / "tokenization_kimi.py"
    text = code.read_text(encoding="utf-8")
    assert old in text
    code.write_text(text.replace(old, new, 1), encoding="utf-8")
    return target


PAT_START = 'pat_str = "|".join('


def empty_token_config(tmp: Path) -> Path:
    target = _tiny(tmp)

    def edit(d: dict) -> None:
        d["added_tokens_decoder"]["1010"] = {
            "content": "",
            "special": True,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "single_word": False,
        }

    _edit_json(target / "tokenizer_config.json", edit)
    return target


def empty_token_tekken(tmp: Path) -> Path:
    target = _copy("mistral-tekken", tmp)

    def edit(d: dict) -> None:
        d["special_tokens"].append({"rank": len(d["special_tokens"]), "token_str": "", "is_control": True})

    _edit_json(target / "tekken.json", edit)
    return target


def huge_token(size: int) -> Callable[[Path], Run]:
    def build(tmp: Path) -> Run:
        target = _tiny(tmp)
        _add_rank(target, b"ab" * (size // 2))
        return Run(["encode", str(target), "hello", "--backend", "hf", "--format", "json"], target=target)

    return build


REDOS = r"(?:\S|\S)*\x00|\s+|."


def redos_remote(tmp: Path) -> Run:
    target = _tiny(tmp)
    code = target / "tokenization_kimi.py"
    text = code.read_text(encoding="utf-8")
    start = text.index(PAT_START)
    end = text.index("\n    )\n", start) + len("\n    )\n")
    code.write_text(text[:start] + f"pat_str = r'''{REDOS}'''\n" + text[end:], encoding="utf-8")
    return Run(
        ["compare", str(target), "--no-builtin-corpus", "--corpus", str(_redos_corpus(tmp)), "--format", "json"],
        target=target,
    )


def _redos_corpus(tmp: Path) -> Path:
    corpus = tmp / "redos.txt"
    corpus.write_text("a" * 40 + "\n", encoding="utf-8")
    return corpus


def redos_tokenizer_json(tmp: Path) -> Run:
    target = _copy("clean-bpe", tmp)

    def edit(d: dict) -> None:
        d["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": REDOS}, "behavior": "Isolated", "invert": False}

    _edit_json(target / "tokenizer.json", edit)
    return Run(["encode", str(target), "a" * 40, "--backend", "hf", "--format", "json"], target=target)


def remote_case(new: str, old: str = "num_reserved_special_tokens = 16") -> Callable[[Path], Run]:
    def build(tmp: Path) -> Run:
        target = _remote(tmp, old, new)
        return Run(["scan", str(target), "--format", "json"], target=target)

    return build


def nested(depth: int, opener: str, closer: str, inner: str = "0") -> str:
    return opener * depth + inner + closer * depth


def deep_stream(fmt: str) -> Callable[[Path], Run]:
    def build(tmp: Path) -> Run:
        target = _tiny(tmp)
        deep = nested(100_000, "[", "]")
        if fmt == "json":
            body = deep
        elif fmt == "jsonl":
            body = '{"token_ids": ' + deep + "}\n"
        else:
            body = 'data: {"choices": [{"index": 0, "token_ids": ' + deep + "}]}\n\n"
        stream = tmp / f"stream.{fmt}"
        stream.write_text(body, encoding="utf-8")
        return Run(["replay", str(target), str(stream), "--stream-format", fmt, "--format", "json"], target=target)

    return build


def stream_case(fmt: str, body: str) -> Callable[[Path], Run]:
    def build(tmp: Path) -> Run:
        target = _tiny(tmp)
        stream = tmp / f"stream.{fmt}"
        stream.write_text(body, encoding="utf-8")
        return Run(["replay", str(target), str(stream), "--stream-format", fmt, "--format", "json"], target=target)

    return build


def pyproject_case(content: bytes) -> Callable[[Path], Run]:
    def build(tmp: Path) -> Run:
        target = _tiny(tmp)
        work = tmp / "work"
        work.mkdir()
        (work / "pyproject.toml").write_bytes(content)
        return Run(["scan", str(target), "--format", "json"], cwd=work, target=target)

    return build


def scan_json(edit_target: Callable[[Path], Path]) -> Callable[[Path], Run]:
    def build(tmp: Path) -> Run:
        target = edit_target(tmp)
        return Run(["scan", str(target), "--format", "json"], target=target)

    return build


def config_edit(file: str, edit: Callable[[dict], None], base: str = "tiny-tiktoken") -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        target = _copy(base, tmp)
        _edit_json(target / file, edit)
        return target

    return make


def raw_file(file: str, content: bytes, base: str = "tiny-tiktoken") -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        target = _copy(base, tmp)
        (target / file).write_bytes(content)
        return target

    return make


def safetensors_deep(tmp: Path) -> Path:
    target = _tiny(tmp)
    header = nested(100_000, '{"a":', "}", "0").encode()
    (target / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header)
    return target


def symlink_to(dest: str) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        target = _tiny(tmp)
        (target / "tiktoken.model").unlink()
        (target / "tiktoken.model").symlink_to(dest)
        return target

    return make


def symlink_loop(tmp: Path) -> Path:
    target = _tiny(tmp)
    (target / "tiktoken.model").unlink()
    (target / "tiktoken.model").symlink_to("tiktoken.model")
    return target


def fifo_file(tmp: Path) -> Path:
    target = _tiny(tmp)
    (target / "tiktoken.model").unlink()
    os.mkfifo(target / "tiktoken.model")
    return target


def fifo_target(tmp: Path) -> Run:
    fifo = tmp / "tiktoken.model"
    os.mkfifo(fifo)
    return Run(["scan", str(fifo), "--format", "json"])


def bigint_explain(tmp: Path) -> Run:
    target = _tiny(tmp)
    return Run(["explain", str(target), "9" * 5000, "--format", "json"], target=target)


def long_decode(tmp: Path) -> Run:
    target = _tiny(tmp)
    return Run(["decode", str(target), " ".join(str(i) for i in range(100, 200)), "--format", "json"], target=target)


def long_prompt(tmp: Path) -> Run:
    target = _tiny(tmp)
    stream = tmp / "s.json"
    stream.write_text("[104, 105]", encoding="utf-8")
    return Run(
        ["replay", str(target), str(stream), "--prompt", ",".join(str(i) for i in range(100, 200)), "--format", "json"],
        target=target,
    )


def long_repo_id(tmp: Path) -> Run:
    return Run(["scan", "org/" + "n" * 300, "--format", "json"], cwd=tmp)


def ff_path(fmt: str) -> Callable[[Path], Run]:
    def build(tmp: Path) -> Run:
        target = Path(os.fsdecode(os.fsencode(str(tmp)) + b"/model\xff"))
        shutil.copytree(FIXTURES / "tiny-tiktoken", target)
        return Run(["scan", str(target), "--format", fmt], target=target)

    return build


def output_to(dest: str) -> Callable[[Path], Run]:
    def build(tmp: Path) -> Run:
        target = _tiny(tmp)
        return Run(["scan", str(target), "--format", "json", "--output", dest], target=target)

    return build


def stdout_closed(tmp: Path) -> Run:
    target = _tiny(tmp)
    return Run(["scan", str(target), "--format", "json"], close_stdout=True, target=target)


def debug_exit2(tmp: Path) -> Run:
    return Run(["scan", str(tmp / "missing"), "--debug"])


def stderr_closed(tmp: Path) -> Run:
    return Run(["scan", str(tmp / "missing")], close_stderr=True)


def arabic_digits(tmp: Path) -> Run:
    target = _tiny(tmp)
    return Run(
        ["replay", str(target), "-", "--stream-format", "ids", "--format", "json"],
        stdin="104 ١٠٥\n".encode(),
        target=target,
    )


def tiktoken_overflow(tmp: Path) -> Run:
    target = _tiny(tmp)
    _add_rank_at(target, b"zzzzq", 2**33)
    return Run(["encode", str(target), "hi", "--format", "json"], target=target)


def _add_rank_at(target: Path, token: bytes, rank: int) -> None:
    with (target / "tiktoken.model").open("ab") as fh:
        fh.write(base64.b64encode(token) + b" " + str(rank).encode() + b"\n")


def replay_bad_stream(tmp: Path) -> Run:
    target = _tiny(tmp)
    _edit_json(target / "config.json", lambda d: d.__setitem__("vocab_size", "many"))
    stream = tmp / "s.json"
    stream.write_text("[104, 105]", encoding="utf-8")
    return Run(["replay", str(target), str(stream), "--format", "json"], target=target)


def long_word(tmp: Path) -> Run:
    target = _tiny(tmp)
    stream = tmp / "s.txt"
    stream.write_text("x" * 1_000_000, encoding="utf-8")
    return Run(["replay", str(target), str(stream), "--stream-format", "ids", "--format", "json"], target=target)


def bytes_in_file(tmp: Path) -> Run:
    target = _tiny(tmp)
    with (target / "tiktoken.model").open("ab") as fh:
        fh.write(b"QUJD\xff== 5000\n")
    return Run(["scan", str(target), "--format", "json"], target=target)


def big_corpus(tmp: Path) -> Run:
    target = _tiny(tmp)
    corpus = tmp / "big.txt"
    with corpus.open("w", encoding="utf-8") as fh:
        line = "hello world, a line of plain text for the corpus 123\n"
        fh.write(line * (8 * 1024 * 1024 // len(line)))
    return Run(
        [
            "compare",
            str(target),
            "--corpus",
            str(corpus),
            "--whole-file",
            "--no-builtin-corpus",
            "--unicode-sweep",
            "off",
            "--format",
            "json",
        ],
        target=target,
    )


def big_line_corpus(tmp: Path) -> Run:
    target = _tiny(tmp)
    corpus = tmp / "big.txt"
    line = "hello world, a line of plain text for the corpus 123\n"
    corpus.write_text(line * (17 * 1024 * 1024 // len(line)), encoding="utf-8")
    return Run(
        ["compare", str(target), "--corpus", str(corpus), "--no-builtin-corpus", "--format", "json"], target=target
    )


def big_stdin(tmp: Path) -> Run:
    target = _tiny(tmp)
    return Run(["encode", str(target), "-", "--format", "json"], stdin=b"hello world " * 230_000, target=target)


def args_case(*args: str, stdin: bytes | None = None) -> Callable[[Path], Run]:
    def build(tmp: Path) -> Run:
        target = _tiny(tmp)
        return Run([a.replace("{T}", str(target)) for a in args], stdin=stdin, target=target)

    return build


def with_target(make: Callable[[Path], Path], *args: str) -> Callable[[Path], Run]:
    def build(tmp: Path) -> Run:
        target = make(tmp)
        return Run([a.replace("{T}", str(target)) for a in args], target=target)

    return build


def bom_file(file: str, base: str) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        target = _copy(base, tmp)
        p = target / file
        p.write_bytes(b"\xef\xbb\xbf" + p.read_bytes())
        return target

    return make


def unknown_merge(tmp: Path) -> Path:
    target = _copy("gpt2-files", tmp)
    with (target / "merges.txt").open("a", encoding="utf-8") as fh:
        fh.write("zzzq zzzr\n")
    return target


def _surrogate(tmp: Path, file: str) -> Path:
    target = _tiny(tmp)
    path = target / file
    text = path.read_text(encoding="utf-8")
    if file == "tokenizer_config.json":
        text = text.replace('"[BOS]"', '"\\ud800"', 1)
    else:
        text = text.replace('"[EOS]"', '"\\ud800"', 1)
    path.write_text(text, encoding="utf-8")
    return target


def surrogate_vocab(tmp: Path) -> Path:
    target = _copy("gpt2-files", tmp)
    path = target / "vocab.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["\ud800"] = len(data)
    path.write_text(json.dumps(data), encoding="utf-8")
    return target


SCAN = ("scan", "{T}", "--format", "json")
ENCODE_HF = ("encode", "{T}", "hello", "--backend", "hf", "--format", "json")

CASES: list[Case] = [
    # hangs and blow-ups
    Case("empty-token-config-scan", scan_json(empty_token_config), (1,), "", 10, codes=("TA206",)),
    Case(
        "empty-token-config-compare",
        with_target(
            empty_token_config,
            "compare",
            "{T}",
            "--backends",
            "tiktoken,reference",
            "--unicode-sweep",
            "off",
            "--format",
            "json",
        ),
        (0, 1),
        "",
    ),
    Case("empty-token-tekken-scan", scan_json(empty_token_tekken), (1,), "", 10, codes=("TA206",)),
    Case(
        "empty-token-tekken-encode",
        with_target(empty_token_tekken, "encode", "{T}", "hello", "--backend", "tiktoken", "--format", "json"),
        (0,),
        "",
    ),
    Case("huge-token-200KB", huge_token(200_000), (0, 1), ""),
    Case("huge-token-10MB", huge_token(10_000_000), (0, 1), ""),
    Case("redos-pat-str-compare", redos_remote, (1,), "", codes=("TA605",)),
    Case("redos-tokenizer-json-hf", redos_tokenizer_json, (1,), "", codes=("TA605",)),
    Case(
        "remote-nested-comprehension",
        remote_case("num_reserved_special_tokens = len([a for a in range(1000000) for b in range(1000000)])"),
        (0, 1),
        "",
        10,
        owner="patterns",
    ),
    Case(
        "remote-join-big-strings",
        remote_case("num_reserved_special_tokens = len(''.join(['x' * 1000000 for _ in range(3000)]))"),
        (0, 1),
        "",
        10,
        owner="patterns",
    ),
    Case(
        "remote-num-reserved-10M",
        remote_case("num_reserved_special_tokens = 10000000"),
        (0, 1),
        "",
        10,
        owner="patterns",
    ),
    Case(
        "remote-pat-str-1MB",
        remote_case("pat_str = " + repr("a|" * 500_000 + "b") + '\n    _unused = "|".join(', old=PAT_START),
        (0, 1),
        "",
        10,
        owner="patterns",
    ),
    Case(
        "remote-nested-unary",
        remote_case("num_reserved_special_tokens = " + "-" * 100_000 + "1"),
        (0, 1),
        "",
        10,
        owner="patterns",
    ),
    Case(
        "remote-nested-not",
        remote_case("num_reserved_special_tokens = " + "not " * 100_000 + "1"),
        (0, 1),
        "",
        10,
        owner="patterns",
    ),
    Case(
        "remote-nested-lambda",
        remote_case("num_reserved_special_tokens = " + "lambda: " * 50_000 + "1"),
        (0, 1),
        "",
        10,
        owner="patterns",
    ),
    Case("compare-whole-file-8MB", big_corpus, (2,), "--whole-file"),
    Case("compare-corpus-17MB-lines", big_line_corpus, (2,), "key --corpus: the corpus is over the limit of 16 MiB"),
    Case("encode-stdin-2.7MB", big_stdin, (2,), "TEXT"),
    Case(
        "encode-256KiB-at-limit-rich",
        args_case("encode", "{T}", "-", stdin=(b"hello world " * 22_000)[: 256 * 1024]),
        (0,),
        None,
    ),
    Case(
        "stream-over-2M-ids",
        args_case("replay", "{T}", "-", "--format", "json", stdin=b"104 " * 2_000_001),
        (2,),
        "<stdin>:1: more than 2000000 ids",
    ),
    Case(
        "decode-over-200k-ids",
        args_case("decode", "{T}", "-", "--format", "json", stdin=b"104 " * 200_001),
        (2,),
        "key IDS: 200001 ids from <stdin>: decode shows one row per id, at most 200000",
    ),
    Case("concurrency-100000", args_case("compare", "{T}", "--concurrency", "100000"), (2,), "--concurrency"),
    Case("fuzz-max-length-1e9", args_case("fuzz", "{T}", "--max-length", "1000000000"), (2,), "--max-length"),
    Case("symlink-proc-kmsg", scan_json(symlink_to("/proc/kmsg")), (2,), "not a regular file", 10),
    Case("fifo-in-target", scan_json(fifo_file), (2,), "not a regular file", 10),
    Case("fifo-as-target", fifo_target, (2,), "not a regular file", 10),
    Case("symlink-loop", scan_json(symlink_loop), (2,), "symlink loop", 10),
    # exit 3 on bad input
    Case(
        "bigint-config-json",
        scan_json(raw_file("config.json", b'{"vocab_size": ' + b"9" * 5000 + b"}")),
        (2,),
        "config.json",
        10,
    ),
    Case("bigint-explain-arg", bigint_explain, (2,), "ID"),
    Case("bigint-json-stream", stream_case("json", "[104, " + "9" * 5000 + "]"), (2,), "s"),
    Case(
        "bigint-toml", pyproject_case(b"[tool.tokaudit]\nselect = " + b"9" * 5000 + b"\n"), (2,), "pyproject.toml", 10
    ),
    Case("deep-safetensors-header", scan_json(safetensors_deep), (2,), "model.safetensors", 10),
    Case("deep-json-stream", deep_stream("json"), (2,), "stream.json"),
    Case("deep-jsonl-stream", deep_stream("jsonl"), (2,), "stream.jsonl"),
    Case("deep-sse-stream", deep_stream("sse"), (2,), "stream.sse"),
    Case(
        "deep-pyproject",
        pyproject_case(b"[tool.tokaudit]\nselect = " + nested(100_000, "[", "]", "1").encode() + b"\n"),
        (2,),
        "pyproject.toml",
        10,
    ),
    Case(
        "sse-unhashable-index",
        stream_case("sse", 'data: {"choices": [{"index": [0], "token_ids": [104]}]}\n\n'),
        (2,),
        "stream.sse",
    ),
    Case(
        "jsonl-mixed-index",
        stream_case(
            "jsonl",
            '{"choices": [{"index": 0, "token_ids": [104]}]}\n{"choices": [{"index": "0", "token_ids": [105]}]}\n',
        ),
        (2,),
        "stream.jsonl",
    ),
    Case(
        "surrogate-added-token",
        scan_json(lambda t: _surrogate(t, "tokenizer_config.json")),
        (2,),
        "tokenizer_config.json",
        10,
    ),
    Case(
        "surrogate-special-map",
        scan_json(lambda t: _surrogate(t, "special_tokens_map.json")),
        (2,),
        "special_tokens_map.json",
        10,
    ),
    Case(
        "surrogate-vocab-key", scan_json(surrogate_vocab), (2,), 'vocab.json (key ["\\ud800"])', 10, stderr_lacks="\\\\"
    ),
    Case("long-arg-decode-100-ids", long_decode, (0, 1), ""),
    Case("long-arg-replay-prompt", long_prompt, (0, 1), ""),
    Case("long-arg-repo-id", long_repo_id, (2,), "repo id", 10),
    Case("path-0xff-sarif", ff_path("sarif"), (0, 1), "", 10),
    Case("path-0xff-json", ff_path("json"), (0, 1), "", 10),
    Case("output-dev-full", output_to("/dev/full"), (2,), "cannot write report", 10),
    Case("output-proc-version", output_to("/proc/version"), (2,), "cannot write report", 10),
    Case("stdout-closed", stdout_closed, (2,), "cannot write report", 10),
    # wrong exit codes
    Case("debug-keeps-exit-2", debug_exit2, (2,), None, 10),
    Case(
        "pyproject-not-utf8", pyproject_case(b'[tool.tokaudit]\nselect = ["TA1"] # \xff\n'), (2,), "pyproject.toml", 10
    ),
    Case("stream-arabic-digits", arabic_digits, (2,), "<stdin>"),
    Case("stderr-closed-error", stderr_closed, (2,), None, 10),
    # clear messages
    Case("rank-over-u32-names-file", tiktoken_overflow, (2,), "tiktoken.model:1001", stderr_lacks="--backend"),
    Case("replay-error-names-file", replay_bad_stream, (2,), "config.json"),
    Case("error-line-1MB-word", long_word, (2,), "s.txt"),
    Case("nan-vocab-size", scan_json(raw_file("config.json", b'{"vocab_size": NaN}')), (2,), "vocab_size", 10),
    Case(
        "bytes-not-double-escaped",
        bytes_in_file,
        (2,),
        "tiktoken.model:1001: token is not valid base64: 'QUJD\\xff=='",
        10,
        stderr_lacks="\\\\",
    ),
    Case("bom-tokenizer-json-encode", with_target(bom_file("tokenizer.json", "clean-bpe"), *ENCODE_HF), (0,), ""),
    Case("bom-merges-encode", with_target(bom_file("merges.txt", "gpt2-files"), *ENCODE_HF), (0,), ""),
    Case("unknown-merge-scan", scan_json(unknown_merge), (1,), "", 10),
    Case(
        "serde-error-names-key",
        with_target(
            config_edit("tokenizer.json", lambda d: d.__setitem__("normalizer", {"type": "Nope"}), base="clean-bpe"),
            "encode",
            "{T}",
            "hello",
            "--format",
            "json",
        ),
        (2,),
        "tokenizer.json (key normalizer.type): data did not match any variant of untagged enum NormalizerUntagged",
    ),
]


# ---------------------------------------------------------------- issue 34: hostile repositories

#: Text that would act on a terminal or a CI log if printed raw: ESC (a title change, a screen clear), BEL,
#: a C1 CSI, RLO, and a CR/LF followed by a GitHub workflow command and a v1 command.
HOSTILE_TEXT = "\x1b]0;pwned\x07\x1b[2J\x9b31m\u202e\r\n::error file=pwned.py,line=1::owned ##[error]owned"


def _cache_env(tmp: Path) -> dict[str, str | None]:
    return {"TOKAUDIT_CACHE": str(tmp / "cache")}


def _fill_cache(target: Path, tmp: Path, *extra: str) -> list[Path]:
    """Scan ``target`` once with the result cache in ``tmp/cache``; the entries it wrote."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", TOKAUDIT_CACHE=str(tmp / "cache"))
    subprocess.run(
        [sys.executable, "-m", "tokaudit", "scan", str(target), "--format", "json", *extra],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=300,
        check=False,
    )
    return sorted((tmp / "cache").rglob("*.json"))


def cache_entries(edit: Callable[[Path, Path], None], base: str = "clean-bpe") -> Callable[[Path], Run]:
    """Scan ``base`` once to fill the cache, apply ``edit(entry, tmp)`` to every entry, then scan again."""

    def build(tmp: Path) -> Run:
        target = _copy(base, tmp)
        entries = _fill_cache(target, tmp)
        assert entries, "the first scan wrote no cache entry"
        for entry in entries:
            edit(entry, tmp)
        return Run(["scan", str(target), "--format", "json"], target=target, env=_cache_env(tmp))

    return build


def _entry_kind(entry: Path) -> str:
    return entry.name.rsplit("-", 1)[0]


def entry_fifo(entry: Path, tmp: Path) -> None:
    entry.unlink()
    os.mkfifo(entry)


def entry_dev_zero(entry: Path, tmp: Path) -> None:
    entry.unlink()
    entry.symlink_to("/dev/zero")


def entry_3gb(entry: Path, tmp: Path) -> None:
    with entry.open("r+b") as fh:
        fh.truncate(3 * 1024**3)  # sparse: no disk space


def entry_deep(entry: Path, tmp: Path) -> None:
    entry.write_text('{"key": ' + json.dumps(entry.stem) + ', "value": ' + nested(100_000, "[", "]") + "}")


def _rewrite_value(edit: Callable[[str, Any], Any]) -> Callable[[Path, Path], None]:
    def apply(entry: Path, tmp: Path) -> None:
        data = json.loads(entry.read_text(encoding="utf-8"))
        data["value"] = edit(_entry_kind(entry), data["value"])
        entry.write_text(json.dumps(data), encoding="utf-8")

    return apply


def _wrong_types(kind: str, value: Any) -> Any:
    """Every kind's value with the wrong types where the readers look: a number for a string, a dict for a list."""
    if kind == "ta305-probe":
        return {"found": [[1, {"a": 2}]], "rejected": "x", "complete": True, "example": [3, 4]}
    if kind == "template-render":
        return {"conversations": [[0, [[1, 2, 3, 4]]]], "headers": {"jinja2": [[1, 2]]}}
    if kind == "fastokens-config":
        return {"refusal": ["not", "a", "string"]}
    return [{"id": 1}, "2", None]


def _beyond_vocabulary(kind: str, value: Any) -> Any:
    """Ids past the vocabulary, and answers that would hide the real findings ("PASS")."""
    if kind == "undecodable-ids":
        return [5_000_000, 2**70]
    if kind == "ta305-probe":
        return {"found": [], "rejected": [], "complete": True}
    if kind == "template-render":
        return {"conversations": [], "headers": {}}
    return {"refusal": None}


def _other_users(entry: Path, tmp: Path) -> None:
    """The lie planted in a shared directory by another user (uid 4242): the answers that hide the findings."""
    _rewrite_value(_beyond_vocabulary)(entry, tmp)
    os.chown(entry, 4242, 4242)


def _shared_directory(entry: Path, tmp: Path) -> None:
    _other_users(entry, tmp)
    os.chown(entry.parent, 4242, 4242)
    os.chmod(entry.parent, 0o777)


def cache_into_target(tmp: Path) -> Run:
    """The cache directory is a symlink into the target (planted by whoever could write the cache's parent)."""
    target = _copy("clean-bpe", tmp)
    (tmp / "cache").symlink_to(target)
    return Run(["scan", str(target), "--format", "json"], target=target, env=_cache_env(tmp))


def hub_silent_endpoint(tmp: Path) -> Run:
    """A Hub endpoint that accepts connections and never answers."""
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    port = server.getsockname()[1]
    env: dict[str, str | None] = {
        "HF_ENDPOINT": f"http://127.0.0.1:{port}",
        "HF_HUB_OFFLINE": None,
        "HF_HOME": str(tmp / "hf"),
    }
    return Run(["scan", "someorg/somemodel", "--format", "json"], cwd=tmp, env=env, keep=(server,))


def targets_from_fifo(tmp: Path) -> Run:
    fifo = tmp / "targets.txt"
    os.mkfifo(fifo)
    return Run(["scan", "--targets-from", str(fifo), "--format", "json"])


def target_list_with_fifo(tmp: Path) -> Run:
    target = _tiny(tmp)
    fifo = tmp / "model.fifo"
    os.mkfifo(fifo)
    listing = tmp / "targets.txt"
    listing.write_text(f"{fifo}\n{target}\n", encoding="utf-8")
    return Run(["scan", "--targets-from", str(listing), "--format", "jsonl"], target=target)


def _gguf_writer(path: Path, arch: str, model: str, tokens: list[str], types: list[int]) -> None:
    import gguf

    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_block_count(1)
    writer.add_context_length(512)
    writer.add_tokenizer_model(model)
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_bos_token_id(1 if model == "bert" else 0)
    writer.add_eos_token_id(2 if model == "bert" else 0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def wpm_without_unk(tmp: Path) -> Path:
    """A WordPiece (bert) GGUF without ``[UNK]``: llama.cpp aborts tokenizing a word it cannot split."""
    path = tmp / "wpm.gguf"
    _gguf_writer(
        path, "bert", "bert", ["[PAD]", "[CLS]", "[SEP]", "a", "b", "##a", "##b", "hello"], [3, 3, 3, 1, 1, 1, 1, 1]
    )
    return path


def rwkv_gguf(tmp: Path) -> Path:
    """An RWKV GGUF: llama.cpp's RWKV tokenizer never returns on a character no token starts with."""
    path = tmp / "rwkv.gguf"
    _gguf_writer(path, "rwkv6", "rwkv", ["<s>", "a", "b", "ab", "hello", " ", "\\n"], [3, 1, 1, 1, 1, 1, 1])
    return path


def gguf_case(make: Callable[[Path], Path], *args: str, stdin: bytes | None = None) -> Callable[[Path], Run]:
    def build(tmp: Path) -> Run:
        path = make(tmp)
        extra = []
        for a in args:
            if a == "{GOLDEN}":
                golden = tmp / "golden.jsonl"
                golden.write_text(json.dumps({"text": "hello xyz", "ids": [7]}) + "\n", encoding="utf-8")
                a = str(golden)
            elif a == "{STREAM}":
                stream = tmp / "s.json"
                stream.write_text("[4, 5, 1]", encoding="utf-8")
                a = str(stream)
            extra.append(a.replace("{T}", str(path)))
        return Run(extra, stdin=stdin, target=tmp)

    return build


def injected_eos(tmp: Path) -> Path:
    target = _copy("clean-bpe", tmp)
    _edit_json(target / "tokenizer_config.json", lambda d: d.__setitem__("eos_token", HOSTILE_TEXT))
    return target


def injected_special(tmp: Path) -> Path:
    """An added special token whose text is the hostile text (and one whose name is a key of a JSON path)."""
    target = _copy("clean-bpe", tmp)

    def edit(d: dict) -> None:
        d["added_tokens_decoder"]["996"] = {
            "content": HOSTILE_TEXT,
            "special": True,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "single_word": False,
        }
        d["auto_map"] = {"AutoTokenizer": ["tokenization_x." + HOSTILE_TEXT, None]}
        d["chat_template"] = "{{ raise_exception('" + HOSTILE_TEXT.replace("\r\n", "\\r\\n") + "') }}"

    _edit_json(target / "tokenizer_config.json", edit)
    return target


def injected_key(tmp: Path) -> Path:
    """An error line quoting a JSON key (the id of an added token)."""
    target = _copy("clean-bpe", tmp)
    _edit_json(
        target / "tokenizer_config.json",
        lambda d: d["added_tokens_decoder"].__setitem__(HOSTILE_TEXT, {"content": "x", "special": True}),
    )
    return target


def injected_target_name(tmp: Path) -> Run:
    target = tmp / ("model" + HOSTILE_TEXT.replace("/", "_"))
    shutil.copytree(FIXTURES / "tiny-tiktoken", target)
    return Run(["scan", str(target)], target=target)


def injected_missing_target(tmp: Path) -> Run:
    return Run(["scan", str(tmp / ("missing" + HOSTILE_TEXT.replace("/", "_")))])


def injected_gguf_names(tmp: Path) -> Path:
    """GGUF ``pre``, ``model`` and chat template names carrying the hostile text."""
    import gguf

    path = tmp / "names.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(1)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(HOSTILE_TEXT)
    writer.add_token_list(["a", "b", "ab", "<s>"])
    writer.add_token_types([1, 1, 1, 3])
    writer.add_token_merges(["a b"])
    writer.add_eos_token_id(3)
    writer.add_string("tokenizer.chat_template." + HOSTILE_TEXT, "{{ messages }}")
    writer.add_string("general.name", HOSTILE_TEXT)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def injected_normalizer_type(tmp: Path) -> Path:
    """fastokens' refusal quotes ``normalizer.type``."""
    target = _copy("clean-bpe", tmp)
    _edit_json(target / "tokenizer.json", lambda d: d.__setitem__("normalizer", {"type": HOSTILE_TEXT}))
    return target


def link_out(file: str, dest: str, base: str = "tiny-tiktoken") -> Callable[[Path], Path]:
    """``file`` in the target is a symlink to ``dest`` outside it."""

    def make(tmp: Path) -> Path:
        target = _copy(base, tmp)
        if (target / file).exists():
            (target / file).unlink()
        (target / file).symlink_to(dest)
        return target

    return make


def hf_cache_layout(tmp: Path) -> Path:
    """A Hub cache snapshot: every file a symlink to ../../blobs/<hash> inside the cache root (allowed)."""
    repo = tmp / "hub" / "models--org--name"
    snapshot = repo / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    (repo / "blobs").mkdir()
    for i, file in enumerate(sorted((FIXTURES / "clean-bpe").iterdir())):
        blob = repo / "blobs" / f"{i:064x}"
        shutil.copyfile(file, blob)
        (snapshot / file.name).symlink_to(Path("..", "..", "blobs", blob.name))
    return snapshot


def gguf_bool_array(tmp: Path) -> Path:
    """A GGUF whose one extra key is a 400 MB array of bools (a sparse file: no disk space)."""
    import struct

    path = tmp / "bools.gguf"
    good = tmp / "clean.gguf"
    shutil.copyfile(FIXTURES / "gguf" / "clean.gguf", good)
    count = 400 * 1024 * 1024
    key = b"general.flags"
    with path.open("wb") as fh:  # header with one key/value: the bool array, then the clean file's keys are not needed
        fh.write(b"GGUF" + struct.pack("<IQQ", 3, 0, 1))
        fh.write(struct.pack("<Q", len(key)) + key + struct.pack("<II", 9, 7) + struct.pack("<Q", count))
        fh.truncate(fh.tell() + count)
    return path


def gguf_many_tensors(tmp: Path) -> Path:
    """A GGUF declaring 10^7 tensors with real (minimal) headers: 240 MB of metadata."""
    import struct

    path = tmp / "tensors.gguf"
    n = 10_000_000
    one = struct.pack("<Q", 1) + b"t" + struct.pack("<I", 1) + struct.pack("<Q", 1) + struct.pack("<IQ", 0, 0)
    with path.open("wb") as fh:
        fh.write(b"GGUF" + struct.pack("<IQQ", 3, n, 0))
        block = one * 100_000
        for _ in range(n // 100_000):
            fh.write(block)
    return path


def long_stream_line(fmt: str, size: int) -> Callable[[Path], Run]:
    def build(tmp: Path) -> Run:
        target = _tiny(tmp)
        stream = tmp / f"stream.{fmt}"
        with stream.open("wb") as fh:
            if fmt == "ids":
                chunk = b"104 " * (1 << 18)
                for _ in range(size // len(chunk)):
                    fh.write(chunk)
                fh.write(b"\n")
            else:
                fh.write(b'{"token_ids": [')
                chunk = b"104, " * (1 << 18)
                for _ in range(size // len(chunk)):
                    fh.write(chunk)
                fh.write(b"104]}\n")
        return Run(["replay", str(target), str(stream), "--stream-format", fmt, "--format", "json"], target=target)

    return build


def long_corpus_line(tmp: Path) -> Run:
    target = _tiny(tmp)
    corpus = tmp / "line.txt"
    corpus.write_bytes(b"hello " * (15 * 1024 * 1024 // 6) + b"\n")
    return Run(
        [
            "compare",
            str(target),
            "--corpus",
            str(corpus),
            "--no-builtin-corpus",
            "--unicode-sweep",
            "off",
            "--format",
            "json",
        ],
        target=target,
    )


LLAMACPP = "llama.cpp"
CHOWN = "chown"

CASES += [
    # hangs
    Case("cache-entry-fifo", cache_entries(entry_fifo), (0, 1), "", same_as_uncached=True),
    Case(
        "hub-silent-endpoint",
        hub_silent_endpoint,
        (2,),
        "could not be resolved (ReadTimeout: no answer from http://127.0.0.1:",
    ),
    Case("targets-from-fifo", targets_from_fifo, (2,), "not a regular file"),
    Case("target-list-fifo-entry", target_list_with_fifo, (2,), "not a regular file", stderr_lines=2),
    Case(
        "llamacpp-rwkv-encode-hang",
        gguf_case(rwkv_gguf, "encode", "{T}", "h\u00e9llo", "--backend", "llama.cpp", "--format", "json"),
        (1,),
        "",
        requires=LLAMACPP,
    ),
    # memory and aborts
    Case("cache-entry-dev-zero", cache_entries(entry_dev_zero), (0, 1), "", same_as_uncached=True),
    Case("cache-entry-3GB", cache_entries(entry_3gb), (0, 1), "", same_as_uncached=True),
    Case(
        "llamacpp-wpm-encode-abort",
        gguf_case(wpm_without_unk, "encode", "{T}", "hello xyz", "--backend", "llama.cpp", "--format", "json"),
        (1,),
        "",
        requires=LLAMACPP,
    ),
    Case(
        "llamacpp-wpm-compare-abort",
        gguf_case(
            wpm_without_unk,
            "compare",
            "{T}",
            "--backends",
            "llama.cpp,strict",
            "--unicode-sweep",
            "off",
            "--format",
            "json",
        ),
        (0, 1),
        "",
        requires=LLAMACPP,
    ),
    Case(
        "llamacpp-wpm-golden-abort",
        gguf_case(
            wpm_without_unk,
            "compare",
            "{T}",
            "--backends",
            "llama.cpp",
            "--golden",
            "{GOLDEN}",
            "--no-builtin-corpus",
            "--format",
            "json",
        ),
        (0, 1),
        "",
        requires=LLAMACPP,
    ),
    # exit 3
    Case("replay-rwkv-gguf", gguf_case(rwkv_gguf, "replay", "{T}", "{STREAM}", "--format", "json"), (0, 1), ""),
    Case("cache-deep-nesting", cache_entries(entry_deep), (0, 1), "", same_as_uncached=True),
    Case("cache-wrong-types", cache_entries(_rewrite_value(_wrong_types)), (0, 1), "", same_as_uncached=True),
    Case(
        "cache-ids-beyond-vocabulary",
        cache_entries(_rewrite_value(_beyond_vocabulary)),
        (0, 1),
        "",
        same_as_uncached=True,
    ),
    Case(
        "cache-wrong-types-kimi",
        cache_entries(_rewrite_value(_wrong_types), base="kimi-k2.5"),
        (0, 1),
        "",
        same_as_uncached=True,
    ),
    Case(
        "cache-ids-beyond-kimi",
        cache_entries(_rewrite_value(_beyond_vocabulary), base="kimi-k2.5"),
        (0, 1),
        "",
        same_as_uncached=True,
    ),
    Case(
        "cache-not-an-object", cache_entries(lambda e, t: e.write_text("[1, 2, 3]")), (0, 1), "", same_as_uncached=True
    ),
    # the cache
    Case(
        "cache-planted-by-other-user",
        cache_entries(_other_users, base="kimi-k2.5"),
        (1,),
        "",
        same_as_uncached=True,
        requires=CHOWN,
    ),
    Case(
        "cache-shared-directory",
        cache_entries(_shared_directory, base="kimi-k2.5"),
        (1,),
        "",
        same_as_uncached=True,
        requires=CHOWN,
    ),
    Case("cache-symlinked-into-target", cache_into_target, (0, 1), ""),
    # output injection
    Case("inject-eos-rich", with_target(injected_eos, "scan", "{T}"), (0, 1), None),
    Case("inject-eos-github", with_target(injected_eos, "scan", "{T}", "--format", "github"), (0, 1), ""),
    Case("inject-eos-markdown", with_target(injected_eos, "scan", "{T}", "--format", "markdown"), (0, 1), ""),
    Case("inject-eos-junit", with_target(injected_eos, "scan", "{T}", "--format", "junit"), (0, 1), ""),
    Case("inject-eos-sarif", with_target(injected_eos, "scan", "{T}", "--format", "sarif"), (0, 1), ""),
    Case("inject-eos-json", with_target(injected_eos, "scan", "{T}", "--format", "json"), (0, 1), ""),
    Case("inject-special-rich", with_target(injected_special, "scan", "{T}"), (0, 1), None),
    Case("inject-special-github", with_target(injected_special, "scan", "{T}", "--format", "github"), (0, 1), ""),
    Case("inject-special-template", with_target(injected_special, "template", "{T}"), (0, 1), None),
    Case("inject-special-explain", with_target(injected_special, "explain", "{T}", "996"), (0, 1), None),
    Case(
        "inject-key-stderr", with_target(injected_key, "scan", "{T}", "--format", "json"), (2,), "added_tokens_decoder"
    ),
    Case("inject-target-name-rich", injected_target_name, (0, 1), None),
    Case("inject-missing-target-stderr", injected_missing_target, (2,), "no such file or directory"),
    Case("inject-gguf-names-rich", with_target(injected_gguf_names, "scan", "{T}"), (0, 1), None),
    Case(
        "inject-gguf-names-markdown",
        with_target(injected_gguf_names, "scan", "{T}", "--format", "markdown"),
        (0, 1),
        "",
    ),
    Case("inject-normalizer-type", with_target(injected_normalizer_type, "scan", "{T}"), (0, 1, 2), None),
    # reads outside the target
    Case(
        "symlink-vocab-txt-passwd",
        with_target(link_out("vocab.txt", "/etc/passwd", "bert-wordpiece"), "scan", "{T}", "--format", "json"),
        (2,),
        "outside the target",
    ),
    Case(
        "symlink-vocab-txt-decode",
        with_target(link_out("vocab.txt", "/etc/passwd", "bert-wordpiece"), "decode", "{T}", "0", "1", "2"),
        (2,),
        "outside the target",
    ),
    Case(
        "symlink-chat-template-out",
        with_target(link_out("chat_template.jinja", "/etc/hostname"), "scan", "{T}", "--format", "json"),
        (2,),
        "outside the target",
    ),
    Case("symlink-hf-cache-blobs", with_target(hf_cache_layout, "scan", "{T}", "--format", "json"), (0, 1), ""),
    # sizes before allocation
    Case("gguf-bool-array-400MB", with_target(gguf_bool_array, "scan", "{T}", "--format", "json"), (2,), "bools.gguf"),
    Case("gguf-10M-tensors", with_target(gguf_many_tensors, "scan", "{T}", "--format", "json"), (2,), "tensors.gguf"),
    Case("stream-line-300MB-ids", long_stream_line("ids", 300 * 1024 * 1024), (2,), "stream.ids"),
    Case("stream-line-300MB-jsonl", long_stream_line("jsonl", 300 * 1024 * 1024), (2,), "stream.jsonl"),
    Case("corpus-line-15MB", long_corpus_line, (2,), "line.txt:1: a line over 1 MiB"),
]


#: What no output may hold raw: C0 controls but newline and tab, DEL, C1 controls, bidi overrides/isolates/marks,
#: line and paragraph separators.
_UNSAFE = "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"


def unsafe_output(data: bytes, github: bool = False) -> list[str]:
    """What in a run's stdout or stderr could act on a terminal or a CI log: raw control or bidi characters
    (as escapes), and GitHub workflow commands tokaudit did not mean to write (a line starting with ``::``
    outside ``--format github``; ``##[`` anywhere; a command naming ``pwned.py``)."""
    import re

    text = data.decode("utf-8", "replace")
    found = sorted({f"U+{ord(c):04X}" for c in re.findall(_UNSAFE, text)})
    for line in text.splitlines():
        if "##[" in line:
            found.append(f"v1 command: {line.strip()[:60]!r}")
        command = line.lstrip()
        # with --format github, tokaudit's own commands: none of whose properties the input may set
        if command.startswith("::") and (not github or "pwned" in command[2:].split("::", 1)[0]):
            found.append(f"workflow command: {command[:60]!r}")
    return found


def fake_hub(files: dict[str, tuple[int, int]], drip: bool = False) -> tuple[Any, str]:
    """A Hub on loopback serving one repo, ``org/model``: ``files`` maps a name to (the size the listing and HEAD
    announce, the bytes GET sends, without a length: a server that lies). With ``drip``, the listing comes one
    byte every 2 s (each read answers within any read timeout; only a deadline stops it). Returns the server and
    its URL."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    sha = "1" * 40

    class Hub(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, *args: Any) -> None:
            pass

        def _file(self) -> str | None:
            prefix = f"/org/model/resolve/{sha}/"
            return self.path[len(prefix) :] if self.path.startswith(prefix) else None

        def do_HEAD(self) -> None:
            name = self._file()
            if name not in files:
                self.send_error(404)
                return
            self.send_response(200)
            for k, v in (("ETag", f'"{name}-etag"'), ("X-Repo-Commit", sha), ("Content-Length", str(files[name][0]))):
                self.send_header(k, v)
            self.end_headers()

        def do_GET(self) -> None:
            if self.path.startswith("/api/models/org/model"):
                if "/tree/" in self.path:  # the file listing snapshot_download asks for
                    body = json.dumps(
                        [
                            {"type": "file", "path": n, "size": size, "oid": f"{n}-etag"}
                            for n, (size, _) in files.items()
                        ]
                    ).encode()
                else:
                    body = json.dumps(
                        {
                            "id": "org/model",
                            "sha": sha,
                            "siblings": [{"rfilename": n, "size": size} for n, (size, _) in files.items()],
                        }
                    ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    for i in range(len(body)) if drip else ():
                        self.wfile.write(body[i : i + 1])
                        self.wfile.flush()
                        time.sleep(2)
                    self.wfile.write(body)
                except OSError:
                    pass
                return
            name = self._file()
            if name not in files:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("ETag", f'"{name}-etag"')
            self.send_header("X-Repo-Commit", sha)
            self.end_headers()
            left = files[name][1]
            block = b"0" * (1 << 20)
            try:
                while left > 0:
                    self.wfile.write(block[:left])
                    left -= len(block)
            except OSError:
                pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def hub_case(
    files: dict[str, tuple[int, int]], drip: bool = False, deadline: str | None = None
) -> Callable[[Path], Run]:
    """``deadline``: ``$TOKAUDIT_HUB_DEADLINE`` (the whole resolution's deadline, 30 s when unset)."""

    def build(tmp: Path) -> Run:
        server, url = fake_hub(files, drip)
        env: dict[str, str | None] = {
            "HF_ENDPOINT": url,
            "HF_HUB_OFFLINE": None,
            "HF_HOME": str(tmp / "hf"),
            "HF_HUB_DISABLE_XET": "1",
            "TOKAUDIT_HUB_DEADLINE": deadline,
        }
        return Run(["scan", "org/model", "--format", "json"], cwd=tmp, env=env, keep=(server,))

    return build


CASES += [
    Case(
        "hub-file-over-budget",
        hub_case({"tokenizer.json": (300 * 1024**2, 0)}),
        (2,),
        "tokenizer.json is 300.0 MiB on the Hub; the limit is 256 MiB (not downloaded)",
    ),
    Case(
        "hub-file-lies-about-size",
        hub_case({"tokenizer.json": (1000, 400 * 1024**2)}),
        (2,),
        "a file grew past the limit of 256 MiB while downloading",
    ),
    # each byte comes within the 10 s read timeout: only the deadline stops it (set to 2 s here, 30 s by default)
    Case(
        "hub-drip-feed",
        hub_case({"tokenizer.json": (1000, 1000)}, drip=True, deadline="2"),
        (2,),
        "no answer within 2 s from http://",
    ),
    Case(
        "hub-deadline-not-a-number",
        hub_case({"tokenizer.json": (1000, 1000)}, deadline="soon"),
        (2,),
        "TOKAUDIT_HUB_DEADLINE='soon': not a positive number of seconds",
    ),
]


# -- chat templates (issue 34, part B): compiled and rendered in the bounded worker --------------------------------


def template_case(template: str, *, file: bool = False, command: str = "scan") -> Callable[[Path], Run]:
    """A model whose chat template is ``template`` (in tokenizer_config.json, or chat_template.jinja), scanned
    (or rendered by ``template``) with --format json."""

    def build(tmp: Path) -> Run:
        target = _copy("clean-bpe", tmp)
        if file:
            (target / "chat_template.jinja").write_text(template, encoding="utf-8")
        else:
            _edit_json(target / "tokenizer_config.json", lambda d: d.__setitem__("chat_template", template))
        return Run([command, str(target), "--format", "json"], target=target)

    return build


#: Only MiniJinja has no ``lipsum``: what follows runs for the MiniJinja stacks alone.
MINIJINJA_ONLY = "{% if lipsum is not defined %}"

CASES += [
    # Jinja2 folds constant filter calls while compiling (and while listing a template's variables)
    Case(
        "template-fold-slice",
        template_case("{{ [1,2]|slice(150000000)|sum(start=[])|length }}"),
        (0, 1),
        "",
        codes=("TA801",),
    ),
    Case(
        "template-fold-bigger-literal",
        template_case("{{ [1,2,3,4,5,6,7,8]|slice(400000000)|sum(start=[])|length }}"),
        (0, 1),
        "",
        codes=("TA801",),
    ),
    # compile size: a 50 MB template is not compiled
    Case(
        "template-50MB",
        template_case("{{ messages[0]['content'] }}" * (50 * 1024 * 1024 // 28), file=True),
        (0, 1),
        "",
        codes=("TA801",),
    ),
    # one operation allocating gigabytes
    Case("template-center-filter", template_case("{{ 'a'|center(3500000000) }}"), (0, 1), "", codes=("TA801",)),
    Case("template-percent-format", template_case("{{ '%03000000000d' % 1 }}"), (0, 1), "", codes=("TA801",)),
    Case("template-str-center", template_case("{{ 'a'.center(3500000000) }}"), (0, 1), "", codes=("TA801",)),
    Case(
        "template-tojson-indent",
        template_case("{{ messages|tojson(indent=2000000000) }}"),
        (0, 1),
        "",
        codes=("TA801",),
    ),
    Case("template-chained-power", template_case("{{ 2 ** 100000 ** 100000 }}"), (0, 1), "", codes=("TA801",)),
    # MiniJinja's fuel counts instructions, not bytes
    Case(
        "template-minijinja-doublings",
        template_case(
            MINIJINJA_ONLY
            + "{% set x = ['"
            + "x" * 64
            + "'] %}"
            + "{% set x = x + x %}" * 40
            + "{{ x|length }}{% endif %}"
        ),
        (0, 1),
        "",
        codes=("TA801",),
    ),
    # MiniJinja calling Python methods of the context's objects
    Case(
        "template-minijinja-python-methods",
        template_case(
            MINIJINJA_ONLY + "{% for i in range(40) %}{% set _ = messages.extend(messages) %}{% endfor %}"
            "{{ messages|length }}{% endif %}"
        ),
        (0, 1),
        "",
        codes=("TA801",),
    ),
    Case(
        "template-minijinja-python-methods-template",
        template_case(
            MINIJINJA_ONLY + "{% for i in range(40) %}{% set _ = messages.extend(messages) %}{% endfor %}"
            "{{ messages|length }}{% endif %}",
            command="template",
        ),
        (0, 1),
        "",
        codes=("TA801",),
    ),
]
