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


def run(r: Run, timeout: float) -> Outcome:
    """Run the case in a child process; peak RSS comes from the child's own rusage (wait4)."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_HUB_DISABLE_TELEMETRY="1", COLUMNS="120", TERM="dumb")
    for name in ("FORCE_COLOR", "NO_COLOR", "GITHUB_ACTIONS", "CI", "TOKAUDIT_DEBUG"):
        env.pop(name, None)
    env["PYTHONPATH"] = str(ROOT)

    # A small launcher forks the run and reports its peak RSS on fd 3: ru_maxrss of a process forked
    # straight from this (big) one would carry this process's peak across exec (Linux keeps it).
    read_fd, write_fd = os.pipe()
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", _LAUNCHER, str(MEMORY_LIMIT), str(int(r.close_stdout)), str(int(r.close_stderr)),
         str(write_fd), sys.executable, "-m", "tokaudit", *r.args],
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

    threads = [threading.Thread(target=pump, args=("out", proc.stdout)), threading.Thread(target=pump, args=("err", proc.stderr))]
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
        d["added_tokens_decoder"]["1010"] = {"content": "", "special": True, "lstrip": False, "rstrip": False,
                                             "normalized": False, "single_word": False}
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
    return Run(["compare", str(target), "--no-builtin-corpus", "--corpus", str(_redos_corpus(tmp)), "--format", "json"],
               target=target)


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
    return Run(["replay", str(target), str(stream), "--prompt", ",".join(str(i) for i in range(100, 200)),
                "--format", "json"], target=target)


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
    return Run(["replay", str(target), "-", "--stream-format", "ids", "--format", "json"],
               stdin="104 ١٠٥\n".encode(), target=target)


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
    return Run(["compare", str(target), "--corpus", str(corpus), "--whole-file", "--no-builtin-corpus",
                "--unicode-sweep", "off", "--format", "json"], target=target)


def big_line_corpus(tmp: Path) -> Run:
    target = _tiny(tmp)
    corpus = tmp / "big.txt"
    line = "hello world, a line of plain text for the corpus 123\n"
    corpus.write_text(line * (17 * 1024 * 1024 // len(line)), encoding="utf-8")
    return Run(["compare", str(target), "--corpus", str(corpus), "--no-builtin-corpus", "--format", "json"], target=target)


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
    Case("empty-token-config-compare", with_target(empty_token_config, "compare", "{T}", "--backends", "tiktoken,reference",
                                                   "--unicode-sweep", "off", "--format", "json"), (0, 1), ""),
    Case("empty-token-tekken-scan", scan_json(empty_token_tekken), (1,), "", 10, codes=("TA206",)),
    Case("empty-token-tekken-encode", with_target(empty_token_tekken, "encode", "{T}", "hello", "--backend", "tiktoken",
                                                  "--format", "json"), (0,), ""),
    Case("huge-token-200KB", huge_token(200_000), (0, 1), ""),
    Case("huge-token-10MB", huge_token(10_000_000), (0, 1), ""),
    Case("redos-pat-str-compare", redos_remote, (1,), "", codes=("TA605",)),
    Case("redos-tokenizer-json-hf", redos_tokenizer_json, (1,), "", codes=("TA605",)),
    Case("remote-nested-comprehension", remote_case("num_reserved_special_tokens = len([a for a in range(1000000) for b in range(1000000)])"),
         (0, 1), "", 10, owner="patterns"),
    Case("remote-join-big-strings", remote_case("num_reserved_special_tokens = len(''.join(['x' * 1000000 for _ in range(3000)]))"),
         (0, 1), "", 10, owner="patterns"),
    Case("remote-num-reserved-10M", remote_case("num_reserved_special_tokens = 10000000"), (0, 1), "", 10, owner="patterns"),
    Case("remote-pat-str-1MB", remote_case("pat_str = " + repr("a|" * 500_000 + "b") + "\n    _unused = \"|\".join(", old=PAT_START),
         (0, 1), "", 10, owner="patterns"),
    Case("remote-nested-unary", remote_case("num_reserved_special_tokens = " + "-" * 100_000 + "1"), (0, 1), "", 10, owner="patterns"),
    Case("remote-nested-not", remote_case("num_reserved_special_tokens = " + "not " * 100_000 + "1"), (0, 1), "", 10, owner="patterns"),
    Case("remote-nested-lambda", remote_case("num_reserved_special_tokens = " + "lambda: " * 50_000 + "1"), (0, 1), "", 10, owner="patterns"),
    Case("compare-whole-file-8MB", big_corpus, (2,), "--whole-file"),
    Case("compare-corpus-17MB-lines", big_line_corpus, (2,), "key --corpus: the corpus is over the limit of 16 MiB"),
    Case("encode-stdin-2.7MB", big_stdin, (2,), "TEXT"),
    Case("encode-256KiB-at-limit-rich", args_case("encode", "{T}", "-", stdin=(b"hello world " * 22_000)[: 256 * 1024]), (0,), None),
    Case("stream-over-2M-ids", args_case("replay", "{T}", "-", "--format", "json", stdin=b"104 " * 2_000_001), (2,),
         "<stdin>:1: more than 2000000 ids"),
    Case("decode-over-200k-ids", args_case("decode", "{T}", "-", "--format", "json", stdin=b"104 " * 200_001), (2,),
         "key IDS: 200001 ids from <stdin>: decode shows one row per id, at most 200000"),
    Case("concurrency-100000", args_case("compare", "{T}", "--concurrency", "100000"), (2,), "--concurrency"),
    Case("fuzz-max-length-1e9", args_case("fuzz", "{T}", "--max-length", "1000000000"), (2,), "--max-length"),
    Case("symlink-proc-kmsg", scan_json(symlink_to("/proc/kmsg")), (2,), "not a regular file", 10),
    Case("fifo-in-target", scan_json(fifo_file), (2,), "not a regular file", 10),
    Case("fifo-as-target", fifo_target, (2,), "not a regular file", 10),
    Case("symlink-loop", scan_json(symlink_loop), (2,), "symlink loop", 10),
    # exit 3 on bad input
    Case("bigint-config-json", scan_json(raw_file("config.json", b'{"vocab_size": ' + b"9" * 5000 + b"}")), (2,), "config.json", 10),
    Case("bigint-explain-arg", bigint_explain, (2,), "ID"),
    Case("bigint-json-stream", stream_case("json", "[104, " + "9" * 5000 + "]"), (2,), "s"),
    Case("bigint-toml", pyproject_case(b"[tool.tokaudit]\nselect = " + b"9" * 5000 + b"\n"), (2,), "pyproject.toml", 10),
    Case("deep-safetensors-header", scan_json(safetensors_deep), (2,), "model.safetensors", 10),
    Case("deep-json-stream", deep_stream("json"), (2,), "stream.json"),
    Case("deep-jsonl-stream", deep_stream("jsonl"), (2,), "stream.jsonl"),
    Case("deep-sse-stream", deep_stream("sse"), (2,), "stream.sse"),
    Case("deep-pyproject", pyproject_case(b"[tool.tokaudit]\nselect = " + nested(100_000, "[", "]", "1").encode() + b"\n"),
         (2,), "pyproject.toml", 10),
    Case("sse-unhashable-index", stream_case("sse", 'data: {"choices": [{"index": [0], "token_ids": [104]}]}\n\n'), (2,), "stream.sse"),
    Case("jsonl-mixed-index", stream_case("jsonl", '{"choices": [{"index": 0, "token_ids": [104]}]}\n'
                                                   '{"choices": [{"index": "0", "token_ids": [105]}]}\n'), (2,), "stream.jsonl"),
    Case("surrogate-added-token", scan_json(lambda t: _surrogate(t, "tokenizer_config.json")), (2,), "tokenizer_config.json", 10),
    Case("surrogate-special-map", scan_json(lambda t: _surrogate(t, "special_tokens_map.json")), (2,), "special_tokens_map.json", 10),
    Case("surrogate-vocab-key", scan_json(surrogate_vocab), (2,), 'vocab.json (key ["\\ud800"])', 10, stderr_lacks="\\\\"),
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
    Case("pyproject-not-utf8", pyproject_case(b"[tool.tokaudit]\nselect = [\"TA1\"] # \xff\n"), (2,), "pyproject.toml", 10),
    Case("stream-arabic-digits", arabic_digits, (2,), "<stdin>"),
    Case("stderr-closed-error", stderr_closed, (2,), None, 10),
    # clear messages
    Case("rank-over-u32-names-file", tiktoken_overflow, (2,), "tiktoken.model:1001", stderr_lacks="--backend"),
    Case("replay-error-names-file", replay_bad_stream, (2,), "config.json"),
    Case("error-line-1MB-word", long_word, (2,), "s.txt"),
    Case("nan-vocab-size", scan_json(raw_file("config.json", b'{"vocab_size": NaN}')), (2,), "vocab_size", 10),
    Case("bytes-not-double-escaped", bytes_in_file, (2,), "tiktoken.model:1001: token is not valid base64: 'QUJD\\xff=='", 10,
         stderr_lacks="\\\\"),
    Case("bom-tokenizer-json-encode", with_target(bom_file("tokenizer.json", "clean-bpe"), *ENCODE_HF), (0,), ""),
    Case("bom-merges-encode", with_target(bom_file("merges.txt", "gpt2-files"), *ENCODE_HF), (0,), ""),
    Case("unknown-merge-scan", scan_json(unknown_merge), (1,), "", 10),
    Case("serde-error-names-key", with_target(config_edit("tokenizer.json", lambda d: d.__setitem__("normalizer", {"type": "Nope"}),
                                                          base="clean-bpe"), "encode", "{T}", "hello", "--format", "json"),
         (2,), "tokenizer.json (key normalizer.type): data did not match any variant of untagged enum NormalizerUntagged"),
]
