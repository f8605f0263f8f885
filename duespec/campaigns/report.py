"""The spec-coverage report: which requirements and spec branches a campaign exercised.

A campaign that holds says little if it never reached half the spec. The model tags every
branch it takes (`duespec.coverage.reached("D-09.not_due")`); this report groups those
tags by requirement ID, counts them, and sets them against the requirement catalogue
(duespec/spec/<catalogue>.md) to list the requirements no step ever reached. Some
requirements are checked by proofs or unit tests rather than by any branch of the model,
and some belong to another profile (System.unreached_reasons, System.out_of_reach): each
never-reached requirement is listed with its reason, and one without is named as a gap.
Missing required tags (System.required_in: those the profile can reach) are a failure of
the machine's tests (a default `duespec check` must reach them), and a note, never a
failure, of a campaign against a target: a target's answers steer the runs.

A campaign prints `summary_line` by default, and `render`, the whole report, with
`--coverage` (or `-v`).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from contextlib import suppress
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Mapping

from duespec import outputs
from duespec.campaigns.run import CampaignResult
from duespec.coverage import TAKEN_BACK
from duespec.systems import System
from duespec.judge import requirement_of

#: What a missing required tag is to a campaign, said where the report lists them.
REQUIRED_NOTE = ("a note, not a failure of this campaign: a target's answers steer the runs, and fewer "
                 "--examples reach fewer; duespec's own machine tests fail when a default check misses one")
#: A requirement ID: one to four capital letters, a dash, two or three digits (D-07, ENV-01).
REQUIREMENT_ID = re.compile(r"\b([A-Z]{1,4}-\d{2,3})\b")
#: An ID where it is defined: first on its line, after Markdown decoration (**, #, |, -).
DEFINED_ID = re.compile(r"^[\s#*|>\-]*\**([A-Z]{1,4}-\d{2,3})\b", re.MULTILINE)


def catalogue_text(name: str) -> str:
    """A catalogue of duespec.spec by its file name, or one kept elsewhere by its absolute
    path (a system plugged in from outside duespec keeps its own)."""
    if os.path.isabs(name):
        with open(name, encoding="utf-8") as file:
            return file.read()
    return resources.files("duespec.spec").joinpath(name).read_text(encoding="utf-8")


def catalogue_ids(text: str) -> list[str]:
    """The requirement IDs a catalogue defines, in order of definition.

    An ID counts as defined where it starts a line (a heading, a bold lead, a table row);
    a catalogue with no such line falls back to every ID it mentions."""
    found = DEFINED_ID.findall(text) or REQUIREMENT_ID.findall(text)
    return list(dict.fromkeys(found))


@dataclass(frozen=True)
class MatrixCoverage:
    """How much of a system's malformation matrix (System.matrix) a campaign sent."""

    requirement: str
    #: (op, field, form) -> times sent, for every cell.
    hits: dict[tuple[str, str, str], int]
    #: Cells not sent -> why (an op left out, or too few runs).
    unreached: dict[tuple[str, str, str], str]
    #: Malformations the contract defines that the machine does not send -> why.
    unsent: dict[str, str]

    @property
    def reached(self) -> int:
        return sum(1 for count in self.hits.values() if count)

    def to_json(self) -> dict[str, Any]:
        reached = [count for count in self.hits.values() if count]
        return {"requirement": self.requirement, "cells": len(self.hits), "reached": self.reached,
                "fewest_sends": min(reached, default=0),
                "unreached": {"/".join(cell): why for cell, why in self.unreached.items()},
                "unsent": self.unsent}

    def render(self) -> list[str]:
        reached = sorted(count for count in self.hits.values() if count)
        lines = [f"  malformation matrix ({self.requirement}): {self.reached} of {len(self.hits)} "
                 f"(op, field, form) cells reached"
                 + (f", each {reached[0]:,} to {reached[-1]:,} times" if reached else "")]
        for why, cells in _grouped_by_reason({"/".join(cell): why for cell, why in self.unreached.items()},
                                             keep_order=True).items():
            shown = ", ".join(cells[:12]) + (f", ... ({len(cells)} cells)" if len(cells) > 12 else "")
            lines.append(f"    not reached: {shown}: {why}")
        for what, why in self.unsent.items():
            lines.append(f"    not sent: {what}: {why}")
        return lines


def matrix_coverage(system: System, coverage: Counter[str], left_out: Iterable[str]) -> MatrixCoverage | None:
    matrix = system.matrix
    if matrix is None:
        return None
    left_out = set(left_out)
    hits = {cell: coverage[matrix.tag(*cell)] for cell in matrix.cells}
    unreached = {cell: ("its op is left out of this campaign (--ops/--skip-ops)" if cell[0] in left_out
                        else "no run sent it: more --examples, or a gap in the machine")
                 for cell, count in hits.items() if not count}
    return MatrixCoverage(matrix.requirement, hits, unreached, dict(matrix.unsent))


@dataclass(frozen=True)
class CoverageReport:
    system: str
    profile: str
    catalogue: str
    #: Requirement ID -> {tag: times reached}, for every ID that was reached.
    reached: dict[str, dict[str, int]]
    #: Catalogue IDs no step reached, in catalogue order.
    never_reached: list[str]
    #: Required tags this profile can reach (System.required_in) the campaign did not reach.
    missing_required: list[str]
    #: Tags whose ID the catalogue does not define (a typo in the model, or a stale catalogue).
    unknown: list[str]
    catalogue_size: int
    #: Why the catalogue could not be read, if it could not (then nothing is "never reached").
    catalogue_problem: str | None = None
    #: Never-reached ID -> why the machine cannot reach it in this profile (System.reasons_in).
    reasons: dict[str, str] = field(default_factory=dict)
    #: Branch tags out of this profile's reach that were not reached -> why (System.out_of_reach).
    excused_tags: dict[str, str] = field(default_factory=dict)
    #: IDs or tags declared out of this profile's reach (or out of every profile's) that a
    #: step reached: their reason is wrong.
    reached_out_of_reach: list[str] = field(default_factory=list)
    #: The system's malformation matrix as this campaign covered it (None: it has none).
    matrix: MatrixCoverage | None = None
    #: Required tags not reached -> the steps that took them and were taken back, the
    #: target having refused each (duespec.coverage.TAKEN_BACK), where there were any.
    taken_back: dict[str, int] = field(default_factory=dict)

    @property
    def unexplained(self) -> list[str]:
        """Never-reached IDs with no reason: a gap in the machine or in its reasons."""
        return [id for id in self.never_reached if id not in self.reasons]

    def to_json(self) -> dict[str, Any]:
        return {
            "system": self.system, "profile": self.profile, "catalogue": self.catalogue,
            "catalogue_ids": self.catalogue_size,
            "reached": self.reached, "never_reached": self.never_reached,
            "missing_required_tags": self.missing_required, "unknown_tags": self.unknown,
            "catalogue_problem": self.catalogue_problem,
            "never_reached_reasons": {id: self.reasons[id] for id in self.never_reached if id in self.reasons},
            "never_reached_without_reason": self.unexplained,
            "tags_out_of_reach": self.excused_tags,
            "reached_though_out_of_reach": self.reached_out_of_reach,
            "malformation_matrix": self.matrix.to_json() if self.matrix is not None else None,
            "missing_required_taken_back": self.taken_back,
        }

    def summary_line(self) -> str:
        """The report in one line: what was reached, and the count of each note."""
        covered = self.catalogue_size - len(self.never_reached)
        line = (f"spec coverage: {covered} of {self.catalogue_size} requirements of {self.catalogue} reached"
                if self.catalogue_problem is None else
                f"spec coverage: {len(self.reached)} requirements reached; catalogue unreadable")
        notes = [f"{count} {what}" for count, what in (
            (len(self.unexplained), "never reached without a reason"),
            (len(self.reached_out_of_reach), "reached although declared out of reach"),
            (len(self.missing_required), "required tags not reached" + (
                f" ({len(self.taken_back)} of them only in steps the target refused)" if self.taken_back else "")),
            (len(self.unknown), "tags the catalogue does not define")) if count]
        if notes:
            line += f"; notes, not failures of this campaign: {', '.join(notes)}"
        return line + " (--coverage for the report)"

    def render(self) -> str:
        covered = self.catalogue_size - len(self.never_reached)
        lines = [f"spec coverage: {self.system} [{self.profile}], {covered} of {self.catalogue_size} "
                 f"requirements of {self.catalogue} reached" if self.catalogue_problem is None else
                 f"spec coverage: {self.system} [{self.profile}], {len(self.reached)} requirements "
                 f"reached; catalogue unreadable ({self.catalogue_problem})"]
        matrix = self.matrix
        for requirement, tags in self.reached.items():
            if matrix is not None and requirement == matrix.requirement:
                lines.append(f"  {requirement:6} {sum(tags.values()):>9,}  the malformation matrix, below")
                continue
            branches = ", ".join(f"{tag.split('.', 1)[1] if '.' in tag else tag} {count:,}"
                                 for tag, count in tags.items())
            lines.append(f"  {requirement:6} {sum(tags.values()):>9,}  {branches}")
        for reason, ids in _grouped_by_reason({id: self.reasons[id] for id in self.never_reached
                                               if id in self.reasons}, keep_order=True).items():
            lines.append(f"  never reached: {', '.join(ids)}, by design: {reason}")
        for reason, tags in _grouped_by_reason(self.excused_tags).items():
            lines.append(f"  branches out of [{self.profile}]'s reach: {', '.join(tags)}: {reason}")
        if matrix is not None:
            lines.extend(matrix.render())
        if self.unexplained:
            lines.append("  never reached, WITHOUT A REASON: " + ", ".join(self.unexplained)
                         + " (the machine should reach them, or the system say why it cannot)")
        if self.reached_out_of_reach:
            lines.append("  reached although declared out of this profile's reach (a wrong reason): "
                         + ", ".join(self.reached_out_of_reach))
        if self.missing_required:
            lines.append(f"  required tags not reached ({REQUIRED_NOTE}): " + ", ".join(
                f"{tag} (taken {self.taken_back[tag]:,} times in a step the target refused, then taken back)"
                if tag in self.taken_back else tag for tag in self.missing_required))
        if self.unknown:
            lines.append("  tags with an ID the catalogue does not define: " + ", ".join(self.unknown))
        return "\n".join(lines)


def _grouped_by_reason(reasons: dict[str, str], keep_order: bool = False) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for key, reason in (reasons.items() if keep_order else sorted(reasons.items())):
        grouped.setdefault(reason, []).append(key)
    return grouped


def coverage_report(system: System, profile: str, coverage: Counter[str], *,
                    tags: Mapping[str, str] | None = None, left_out: Iterable[str] = (),
                    namespaced: bool = False) -> CoverageReport:
    """The report of a campaign in `profile` whose promises and schedules carried `tags`
    (--require-tag), which left out the ops `left_out` (--ops/--skip-ops), and whose
    target was never reset (`namespaced`, --reset none): what those put out of its reach
    is listed with that reason, not as a gap."""
    refused = {tag.removeprefix(TAKEN_BACK): count for tag, count in coverage.items() if tag.startswith(TAKEN_BACK)}
    coverage = Counter({tag: count for tag, count in coverage.items() if not tag.startswith(TAKEN_BACK)})
    problem = None
    try:
        ids = catalogue_ids(catalogue_text(system.catalogue))
    except OSError as error:
        ids, problem = [], f"{system.catalogue}: {error.strerror or error}"
    known = set(ids)
    for name in system.tag_catalogues:
        with suppress(OSError):  # then its tags show as unknown: a visible sign
            known.update(catalogue_ids(catalogue_text(name)))
    grouped: dict[str, dict[str, int]] = {}
    order = {requirement: index for index, requirement in enumerate(ids)}
    for tag in sorted(coverage, key=lambda t: (order.get(requirement_of(t), len(order)), t)):
        grouped.setdefault(requirement_of(tag), {})[tag] = coverage[tag]
    declared = [*system.unreached_reasons, *system.out_of_reach_in(profile, tags)]
    reasons = system.reasons_in(profile, tags)
    excused = system.excused_tags_in(profile, tags)
    missing = sorted(tag for tag in system.required_in(profile, tags) if not coverage[tag])
    never = [requirement for requirement in ids if requirement not in grouped]
    if namespaced and system.namespace is not None:
        out = system.namespace.out_of_reach
        reasons = {**reasons, **{id: why for id, why in out.items() if "." not in id and id in never}}
        excused = {**excused, **{tag: why for tag, why in out.items() if "." in tag}}
        missing = [tag for tag in missing if tag not in out and requirement_of(tag) not in out]
    left_out = sorted(left_out)
    if left_out:
        # A campaign narrowed to some ops: what only the others reach is out of its reach.
        why = (f"this campaign leaves out {len(left_out)} op{'s' if len(left_out) > 1 else ''} "
               f"({', '.join(left_out[:4])}{', ...' if len(left_out) > 4 else ''}; --ops/--skip-ops; "
               f"every rule that takes an op left out is left out too), and a campaign with every "
               f"op reaches it")
        reasons = {**reasons, **{id: why for id in never if id not in reasons}}
        excused = {**excused, **dict.fromkeys(missing, why)}
        missing = []
    if system.matrix is not None:
        # The matrix's cells are required tags, named by the matrix's own section instead.
        cells = {system.matrix.tag(*cell) for cell in system.matrix.cells}
        missing = [tag for tag in missing if tag not in cells]
        excused = {tag: why for tag, why in excused.items() if tag not in cells}
    return CoverageReport(
        system=system.name, profile=profile, catalogue=system.catalogue, reached=grouped,
        never_reached=never, missing_required=missing,
        unknown=sorted(tag for tag in coverage if requirement_of(tag) not in known) if ids else [],
        catalogue_size=len(ids), catalogue_problem=problem, reasons=reasons,
        excused_tags={tag: why for tag, why in excused.items() if not coverage[tag]},
        reached_out_of_reach=sorted(key for key in declared
                                    if (coverage[key] if "." in key else key in grouped)),
        matrix=matrix_coverage(system, coverage, left_out),
        taken_back={tag: refused[tag] for tag in missing if refused.get(tag)},
    )


def report_for(system: System, result: CampaignResult) -> CoverageReport:
    left_out = result.scope.left_out() if result.scope is not None else ()
    return coverage_report(system, result.profile, result.coverage, tags=result.request_tags,
                           left_out=left_out, namespaced=result.namespaced)


def write_json(reports: list[CoverageReport], path: str | Path) -> Path:
    return outputs.write_text(path, json.dumps([report.to_json() for report in reports], indent=2) + "\n",
                              what="--coverage-json")
