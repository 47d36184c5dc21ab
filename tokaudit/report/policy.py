"""What counts: rule selection (``--select``/``--ignore``), per-target suppressions and the baseline.

Applied after the checks ran and before rendering, so every output format and the exit code see
the same findings. Suppressions that matched nothing are reported as TA001 unused-suppression.
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tokaudit.records import Provenance
from tokaudit.config import Config, TargetIgnore
from tokaudit.errors import InputError
from tokaudit.report.baseline import Baseline, normalize_target
from tokaudit.report.finding import Finding, catalog_code

#: The TA001 finding: a per-target ignore that matched nothing.
UNUSED_SUPPRESSION = catalog_code("TA001")
#: The TA010 finding: baseline entries without a reason while require-reason is on.
BASELINE_REASON_MISSING = catalog_code("TA010")
#: Codes tokaudit itself emits about its configuration (TA0xx).
META_CODES = (UNUSED_SUPPRESSION, BASELINE_REASON_MISSING)

_CODE_PREFIX = re.compile(r"(?i)TA\d{0,3}|ALL")


@dataclass(frozen=True)
class Selection:
    """``select`` (empty: everything) minus ``ignore``; each entry a code, a code prefix or a name (prefix)."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()

    def chosen(self, code: str, name: str) -> bool:
        if self.select and not any(matches(s, code, name) for s in self.select):
            return False
        return not any(matches(s, code, name) for s in self.ignore)

    def named_exactly(self, code: str, name: str) -> bool:
        """Selected by its exact code or name (deep rules run when asked for by name)."""
        return any(s.upper() == code or s == name for s in self.select)


def matches(selector: str, code: str, name: str) -> bool:
    if selector.upper() == "ALL":
        return True
    if _CODE_PREFIX.fullmatch(selector):
        return code.upper().startswith(selector.upper())
    return name == selector or name.startswith(selector)


def split_selectors(values: Iterable[str] | None) -> tuple[str, ...]:
    """``--select TA1,eos-mismatch --select TA3`` -> ("TA1", "eos-mismatch", "TA3")."""
    out: list[str] = []
    for value in values or ():
        out.extend(part.strip() for part in value.split(",") if part.strip())
    return tuple(out)


def validate(selectors: Sequence[str], known: Sequence[tuple[str, str]], where: str, file: str | None = None) -> None:
    """Every selector must match a known rule or look like a code prefix; else a one-line error."""
    names = [n for _, n in known]
    for s in selectors:
        if _CODE_PREFIX.fullmatch(s) or any(matches(s, c, n) for c, n in known):
            continue
        close = difflib.get_close_matches(s, names, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise InputError(f"unknown rule {s!r}{hint}", file=file, key=where)


@dataclass(frozen=True)
class PolicyCounts:
    """What the policy did to one target's findings, and the files it read (a result's ``policy`` key)."""

    #: findings a ``[tool.tokaudit]`` per-target ignore dropped
    suppressed: int
    #: findings the baseline held
    baselined: int
    #: the configuration file read, if any
    config: str | None = None
    #: the baseline file read, if any
    baseline: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "suppressed": self.suppressed,
            "baselined": self.baselined,
            "config": self.config,
            "baseline": self.baseline,
        }


@dataclass
class PolicyOutcome:
    """The findings the policy keeps, and how many it suppressed or baselined per target."""

    findings: list[Finding]
    #: target -> {"suppressed": n, "baselined": n}
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    #: What is wrong with the baseline (see :meth:`Baseline.stale`), for a warning line; None when nothing is.
    stale_baseline: str | None = None


def _target_matches(entry: TargetIgnore, target: str, config_dir: Path | None) -> bool:
    given = normalize_target(target)
    if fnmatch.fnmatchcase(given, entry.target.rstrip("/")):
        return True
    if config_dir is not None:
        try:
            rel = Path(target).resolve().relative_to(config_dir).as_posix()
        except (ValueError, OSError):
            return False
        return fnmatch.fnmatchcase(rel, entry.target.rstrip("/"))
    return False


def apply_policy(
    findings: list[Finding],
    targets: Sequence[str],
    *,
    selection: Selection,
    config: Config,
    baseline: Baseline | None,
    rules_run: Sequence[tuple[str, str]],
    target_keys: dict[str, str] | None = None,
) -> PolicyOutcome:
    """Drop unselected, suppressed and baselined findings; add TA001 for suppressions that matched nothing.
    ``target_keys``: each target's key (``Source.key``), which baselines match on."""
    target_keys = target_keys or {}
    config_dir = config.path.parent if config.path else None
    counts = {t: {"suppressed": 0, "baselined": 0} for t in targets}
    used: set[int] = set()
    kept: list[Finding] = []
    for f in findings:
        if not selection.chosen(f.code, f.name):
            continue
        entry = next(
            (
                e
                for e in config.per_target_ignores
                if _target_matches(e, f.target, config_dir) and any(matches(r, f.code, f.name) for r in e.rules)
            ),
            None,
        )
        if entry is not None:
            used.add(entry.index)
            counts.setdefault(f.target, {"suppressed": 0, "baselined": 0})["suppressed"] += 1
            continue
        kept.append(f)

    name, severity = UNUSED_SUPPRESSION.name, UNUSED_SUPPRESSION.severity
    for entry in config.per_target_ignores:
        ran = any(matches(r, c, n) for r in entry.rules for c, n in rules_run)
        hit = [t for t in targets if _target_matches(entry, t, config_dir)]
        if entry.index in used or not ran or not hit or not selection.chosen("TA001", name):
            continue
        kept.append(
            Finding(
                "TA001",
                name,
                severity,
                f"the per-target ignore of {', '.join(entry.rules)} for {entry.target!r} ({entry.reason}) matched no "
                "finding" + ": remove it, or fix its rules.",
                location=Provenance(config.path.name if config.path else "pyproject.toml", key=entry.key),
                details={
                    "subject": entry.key,
                    "target_glob": entry.target,
                    "rules": list(entry.rules),
                    "reason": entry.reason,
                    "config": str(config.path) if config.path else None,
                },
                target=hit[0],
            )
        )

    stale = None
    unreasoned = baseline.unreasoned if baseline is not None else ()
    if unreasoned and targets and selection.chosen("TA010", BASELINE_REASON_MISSING.name):
        shown = ", ".join(unreasoned[:5]) + (f" and {len(unreasoned) - 5} more" if len(unreasoned) > 5 else "")
        kept.append(
            BASELINE_REASON_MISSING.finding(
                f"{len(unreasoned)} entr{'y' if len(unreasoned) == 1 else 'ies'} of the baseline "
                f"ha{'s' if len(unreasoned) == 1 else 've'} "
                'no "reason" and require-reason is on, so '
                f"{'its finding is' if len(unreasoned) == 1 else 'their findings are'} "
                f'reported, not baselined: {shown}. Add a "reason" to each, or fix the findings.',
                location=Provenance(str(baseline.path) if baseline is not None else "baseline", key=unreasoned[0]),
                details={
                    "subject": str(baseline.path) if baseline is not None else "baseline",
                    "entries": list(unreasoned),
                },
                target=targets[0],
            )
        )
    if baseline is not None:
        fresh = []
        for f in kept:
            if baseline.match(f, target_keys.get(f.target)):
                counts.setdefault(f.target, {"suppressed": 0, "baselined": 0})["baselined"] += 1
            else:
                fresh.append(f)
        kept = fresh
        stale = baseline.stale([target_keys.get(t, t) for t in targets] + list(targets))
    return PolicyOutcome(kept, counts, stale)
