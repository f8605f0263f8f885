"""Divergence classes: what makes two failures of a target "the same difference".

A campaign reports each class once, with its own shrunk counterexample. A class is

    (kind, op, requirement IDs, path)

- kind: `response` (the step's answer differs), `state` (the whole observable state after
  the step differs), `target raised` (the target raised or could not answer at all) or
  `state survives reset` (the target answers the same steps differently after a reset);
- op: the operation of the step where it showed;
- requirement IDs: the spec/*.md requirements whose branches the model took in that step
  (from its coverage tags, e.g. D-09.expired -> D-09), sorted;
- path: the first differing JSON path, list indices written `[]` so that the same field
  of any element is one path (`$.status`, `$.ok[].expires_at`, `$.schedules[].nextRunAt`);
  a list of another length, a missing or an extra key is the path of the list or key.

A `target raised` class is where the target raised rather than where the model was: the
exception's type and the innermost frame of the target's code (`ZeroDivisionError at
book.py:56`; just the type for a program that died or a call past its deadline). Its op
and requirement IDs are those of the first step found raising there, and do not tell
classes apart: one raise site in the target is one bug, whichever op reached it.

A found class is masked for the rest of the search: a difference of the same kind, op and
requirement IDs at one of the paths that differed in its counterexample no longer fails.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from duespec.targets.interface import Json, same_json

RESPONSE, STATE, TARGET_RAISED, STATE_SURVIVES_RESET = (
    "response", "state", "target raised", "state survives reset")


def requirement_of(tag: str) -> str:
    """"D-09.not_due" -> "D-09"."""
    return tag.split(".", 1)[0]


def requirements_of(tags: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted({requirement_of(tag) for tag in tags}))


@dataclass(frozen=True)
class DivergenceClass:
    kind: str
    op: str
    requirements: tuple[str, ...]
    path: str
    #: Every path that differed at the class's step (masking covers them all).
    paths: tuple[str, ...] = field(default=(), compare=False)

    def label(self) -> str:
        requirements = ", ".join(self.requirements) or "no requirement reached"
        return f"{self.kind} {self.op} {self.path} [{requirements}]"

    def masks(self, kind: str, op: str, requirements: tuple[str, ...], path: str) -> bool:
        if kind == TARGET_RAISED:
            return self.kind == TARGET_RAISED and path == self.path
        return (kind == self.kind and op == self.op and requirements == self.requirements
                and any(covers(mine, path) for mine in self.paths or (self.path,)))

    def to_json(self) -> dict[str, Json]:
        return {"kind": self.kind, "op": self.op, "requirements": list(self.requirements),
                "path": self.path}


def covers(pattern: str, path: str) -> bool:
    """`$.schedules` covers `$.schedules[].nextRunAt`; `$` covers everything."""
    return (path == pattern or pattern == "$"
            or (path.startswith(pattern) and path[len(pattern)] in ".["))


def differing_paths(expected: Json, actual: Json, path: str = "$") -> list[str]:
    """Every place where two JSON values differ, indices normalised to `[]`, in order."""
    found: list[str] = []
    _collect(expected, actual, path, found)
    return list(dict.fromkeys(found))


def _collect(expected: Json, actual: Json, path: str, found: list[str]) -> None:
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(set(expected) | set(actual), key=str):
            sub = f"{path}.{key}"
            if key in expected and key in actual:
                _collect(expected[key], actual[key], sub, found)
            else:
                found.append(sub)
    elif isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        for e, a in zip(expected, actual):
            _collect(e, a, f"{path}[]", found)
    elif not same_json(expected, actual):
        found.append(path)


@dataclass
class Masks:
    """What no longer fails a campaign: classes already found, and the declared entries
    that a found class has shown to apply. Counts what each one kept from being compared."""

    profile: str
    #: Every declared entry; a class all of whose paths they cover is a declared class.
    declared: list[Any] = field(default_factory=list)
    #: Declared entries a found class matched: masked from then on, whatever op or path.
    active: list[Any] = field(default_factory=list)
    found: list[DivergenceClass] = field(default_factory=list)
    #: label of what masked it -> steps where a difference there was not compared.
    skipped: Counter[str] = field(default_factory=Counter)
    #: label -> runs that ended at a masked state difference (or a masked target failure).
    runs_ended: Counter[str] = field(default_factory=Counter)

    def mask_of(self, kind: str, op: str, requirements: tuple[str, ...], path: str) -> str | None:
        for entry in self.active:
            if entry.matches(kind, op, requirements, path, self.profile):
                return f"declared: {entry.describe()}"
        for found in self.found:
            if found.masks(kind, op, requirements, path):
                return f"found: {found.label()}"
        return None

    def declaring(self, kind: str, op: str, requirements: tuple[str, ...], path: str) -> Any:
        for entry in self.declared:
            if entry.matches(kind, op, requirements, path, self.profile):
                return entry
        return None

    def classify(self, kind: str, op: str, requirements: tuple[str, ...],
                 paths: list[str]) -> tuple[DivergenceClass | None, list[str]]:
        """The class of a difference at `paths` (None when every path is masked), and the
        labels of the masks that covered the others."""
        masked, open_paths = [], []
        for path in paths:
            mask = self.mask_of(kind, op, requirements, path)
            if mask is None:
                open_paths.append(path)
            else:
                masked.append(mask)
        if not open_paths:
            return None, masked
        undeclared = [p for p in open_paths if self.declaring(kind, op, requirements, p) is None]
        first = (undeclared or open_paths)[0]
        return DivergenceClass(kind, op, requirements, first, tuple(open_paths)), masked

    def add(self, found: DivergenceClass) -> list[Any]:
        """Mask a found class; return the declared entries that cover all its paths (empty
        when it is not declared), which are masked too from now on."""
        self.found.append(found)
        entries = [self.declaring(found.kind, found.op, found.requirements, p) for p in found.paths or (found.path,)]
        if any(entry is None for entry in entries):
            return []
        declared = list(dict.fromkeys(entries))
        self.active.extend(e for e in declared if e not in self.active)
        return declared
