"""Issue 13: run every hostile-input case as a whole process and print exit code, seconds and
peak MiB (the child's own max RSS). Usage: python bench/hostile_cases.py [--timeout S] [NAME...]

The cases are tests/hostile_cases.py (the same ones tests/test_hostile.py asserts). A run killed at
the time limit shows exit "killed"; the address space is capped at 3 GiB so a blow-up shows as a
MemoryError exit instead of swapping the machine.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parent.parent / "tests")  # not bench/, whose gguf.py is not the gguf package

from hostile_cases import CASES, run, unsafe_output  # noqa: E402 - after sys.path names tests/


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("names", nargs="*")
    opts = parser.parse_args()
    print(f"{'case':36} {'exit':>6} {'seconds':>8} {'peak MiB':>9} {'unsafe':>6}  stderr (first line, 100 chars)")
    for case in CASES:
        if opts.names and case.name not in opts.names:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            r = case.build(Path(tmp))
            out = run(r, min(opts.timeout, case.seconds * 3))
        code = "killed" if out.exit_code is None else str(out.exit_code)
        lines = out.stderr.decode("utf-8", "replace").splitlines()
        first = (lines[0][:100] if lines else "") + (f" (+{len(lines) - 1} lines)" if len(lines) > 1 else "")
        github = "github" in r.args
        unsafe = len(unsafe_output(out.stdout, github)) + len(unsafe_output(out.stderr))
        print(f"{case.name:36} {code:>6} {out.seconds:8.2f} {out.peak_mib:9.0f} {unsafe:>6}  {first!r}", flush=True)


if __name__ == "__main__":
    main()
