"""The spec-coverage report and the JUnit XML: what a campaign reached, what CI reads."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from duespec.campaigns import junit
from duespec.campaigns.run import CampaignResult
from duespec.judge import FindingKind
from duespec.campaigns.report import catalogue_ids, catalogue_text, coverage_report, write_json
from duespec.systems import get_system

CATALOGUE = """# toy catalogue

**T-01 First.** Mentions T-03 in passing, and CVE-2021-39167.
## T-02 Second
| T-03 | a table row |
- T-04 a list item, see also T-01.
Prose that mentions T-09 but never defines it.
"""


def test_catalogue_ids_are_the_defined_ones_in_order() -> None:
    assert catalogue_ids(CATALOGUE) == ["T-01", "T-02", "T-03", "T-04"]


def test_a_catalogue_that_defines_nothing_falls_back_to_every_mention() -> None:
    assert catalogue_ids("See S-02 and P-02, then S-02 again.") == ["S-02", "P-02"]


def test_the_duebook_catalogue_defines_d01_to_d27_and_its_regimes() -> None:
    assert catalogue_ids(catalogue_text("duebook.md")) == (
        [f"D-{n:02}" for n in range(1, 28)] + [f"DR-{n:02}" for n in range(1, 10)])


def duebook_report(coverage: Counter[str]):
    return coverage_report(get_system("duebook"), "seed", coverage)


def test_tags_are_grouped_by_requirement_with_counts() -> None:
    report = duebook_report(Counter({"D-09.not_due": 4, "D-05.claim_not_found": 2,
                                     "D-05.get_not_found": 1, "D-03.scheduled": 7}))
    assert list(report.reached) == ["D-03", "D-05", "D-09"]  # catalogue order
    assert report.reached["D-05"] == {"D-05.claim_not_found": 2, "D-05.get_not_found": 1}
    assert "D-01" in report.never_reached and "D-09" not in report.never_reached
    assert len(report.never_reached) == 36 - 3
    assert "D-08.claimed" in report.missing_required
    text = report.render()
    assert "3 of 36 requirements of duebook.md reached" in text
    assert "D-05" in text and "claim_not_found 2, get_not_found 1" in text


def test_the_summary_line_counts_each_note_and_says_it_fails_nothing() -> None:
    report = duebook_report(Counter({"D-09.not_due": 4, "D-99.typo": 1}))
    line = report.summary_line()
    assert "\n" not in line
    assert line.startswith("spec coverage: 1 of 36 requirements of duebook.md reached; notes, not failures of "
                           "this campaign: ")
    assert f"{len(report.missing_required)} required tags not reached" in line
    assert "1 tags the catalogue does not define" in line and line.endswith("(--coverage for the report)")
    system = get_system("duebook")
    full = duebook_report(Counter({tag: 1 for tag in system.required_tags}))
    assert "notes" not in full.summary_line()
    # the whole report says the same of required tags: a note, not a failure
    assert "required tags not reached (a note, not a failure of this campaign" in report.render()


def test_a_campaign_prints_one_coverage_line_by_default_and_the_report_with_coverage(
        capsys: pytest.CaptureFixture[str]) -> None:
    from duespec.cli import main

    quick = ["check", "duebook", "--examples", "5", "--progress", "0", "--database", "none"]
    assert main(quick) == 0
    quiet = capsys.readouterr().out.splitlines()
    assert quiet[0].startswith("HOLDS: duebook [seed]")
    assert [line for line in quiet if line.startswith("spec coverage:")] == quiet[-1:]
    assert not any(line.startswith(("  D-", "depth over")) for line in quiet), quiet
    assert main([*quick, "--coverage"]) == 0
    full = capsys.readouterr().out
    assert "spec coverage: duebook [seed]" in full and "\n  D-03 " in full and "depth over" in full


def test_a_tag_the_catalogue_does_not_define_is_flagged() -> None:
    report = duebook_report(Counter({"D-99.typo": 1, "D-03.scheduled": 1}))
    assert report.unknown == ["D-99.typo"]
    assert "D-99.typo" in report.render()


def test_a_campaign_reaching_every_required_tag_misses_none() -> None:
    system = get_system("duebook")
    report = duebook_report(Counter({tag: 1 for tag in system.required_tags}))
    assert report.missing_required == []
    assert "required tags not reached" not in report.render()


def test_the_json_report_round_trips(tmp_path: Path) -> None:
    report = duebook_report(Counter({"D-09.not_due": 4}))
    [loaded] = json.loads(write_json([report], tmp_path / "c.json").read_text())
    assert loaded["reached"] == {"D-09": {"D-09.not_due": 4}}
    assert loaded["catalogue_ids"] == 36 and loaded["never_reached"][0] == "D-01"


HELD = CampaignResult(system="duebook", profile="seed", seed=3, examples=10, steps=100,
                      seconds=1.5, coverage=Counter())


def test_junit_has_one_testcase_per_campaign_with_failures_and_errors_apart(tmp_path: Path) -> None:
    diverged = replace(HELD, failure="Divergence: step 1 \x00 bad", failure_kind=FindingKind.RESPONSE)
    crashed = replace(HELD, profile="other", failure="TargetError: died", failure_kind=FindingKind.TARGET_RAISED)
    path = junit.write(tmp_path / "j.xml", "duespec conform duebook", [
        junit.Case(HELD, "impl"), junit.Case(diverged, "impl", "details\ntrace: x.jsonl"),
        junit.Case(crashed, "impl")])
    root = ElementTree.parse(path).getroot()  # parses: the NUL was replaced
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("3", "1", "1")
    cases = root.findall("./testsuite/testcase")
    assert [c.get("name") for c in cases] == [
        "duebook[seed] seed=3 target=impl", "duebook[seed] seed=3 target=impl",
        "duebook[other] seed=3 target=impl"]
    assert cases[0].find("failure") is None and cases[0].find("error") is None
    assert cases[1].find("failure").text == "details\ntrace: x.jsonl"
    assert cases[2].find("error").get("message") == "TargetError: died"


def test_ids_of_up_to_four_letters_are_requirements() -> None:
    assert catalogue_ids("**ENV-01 Clock.** ...\n**TO-02 Catch-up.** see RFC-2119") == ["ENV-01", "TO-02"]


def test_an_unreadable_catalogue_is_reported_not_raised() -> None:
    system = replace(get_system("duebook"), catalogue="no-such-catalogue.md")
    report = coverage_report(system, "seed", Counter({"D-03.scheduled": 2}))
    assert report.never_reached == [] and report.unknown == []
    assert report.reached == {"D-03": {"D-03.scheduled": 2}}
    assert "catalogue unreadable (no-such-catalogue.md" in report.render()
