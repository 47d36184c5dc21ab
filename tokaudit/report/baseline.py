"""Finding fingerprints and baselines (a previous ``--format json`` report).

A fingerprint identifies a finding across runs: code, name, target, file, JSON key and a
subject (the finding's ``details.subject``, else its id ranges). Line numbers are left out on
purpose, so editing a file elsewhere does not make old findings look new. The target is its key
(``Source.key``: the path from the project root, or the Hub repo id), so a target given as an absolute
path or from another directory is the same target; reports written before 0.2.0 have no key, and their
targets count as typed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokaudit.artifacts.strict_json import read_json
from tokaudit.errors import InputError
from tokaudit.report.finding import Finding


def normalize_target(target: str) -> str:
    t = target.replace("\\", "/")
    while t.startswith("./"):
        t = t[2:]
    return t.rstrip("/") or t


def fingerprint_json(finding: dict[str, Any], target_key: str | None = None) -> str:
    """The fingerprint of a finding as JSON; ``target_key`` stands for its ``target`` when given."""
    location = finding.get("location") or {}
    details = finding.get("details") or {}
    subject = details.get("subject")
    if subject is None:
        subject = json.dumps(finding.get("ids")) if finding.get("ids") is not None else ""
    parts = [
        str(finding.get("code", "")),
        str(finding.get("name", "")),
        normalize_target(target_key if target_key is not None else str(finding.get("target", ""))),
        str(location.get("file", "")),
        str(location.get("key") or ""),
        str(subject),
    ]
    import hashlib  # only baselines and SARIF need fingerprints

    # surrogatepass: a target path with undecodable bytes (surrogate-escaped) still has a fingerprint
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def fingerprint(finding: Finding, target_key: str | None = None) -> str:
    return fingerprint_json(finding.to_json(), target_key)


@dataclass
class Baseline:
    """A previous JSON report's findings: fingerprint -> the key of the target it was found on."""

    path: Path
    entries: dict[str, str] = field(default_factory=dict)
    matched: set[str] = field(default_factory=set)
    #: The keys (``findings[3]``) of the entries left out because they have no "reason" while require-reason is on.
    unreasoned: tuple[str, ...] = ()

    def match(self, finding: Finding, target_key: str | None) -> bool:
        """Whether the baseline holds ``finding`` (by its target's key, or by the target as typed, as reports
        before 0.2.0 knew it); remembered for :meth:`stale`."""
        for candidate in {fingerprint(finding, target_key), fingerprint(finding)}:
            if candidate in self.entries:
                self.matched.add(candidate)
                return True
        return False

    def stale(self, target_keys: Iterable[str]) -> str | None:
        """What is wrong with the baseline after a run over ``target_keys``, or None: entries of these targets
        that matched no finding (fixed, or keyed differently), or no entry for any of them at all."""
        keys = {normalize_target(k) for k in target_keys}
        if not self.entries:
            return None
        mine = [fp for fp, key in self.entries.items() if key in keys]
        if not mine:
            names = sorted(set(self.entries.values()))
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            return (
                f"baseline {self.path}: none of its {len(self.entries)} entries is for a target scanned here "
                f"(it names {shown}); no finding was baselined"
            )
        unmatched = [fp for fp in mine if fp not in self.matched]
        if unmatched:
            return (
                f"baseline {self.path}: {len(unmatched)} of its {len(mine)} entries for the targets scanned here "
                "matched no finding (fixed, or changed): regenerate it with --format json"
            )
        return None


def load_baseline(path: Path, *, require_reason: bool = False) -> Baseline:
    """Fingerprints of every finding in a previous JSON report, each with its target's key (with ``require_reason``,
    of those with a non-empty "reason" string: a person said why the finding may stay)."""
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("findings"), list):
        raise InputError(
            "not a tokaudit JSON report (expected an object with a 'findings' list)", file=str(path), key="findings"
        )
    keys = _target_keys(data)
    out = Baseline(path)
    unreasoned = []
    for i, f in enumerate(data["findings"]):
        if not isinstance(f, dict) or not isinstance(f.get("code"), str) or not isinstance(f.get("name", ""), str):
            raise InputError("expected a finding with a string 'code'", file=str(path), key=f"findings[{i}]")
        if f.get("location") is not None and not isinstance(f["location"], dict):
            raise InputError("expected an object or null", file=str(path), key=f"findings[{i}].location")
        if f.get("details") is not None and not isinstance(f["details"], dict):
            raise InputError("expected an object", file=str(path), key=f"findings[{i}].details")
        reason = f.get("reason")
        if require_reason and not (isinstance(reason, str) and reason.strip()):
            unreasoned.append(f"findings[{i}]")
            continue
        key = keys.get(str(f.get("target", "")), normalize_target(str(f.get("target", ""))))
        out.entries[fingerprint_json(f, key)] = normalize_target(key)
    out.unreasoned = tuple(unreasoned)
    return out


def _target_keys(data: dict[str, Any]) -> dict[str, str]:
    """target as typed -> its key, from a report's ``targets[].origin.key`` (reports since 0.2.0)."""
    out: dict[str, str] = {}
    targets = data.get("targets")
    for entry in targets if isinstance(targets, list) else ():
        source = entry.get("origin") if isinstance(entry, dict) else None
        if isinstance(source, dict) and isinstance(source.get("key"), str) and isinstance(entry.get("target"), str):
            out[entry["target"]] = source["key"]
    return out
