"""Declared differences: the divergences a target's maintainers know of and accept.

`duespec conform --declared FILE` reads a TOML (or JSON) file of entries (docs/declared.md):

    [[difference]]
    reason = "we require a resonate:target tag (ticket 42)"
    op = "schedule.create"          # optional: any op when absent
    requirement = "S-02"            # optional: the step must have reached this requirement
    branch = "S-02.exists"          # optional: the model's step must have taken this branch
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

from duespec.judge import FindingKind, requirements_of
from duespec.limits import InputError, parse_json, read_file

if TYPE_CHECKING:
    from duespec.systems import System

REQUIREMENT_ID = re.compile(r"^[A-Z]{1,4}-\d{2,3}$")
#: A branch of the model a step may take, as its coverage tags name it: "TO-01.early".
BRANCH = re.compile(r"^[A-Z]{1,4}-\d{2,3}\.[a-z0-9_]+$")
PATH = re.compile(r"^\$((\.[^.\[\]]+)|\[\*?\])*$")
KEYS = {"reason", "op", "requirement", "branch", "response", "state", "messages", "profile", "unordered",
        "order_within"}
#: Where a declared difference may be: a step's answer, the state after it, what it sent.
PLACES = (FindingKind.RESPONSE, FindingKind.STATE, FindingKind.MESSAGES)
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
    #: A branch the model's step took (one of its coverage tags, "TO-01.early"): the entry
    #: speaks of that branch only, so the requirement's other branches are still compared.
    branch: str | None = None
    #: The list at `path` is compared as a multiset (the same elements, each as often, in
    #: any order), not masked: whatever its elements hold is still compared.
    unordered: bool = False
    #: With `unordered`: elements with the same value at this key keep their order.
    order_within: str | None = None

    def applies(self, kind: FindingKind, op: str, cause: tuple[str, ...], profile: str) -> bool:
        """Whether the entry speaks of this step (its kind, op, requirement, branch and
        profile); `cause` is the step's cause (judge.cause_of: the model's branches)."""
        return (kind == self.where and (self.op is None or op == self.op)
                and (self.requirement is None or self.requirement in requirements_of(cause))
                and (self.branch is None or self.branch in cause)
                and (self.profile is None or profile == self.profile))

    def matches(self, kind: FindingKind, op: str, cause: tuple[str, ...], path: str, profile: str) -> bool:
        """Whether the entry masks this differing path (an `unordered` one masks none)."""
        return not self.unordered and path == self.path and self.applies(kind, op, cause, profile)

    def describe(self) -> str:
        order = ""
        if self.unordered:
            order = "in any order" + (f" but by {self.order_within}" if self.order_within else "")
        scope = " ".join(part for part in (
            self.where, self.op or "any op", self.path, order,
            f"requirement {self.requirement}" if self.requirement else "",
            f"branch {self.branch}" if self.branch else "",
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
    places = [key for key in PLACES if key in entry]
    if len(places) != 1:
        raise fail('needs exactly one of "response", "state" or "messages": the JSON path that may differ, '
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
    branch = entry.get("branch")
    if branch is not None and (not isinstance(branch, str) or not BRANCH.match(branch)):
        raise fail(f"branch {branch!r} is not a branch of the model like TO-01.early (a coverage tag)")
    if branch is not None and requirement is not None and not branch.startswith(requirement + "."):
        raise fail(f"branch {branch} is not a branch of requirement {requirement}")
    if profile is not None and profile not in system.profiles:
        raise fail(f"{system.name} has no profile {profile!r}; known: {', '.join(system.profiles)}")
    unordered, order_within = entry.get("unordered", False), entry.get("order_within")
    if type(unordered) is not bool:
        raise fail(f"unordered must be true or false, got {unordered!r}")
    if order_within is not None and not unordered:
        raise fail("order_within needs unordered = true: it says which elements of an unordered list keep their order")
    if order_within is not None and (not isinstance(order_within, str) or not order_within):
        raise fail(f"order_within must name a key of the list's elements, e.g. \"kind\"; got {order_within!r}")
    return Declared(reason=reason.strip(), where=places[0], path=path, op=op, requirement=requirement,
                    profile=profile, branch=branch, unordered=unordered, order_within=order_within)


def in_declared_order(entries: list[Declared], expected: Any, actual: Any) -> tuple[Any, list[Declared]]:
    """`actual` with each list an `unordered` entry names put in `expected`'s order, where
    the two hold the same elements (and, with order_within, the elements sharing a value
    at that key come in the same order); the entries that reordered something. A list
    that holds other elements is left as it is, to be compared and reported."""
    used = []
    for entry in entries:
        reordered = _reorder(_segments(entry.path), expected, actual, entry.order_within)
        if reordered is not actual:
            actual = reordered
            used.append(entry)
    return actual, used


def _segments(path: str) -> list[str]:
    """"$.a[].b" -> [".a", "[]", ".b"]."""
    return re.findall(r"\.[^.\[\]]+|\[\]", path[1:])


def _reorder(segments: list[str], expected: Any, actual: Any, order_within: str | None) -> Any:
    if not segments:
        if (type(expected) is list and type(actual) is list and expected != actual
                and _same_elements(expected, actual, order_within)):
            return list(expected)
        return actual
    head, rest = segments[0], segments[1:]
    if head == "[]":
        if type(expected) is not list or type(actual) is not list or len(expected) != len(actual):
            return actual
        inner = [_reorder(rest, e, a, order_within) for e, a in zip(expected, actual)]
        return inner if any(new is not old for new, old in zip(inner, actual)) else actual
    key = head[1:]
    if type(expected) is not dict or type(actual) is not dict or key not in expected or key not in actual:
        return actual
    inner = _reorder(rest, expected[key], actual[key], order_within)
    return actual if inner is actual[key] else {**actual, key: inner}


def _same_elements(expected: list[Any], actual: list[Any], order_within: str | None) -> bool:
    """The same elements, each as often (strict JSON: 1, 1.0 and true differ); with
    order_within, also in the same order among the elements with one value at that key."""
    def text(value: Any) -> str:
        return json.dumps(value, sort_keys=True)

    if sorted(map(text, expected)) != sorted(map(text, actual)):
        return False
    if order_within is None:
        return True

    def by_key(items: list[Any]) -> dict[str, list[str]]:
        groups: dict[str, list[str]] = {}
        for item in items:
            group = text(item.get(order_within)) if type(item) is dict else ""
            groups.setdefault(group, []).append(text(item))
        return groups

    return by_key(expected) == by_key(actual)
