"""JUnit XML for CI: one testcase per campaign, so a CI page shows which one diverged.

The shape is the one CI systems (GitHub, GitLab, Jenkins) read: <testsuites> holding one
<testsuite> with a <testcase> per campaign, a <failure> (a wrong answer) or <error> (no
answer: the target crashed or spoke garbage) carrying the divergence and the trace path.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

from duespec import outputs

from duespec.campaigns.run import DIVERGENCE, CampaignResult

#: Characters XML 1.0 cannot carry at all, not even escaped.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


@dataclass(frozen=True)
class Case:
    result: CampaignResult
    target: str
    #: The failure message and everything needed to reproduce it (trace path, commands).
    details: str = ""


def to_xml(suite: str, cases: list[Case]) -> str:
    failures = sum(1 for case in cases if case.result.failure_kind == DIVERGENCE)
    errors = sum(1 for case in cases if not case.result.ok) - failures
    seconds = sum(case.result.seconds for case in cases)
    root = ElementTree.Element("testsuites", name="duespec", tests=str(len(cases)),
                               failures=str(failures), errors=str(errors), time=f"{seconds:.3f}")
    element = ElementTree.SubElement(root, "testsuite", name=suite, tests=str(len(cases)),
                                     failures=str(failures), errors=str(errors),
                                     time=f"{seconds:.3f}")
    for case in cases:
        result = case.result
        testcase = ElementTree.SubElement(
            element, "testcase", classname=f"duespec.{result.system}",
            name=f"{result.system}[{result.profile}] seed={result.seed} target={case.target}",
            time=f"{result.seconds:.3f}")
        properties = ElementTree.SubElement(testcase, "properties")
        for key, value in (("examples", result.examples), ("steps", result.steps),
                           ("seed", result.seed), ("profile", result.profile)):
            ElementTree.SubElement(properties, "property", name=key, value=str(value))
        if not result.ok:
            tag = "failure" if result.failure_kind == DIVERGENCE else "error"
            headline = (result.failure or "").splitlines()[0] if result.failure else tag
            problem = ElementTree.SubElement(testcase, tag, type=result.failure_kind or "error",
                                             message=_xml_safe(headline[:500]))
            problem.text = _xml_safe(case.details or result.failure or "")
    ElementTree.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(root, encoding="unicode") + "\n"


def _xml_safe(text: str) -> str:
    return _NOT_XML.sub("\N{REPLACEMENT CHARACTER}", text)


def write(path: str | Path, suite: str, cases: list[Case]) -> Path:
    return outputs.write_text(path, to_xml(suite, cases), what="--junit")
