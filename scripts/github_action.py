"""What the tokaudit GitHub Action (action.yml) runs after installing tokaudit.

Inputs come as environment variables (``INPUT_TARGETS``, ``INPUT_FAIL_ON``, ``INPUT_BASELINE``, ``INPUT_ARGS``,
``INPUT_SARIF_FILE``, ``INPUT_CATEGORY``). One ``tokaudit scan`` writes the SARIF file (uploaded to code scanning
by the next step) and the markdown report (appended to ``$GITHUB_STEP_SUMMARY``), also when a target cannot be
read (the SARIF then says so in its invocation). The SARIF's category (``automationDetails.id``, which code
scanning reads before the upload step's own ``category``) is the ``category`` input. Writes ``sarif-file`` and
``exit-code`` to ``$GITHUB_OUTPUT`` and exits with the scan's exit code (0 clean, 1 findings at or above fail-on,
2 bad input, 3 tokaudit bug). Runs anywhere: without the GitHub variables it writes the SARIF file and prints the
summary.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path


def scan_command(env: dict[str, str]) -> list[str]:
    """``python -m tokaudit scan TARGETS --fail-on X [--baseline F] EXTRA`` (without the outputs)."""
    targets = env.get("INPUT_TARGETS", "").split()
    if not targets:
        raise SystemExit("tokaudit action: error: the 'targets' input is empty")
    command = [sys.executable, "-m", "tokaudit", "scan", *targets, "--fail-on", env.get("INPUT_FAIL_ON") or "error"]
    if env.get("INPUT_BASELINE"):
        command += ["--baseline", env["INPUT_BASELINE"]]
    return command + shlex.split(env.get("INPUT_ARGS", ""))


def set_category(sarif: Path, category: str) -> None:
    """The SARIF's ``automationDetails.id`` as ``CATEGORY/``: code scanning keeps one analysis per category."""
    doc = json.loads(sarif.read_text(encoding="utf-8"))
    for run in doc.get("runs", []):
        run["automationDetails"] = {"id": f"{category.rstrip('/')}/"}
    sarif.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _append(path: str | None, text: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(text)


def main() -> int:
    env = dict(os.environ)
    command = scan_command(env)
    sarif = Path(env.get("INPUT_SARIF_FILE") or "tokaudit.sarif")
    with tempfile.TemporaryDirectory() as tmp:
        summary = Path(tmp) / "summary.md"
        code = subprocess.run(
            [*command, "--format", "sarif", "--output", str(sarif), "--also", f"markdown={summary}"]
        ).returncode
        text = summary.read_text(encoding="utf-8") if summary.is_file() else ""
    if sarif.is_file():
        set_category(sarif, env.get("INPUT_CATEGORY") or "tokaudit")
        _append(env.get("GITHUB_OUTPUT"), f"sarif-file={sarif}\n")
    if text:
        if env.get("GITHUB_STEP_SUMMARY"):
            _append(env["GITHUB_STEP_SUMMARY"], text + "\n")
        else:
            sys.stdout.write(text)
    _append(env.get("GITHUB_OUTPUT"), f"exit-code={code}\n")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
