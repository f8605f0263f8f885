"""Declared differences: the divergences a target's maintainers know of and accept.

`duespec conform --declared FILE` reads a TOML (or JSON) file of entries (docs/declared.md):

    [[difference]]
    reason = "we require a resonate:target tag (ticket 42)"
    op = "schedule.create"          # optional: any op when absent
    requirement = "S-02"            # optional: the step must have reached this requirement
    response = "$.status"           # a path in the response, or `state = "$.schedules"`
    profile = "lean"                # optional: every profile when absent

    [inputs]
    require_tags = {"resonate:target" = "poll://any@w"}   # on every promise and schedule

A divergence class whose differing paths are all covered by entries is declared: it is
reported with its reason, does not fail the campaign and is masked for the rest of it.
The `[inputs]` table shapes what the campaign sends (as `--require-tag` does), so that a
target that requires a tag is never sent a request without it.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from duespec.judge import FindingKind
from duespec.limits import InputError, parse_json, read_file

if TYPE_CHECKING:
    from duespec.systems import System

REQUIREMENT_ID = re.compile(r"^[A-Z]{1,4}-\d{2,3}$")
PATH = re.compile(r"^\$((\.[^.\[\]]+)|\[\*?\])*$")
KEYS = {"reason", "op", "requirement", "response", "state", "profile"}
INPUT_KEYS = {"require_tags"}


class DeclaredError(ValueError):
    """The declared-differences file cannot be used; the message names file, entry and problem."""


@dataclass(frozen=True)
class Declared:
    reason: str
    #: FindingKind.RESPONSE or FindingKind.STATE.
    where: FindingKind
    path: str
    op: str | None = None
    requirement: str | None = None
    profile: str | None = None

    def matches(self, kind: FindingKind, op: str, requirements: tuple[str, ...], path: str,
                profile: str) -> bool:
        return (kind == self.where and (self.op is None or op == self.op)
                and (self.requirement is None or self.requirement in requirements)
                and (self.profile is None or profile == self.profile)
                and path == self.path)

    def describe(self) -> str:
        scope = " ".join(part for part in (
            self.where, self.op or "any op", self.path,
            f"requirement {self.requirement}" if self.requirement else "",
            f"profile {self.profile}" if self.profile else "") if part)
        return f"{scope}: {self.reason}"


@dataclass(frozen=True)
class DeclaredFile:
    entries: list[Declared]
    #: [inputs] require_tags: tags every promise and schedule the campaign sends carries.
    require_tags: dict[str, str] = field(default_factory=dict)


def load(path: str | Path, system: System) -> list[Declared]:
    """Every entry of the file, checked against the system's ops and profiles."""
    return read(path, system).entries


def read(path: str | Path, system: System) -> DeclaredFile:
    """The file's entries and its [inputs], checked against the system."""
    where = str(path)
    try:
        raw = read_file(path)
    except InputError as error:
        raise DeclaredError(f"{where}: cannot read the declared-differences file: {error.problem}") from None
    kind = "JSON" if where.endswith(".json") else "TOML"
    try:
        document: Any = parse_json(raw) if kind == "JSON" else tomllib.loads(raw.decode("utf-8"))
    except InputError as error:
        raise DeclaredError(f"{where}: not valid JSON: {error.problem}") from None
    except (UnicodeDecodeError, ValueError) as error:  # TOMLDecodeError is a ValueError
        raise DeclaredError(f"{where}: not valid {kind}: {error}") from None
    except RecursionError:
        raise DeclaredError(f"{where}: not valid {kind}: nested too deeply") from None
    if not isinstance(document, dict) or set(document) - {"difference", "inputs"}:
        raise DeclaredError(f'{where}: expected only a list of entries under "difference" '
                            f'([[difference]] in TOML) and an "inputs" table, got keys '
                            f'{sorted(document) if isinstance(document, dict) else document!r}')
    entries = document.get("difference", [])
    if not isinstance(entries, list):
        raise DeclaredError(f'{where}: "difference" must be a list of entries')
    return DeclaredFile([_entry(where, index, entry, system) for index, entry in enumerate(entries, 1)],
                        _inputs(where, document.get("inputs", {}), system))


def _inputs(where: str, inputs: Any, system: System) -> dict[str, str]:
    if not isinstance(inputs, dict):
        raise DeclaredError(f"{where}: [inputs] must be a table (require_tags = {{...}})")
    unknown = set(inputs) - INPUT_KEYS
    if unknown:
        raise DeclaredError(f"{where}: [inputs]: unknown key(s) {', '.join(sorted(unknown))}; "
                            f"known: {', '.join(sorted(INPUT_KEYS))}")
    tags = inputs.get("require_tags", {})
    if not isinstance(tags, dict) or not all(isinstance(k, str) and k and isinstance(v, str)
                                             for k, v in tags.items()):
        raise DeclaredError(f'{where}: [inputs] require_tags must be a table of tag names to string '
                            f'values, e.g. require_tags = {{"resonate:target" = "poll://any@w"}}; got {tags!r}')
    if tags and system.tag_request is None:
        raise DeclaredError(f"{where}: [inputs] require_tags: {system.name}'s requests carry no tags")
    return dict(tags)


def _entry(where: str, index: int, entry: Any, system: System) -> Declared:
    def fail(problem: str) -> DeclaredError:
        return DeclaredError(f"{where}: difference {index}: {problem}")

    if not isinstance(entry, dict):
        raise fail("must be a table of keys (reason, op, requirement, response or state, profile)")
    unknown = set(entry) - KEYS
    if unknown:
        raise fail(f"unknown key(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(KEYS))}")
    reason = entry.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise fail('needs a "reason": a non-empty string saying why the difference is accepted')
    places = [key for key in (FindingKind.RESPONSE, FindingKind.STATE) if key in entry]
    if len(places) != 1:
        raise fail('needs exactly one of "response" or "state": the JSON path that may differ, '
                   'e.g. response = "$.status" or state = "$.schedules[].nextRunAt"')
    path = entry[places[0]]
    if not isinstance(path, str) or not PATH.match(path):
        raise fail(f"{places[0]} path {path!r} is not a path like $, $.status or $.open[].due_at")
    path = path.replace("[*]", "[]")  # any element of a list, as differing paths are written
    op, requirement, profile = entry.get("op"), entry.get("requirement"), entry.get("profile")
    if op is not None and op not in system.nameable_ops:
        raise fail(f"{system.name} has no op {op!r}; known: {', '.join(system.nameable_ops)}")
    if requirement is not None and (not isinstance(requirement, str) or not REQUIREMENT_ID.match(requirement)):
        raise fail(f"requirement {requirement!r} is not a requirement ID like D-09 or S-02")
    if profile is not None and profile not in system.profiles:
        raise fail(f"{system.name} has no profile {profile!r}; known: {', '.join(system.profiles)}")
    return Declared(reason=reason.strip(), where=places[0], path=path, op=op,
                    requirement=requirement, profile=profile)
