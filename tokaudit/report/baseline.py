"""Finding fingerprints and baselines (a previous ``--format json`` report).

A fingerprint identifies a finding across runs: code, name, target, file, JSON key and a
subject (the finding's ``details.subject``, else its id ranges). Line numbers are left out on
purpose, so editing a file elsewhere does not make old findings look new.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tokaudit.artifacts.base import read_json
from tokaudit.errors import InputError
from tokaudit.report.finding import Finding


def normalize_target(target: str) -> str:
    t = target.replace("\\", "/")
    while t.startswith("./"):
        t = t[2:]
    return t.rstrip("/") or t


def fingerprint_json(finding: dict[str, Any]) -> str:
    location = finding.get("location") or {}
    details = finding.get("details") or {}
    subject = details.get("subject")
    if subject is None:
        subject = json.dumps(finding.get("ids")) if finding.get("ids") is not None else ""
    parts = [
        str(finding.get("code", "")),
        str(finding.get("name", "")),
        normalize_target(str(finding.get("target", ""))),
        str(location.get("file", "")),
        str(location.get("key") or ""),
        str(subject),
    ]
    import hashlib  # only baselines and SARIF need fingerprints

    # surrogatepass: a target path with undecodable bytes (surrogate-escaped) still has a fingerprint
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def fingerprint(finding: Finding) -> str:
    return fingerprint_json(finding.to_json())


def load_baseline(path: Path) -> set[str]:
    """Fingerprints of every finding in a previous JSON report."""
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("findings"), list):
        raise InputError("not a tokaudit JSON report (expected an object with a 'findings' list)", file=str(path), key="findings")
    out = set()
    for i, f in enumerate(data["findings"]):
        if not isinstance(f, dict) or not isinstance(f.get("code"), str) or not isinstance(f.get("name", ""), str):
            raise InputError("expected a finding with a string 'code'", file=str(path), key=f"findings[{i}]")
        if f.get("location") is not None and not isinstance(f["location"], dict):
            raise InputError("expected an object or null", file=str(path), key=f"findings[{i}].location")
        if f.get("details") is not None and not isinstance(f["details"], dict):
            raise InputError("expected an object", file=str(path), key=f"findings[{i}].details")
        out.add(fingerprint_json(f))
    return out
