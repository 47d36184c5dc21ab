"""``--format junit``: one test suite per target, one test case per rule that ran on it (or per code
found, for commands without a rule list). A case fails when it has a finding at or above ``--fail-on``;
a clean run still has passing cases, so CI never sees an empty report. A target that could not be read is a
suite whose one case is an ``<error>``.

Valid against Jenkins' ``junit-10.xsd`` (the schema its xUnit plugin reads; tests/data/): a case has a
``classname`` and a ``name`` only. The classname is ``tokaudit.COMMAND`` and the target is in the case's name,
since Jenkins splits a classname at its last dot (``fixtures/kimi-k2.5`` would become ``kimi-k2`` / ``5``).
Where a finding is (file, line, JSON key) opens its line in the case's text."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import TextIO

from tokaudit.report.finding import Finding, Severity
from tokaudit.report.locations import location_text
from tokaudit.report.report import Report, tool_version, versions
from tokaudit.report.text import safe


_INVALID_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml(text: str) -> str:
    """Untrusted text made visible (:func:`safe`), then what XML 1.0 can carry: characters it forbids become
    ``\\uXXXX``."""
    return _INVALID_XML.sub(lambda m: f"\\u{ord(m.group()):04X}", safe(text))


#: Longest ``message`` attribute: CI lists show it on one line; the whole text is the element's content.
MAX_MESSAGE = 300


def _headline(message: str) -> str:
    """The message, cut at a word boundary past MAX_MESSAGE characters (never inside "(e.g. ...")."""
    if len(message) <= MAX_MESSAGE:
        return message
    cut = message.rfind(" ", 0, MAX_MESSAGE)
    return message[: cut if cut > MAX_MESSAGE // 2 else MAX_MESSAGE].rstrip(" ,;:") + " …"


def _threshold(fail_on: str) -> int:
    return 99 if fail_on == "never" else Severity(fail_on).rank


def junit_tree(report: Report, fail_on: str) -> ET.Element:
    root = ET.Element("testsuites", name=f"tokaudit {report.command}")
    threshold = _threshold(fail_on)
    total = failed = 0
    for result in report.results:
        findings = [f for f in report.findings if f.target == result.target]
        cases: dict[str, tuple[str, list[Finding]]] = {}
        for code, name in result.rules:
            cases[code] = (name, [])
        for f in findings:
            cases.setdefault(f.code, (f.name, []))[1].append(f)
        if not cases:
            cases[report.command] = ("no findings", [])
        suite = ET.SubElement(root, "testsuite", name=_xml(result.target))
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="tokaudit", value=tool_version())
        for lib, version in versions().items():
            ET.SubElement(props, "property", name=f"version.{lib}", value=version)
        if result.source is not None:  # the key baselines know the target by; a Hub repo's resolved commit
            for key, value in result.source.to_json().items():
                if value is not None:
                    ET.SubElement(props, "property", name=f"source.{key}", value=_xml(str(value)))
        policy = result.policy
        if policy is not None:  # findings the policy dropped are not cases, but they are not invisible either
            ET.SubElement(props, "property", name="suppressed.baselined", value=str(policy.baselined))
            ET.SubElement(props, "property", name="suppressed.ignored", value=str(policy.suppressed))
        suite_failed = 0
        for code in sorted(cases):
            name, found = cases[code]
            title = f"{code} {name}" if code != report.command else name
            case = ET.SubElement(
                suite,
                "testcase",
                name=_xml(f"{title} ({result.target})"),
                classname=f"tokaudit.{report.command}",
                time="0",
            )
            failing = [f for f in found if f.severity.rank >= threshold]
            # each untrusted part made visible, the lines between them kept
            body = "\n\n".join(f"[{f.severity.value}] {_xml(location_text(f))}\n{_xml(f.message)}" for f in found)
            if failing:
                suite_failed += 1
                worst = max(failing, key=lambda f: f.severity.rank)
                failure = ET.SubElement(
                    case, "failure", message=_xml(_headline(worst.message)), type=worst.severity.value
                )
                failure.text = body
            elif found:
                ET.SubElement(case, "system-out").text = body
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(suite_failed))
        suite.set("errors", "0")
        suite.set("skipped", "0")
        suite.set("time", "0")
        total += len(cases)
        failed += suite_failed
    for target, error in report.unreadable.items():
        suite = ET.SubElement(
            root, "testsuite", name=_xml(target), tests="1", failures="0", errors="1", skipped="0", time="0"
        )
        case = ET.SubElement(
            suite,
            "testcase",
            name=_xml(f"read the target ({target})"),
            classname=f"tokaudit.{report.command}",
            time="0",
        )
        ET.SubElement(case, "error", message=_xml(_headline(error)), type="unreadable").text = _xml(error)
        total += 1
    root.set("tests", str(total))
    root.set("failures", str(failed))
    root.set("errors", str(len(report.unreadable)))
    root.set("time", "0")
    return root


def render_junit(report: Report, stream: TextIO, fail_on: str = "error") -> None:
    tree = junit_tree(report, fail_on)
    ET.indent(tree)
    stream.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    stream.write(ET.tostring(tree, encoding="unicode"))
    stream.write("\n")
