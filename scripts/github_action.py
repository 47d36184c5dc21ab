"""What the tokaudit GitHub Action (action.yml) runs after installing tokaudit.

Inputs come as environment variables (``INPUT_TARGETS``, ``INPUT_FAIL_ON``, ``INPUT_BASELINE``,
``INPUT_ARGS``, ``INPUT_SARIF_FILE``). It runs ``tokaudit scan`` with ``--format sarif`` into the SARIF
file (uploaded to code scanning by the next step), then with ``--format markdown`` appended to
``$GITHUB_STEP_SUMMARY``, writes ``sarif-file`` and ``exit-code`` to ``$GITHUB_OUTPUT``, and exits
with the scan's exit code (0 clean, 1 findings at or above fail-on, 2 bad input, 3 tokaudit bug).
Runs anywhere: without the GitHub variables it only writes the SARIF file and prints the summary.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path


def scan_command(env: dict[str, str]) -> list[str]:
    """``python -m tokaudit scan TARGETS --fail-on X [--baseline F] EXTRA`` (without the format)."""
    targets = env.get("INPUT_TARGETS", "").split()
    if not targets:
        raise SystemExit("tokaudit action: error: the 'targets' input is empty")
    command = [sys.executable, "-m", "tokaudit", "scan", *targets, "--fail-on", env.get("INPUT_FAIL_ON") or "error"]
    if env.get("INPUT_BASELINE"):
        command += ["--baseline", env["INPUT_BASELINE"]]
    return command + shlex.split(env.get("INPUT_ARGS", ""))


def _append(path: str | None, text: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(text)


def main() -> int:
    env = dict(os.environ)
    command = scan_command(env)
    sarif = Path(env.get("INPUT_SARIF_FILE") or "tokaudit.sarif")
    code = subprocess.run([*command, "--format", "sarif", "--output", str(sarif)]).returncode
    if code in (0, 1):
        # the same scan as markdown for the job summary (a second run: SARIF has no room for it)
        summary = subprocess.run([*command, "--format", "markdown", "--quiet"], capture_output=True, text=True)
        if env.get("GITHUB_STEP_SUMMARY"):
            _append(env["GITHUB_STEP_SUMMARY"], summary.stdout + "\n")
        else:
            sys.stdout.write(summary.stdout)
        _append(env.get("GITHUB_OUTPUT"), f"sarif-file={sarif}\n")
    _append(env.get("GITHUB_OUTPUT"), f"exit-code={code}\n")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
