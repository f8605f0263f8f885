"""JUnit XML for CI: one testcase per divergence class, so a CI page shows each one.

The shape is the one CI systems (GitHub, GitLab, Jenkins) read: <testsuites> holding one
<testsuite> with a <testcase> per class a campaign found (or one per campaign that found
none), a <failure> (a wrong answer) or <error> (no answer: the target crashed, raised or
kept state across reset) carrying the divergence and the trace path. A declared class is a
passing testcase whose system-out gives the reason.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

from duespec import outputs

from duespec.campaigns.run import CampaignResult

#: Characters XML 1.0 cannot carry at all, not even escaped.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


@dataclass(frozen=True)
class Case:
    result: CampaignResult
    target: str
    #: The failure message and everything needed to reproduce it (trace path, commands).
    details: str = ""
    #: The same per divergence class, in the order of result.findings.
    finding_details: tuple[str, ...] = ()


def to_xml(suite: str, cases: list[Case]) -> str:
    testcases = [entry for case in cases for entry in _testcases(case)]
    failures = sum(1 for *_, tag, _text, _kind in testcases if tag == "failure")
    errors = sum(1 for *_, tag, _text, _kind in testcases if tag == "error")
    seconds = sum(case.result.seconds for case in cases)
    root = ElementTree.Element("testsuites", name="duespec", tests=str(len(testcases)),
                               failures=str(failures), errors=str(errors), time=f"{seconds:.3f}")
    element = ElementTree.SubElement(root, "testsuite", name=suite, tests=str(len(testcases)),
                                     failures=str(failures), errors=str(errors),
                                     time=f"{seconds:.3f}")
    for case, name, properties, tag, text, kind in testcases:
        result = case.result
        testcase = ElementTree.SubElement(element, "testcase", classname=f"duespec.{result.system}",
                                          name=_xml_safe(name), time=f"{result.seconds:.3f}")
        listed = ElementTree.SubElement(testcase, "properties")
        for key, value in properties:
            ElementTree.SubElement(listed, "property", name=key, value=_xml_safe(str(value)))
        if tag in ("failure", "error"):
            headline = text.splitlines()[0] if text else tag
            problem = ElementTree.SubElement(testcase, tag, type=kind,
                                             message=_xml_safe(headline[:500]))
            problem.text = _xml_safe(text)
        elif text:
            ElementTree.SubElement(testcase, "system-out").text = _xml_safe(text)
    ElementTree.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(root, encoding="unicode") + "\n"


def _testcases(case: Case) -> list[tuple[Case, str, list[tuple[str, object]], str, str, str]]:
    """(case, name, properties, "failure" | "error" | "passed", text, kind) per testcase."""
    result = case.result
    campaign = f"{result.system}[{result.profile}] seed={result.seed} target={case.target}"
    properties: list[tuple[str, object]] = [("examples", result.examples), ("steps", result.steps),
                                            ("seed", result.seed), ("profile", result.profile)]
    incomplete = []
    if result.cut_short is not None:
        properties.append(("cut_short", result.cut_short))
        if result.ok and not result.cut_short.startswith("--budget"):
            # exit 3: a campaign stopped by a signal shows nothing holds, so no testcase passes for it
            incomplete = [(case, f"{campaign} incomplete", properties, "error",
                           f"cut short by {result.cut_short} after {result.examples:,} runs: nothing "
                           f"undeclared found, nothing shown to hold", "incomplete")]
    if not result.findings and incomplete:
        return incomplete
    if not result.findings:
        outcome = result.failure_kind.outcome if result.failure_kind else "error"
        tag = "passed" if result.ok else ("failure" if outcome == "divergence" else "error")
        return [(case, campaign, properties, tag, "" if result.ok else case.details or result.failure or "",
                 outcome)]
    entries = []
    for index, finding in enumerate(result.findings):
        text = case.finding_details[index] if index < len(case.finding_details) else finding.failure
        tag = "passed" if not finding.gates else ("failure" if finding.kind.outcome == "divergence" else "error")
        entries.append((case, f"{campaign} class {finding.label}",
                        [*properties, ("kind", finding.kind.outcome), ("counterexample_steps", len(finding.counterexample)),
                         ("declared", "; ".join(e.reason for e in finding.declared) or "no")],
                        tag, text, finding.kind.outcome))
    return entries + incomplete


def _xml_safe(text: str) -> str:
    return _NOT_XML.sub("\N{REPLACEMENT CHARACTER}", text)


def write(path: str | Path, suite: str, cases: list[Case]) -> Path:
    return outputs.write_text(path, to_xml(suite, cases), what="--junit")
