"""Known differences: `duespec conform --baseline REPORT.json`.

A baseline is a previous `conform --json` report of the same system, target and profile.
Its classes (those that failed it: not declared) are known: each is masked from the first
step of the campaign, as a class the campaign found itself is masked once found (the same
kind, op and cause, at one of its paths or below one; duespec.campaigns.classes), so the
search spends its runs past them. What the campaign finds is then NEW by construction,
and only a NEW class fails it, as a linter's baseline lets only new warnings fail a build.

A report made with a baseline carries that baseline's classes too (`baseline` in each
campaign), so it is itself the refreshed baseline: known classes, and the new ones.

Anything else is refused, one line naming the file and the problem, never ignored: a
file that is no such report, one of another system, target or profile, a class that is
not one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from duespec.campaigns.report_json import SCHEMA
from duespec.judge import DivergenceClass, FindingKind, requirements_of
from duespec.limits import MAX_REPORT_BYTES, InputError, parse_json, read_file


class BaselineError(ValueError):
    """The baseline cannot be used; the message names the file and the problem."""


def read(path: str | Path, system: str, target: str, profiles: list[str]) -> dict[str, list[DivergenceClass]]:
    """profile -> the known classes of the report at `path`, for a campaign of `system`
    against `target` in each of `profiles`."""
    where = str(path)
    try:  # read as `merge` reads a report: a regular file only, within MAX_REPORT_BYTES
        data = read_file(path, MAX_REPORT_BYTES)
    except InputError as error:
        raise BaselineError(f"--baseline {where}: {error.problem}") from None
    try:
        document = parse_json(data, unique_keys=True)
    except InputError as error:
        raise BaselineError(f"--baseline {where}: not JSON: {error.problem}") from None
    if not isinstance(document, dict) or document.get("duespec_report") != SCHEMA \
            or not isinstance(document.get("campaigns"), list):
        raise BaselineError(f"--baseline {where}: not a duespec `conform --json` report (schema {SCHEMA})")
    campaigns = [c for c in document["campaigns"] if isinstance(c, dict)]
    systems = sorted({str(c.get("system")) for c in campaigns})
    mine = [c for c in campaigns if c.get("system") == system]
    if not mine:
        raise BaselineError(f"--baseline {where}: a report of {', '.join(systems) or 'no campaign'}, "
                            f"not of {system}")
    targets = sorted({str(c.get("target")) for c in mine})
    if targets != [target]:
        raise BaselineError(f"--baseline {where}: made against target {', '.join(targets)}, not {target}")
    known: dict[str, list[DivergenceClass]] = {}
    for profile in profiles:
        of_profile = [c for c in mine if c.get("profile") == profile]
        if not of_profile:
            had = sorted({str(c.get("profile")) for c in mine})
            raise BaselineError(f"--baseline {where}: has no campaign of profile {profile} (it has "
                                f"{', '.join(had)}); make one with --profile {profile}")
        classes: list[DivergenceClass] = []
        for campaign in of_profile:
            for number, entry in enumerate(_known_entries(where, campaign), 1):
                found = _class_of(where, profile, number, entry)
                if found not in classes:
                    classes.append(found)
        known[profile] = classes
    return known


def _known_entries(where: str, campaign: dict[str, Any]) -> list[Any]:
    """A campaign's classes that failed it (not declared), and the baseline it had."""
    findings = campaign.get("findings")
    carried = campaign.get("baseline", [])
    if not isinstance(findings, list) or not isinstance(carried, list):
        raise BaselineError(f"--baseline {where}: a campaign whose findings or baseline is not a list")
    entries = []
    for finding in findings:
        if not isinstance(finding, dict):
            raise BaselineError(f"--baseline {where}: a finding that is not an object: {finding!r}")
        if finding.get("class") is not None and not finding.get("declared"):
            entries.append(finding["class"])
    return entries + carried


def _class_of(where: str, profile: str, number: int, entry: Any) -> DivergenceClass:
    def fail(problem: str) -> BaselineError:
        return BaselineError(f"--baseline {where}: profile {profile}, class {number}: {problem}")

    if not isinstance(entry, dict):
        raise fail(f"not an object: {entry!r}")
    try:
        kind = FindingKind(entry.get("kind"))
    except ValueError:
        raise fail(f"unknown kind {entry.get('kind')!r}; known: {', '.join(map(str, FindingKind))}") from None
    path, paths, cause = entry.get("path"), entry.get("paths", [entry.get("path")]), entry.get("cause", [])
    if "op" not in entry or not isinstance(path, str):
        raise fail("needs an op and a path")
    if not (isinstance(paths, list) and all(isinstance(p, str) for p in paths)
            and isinstance(cause, list) and all(isinstance(t, str) for t in cause)):
        raise fail("paths and cause must be lists of strings")
    return DivergenceClass(kind, entry["op"], requirements_of(cause), path,
                           tuple(paths), tuple(cause))
