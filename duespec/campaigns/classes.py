"""A campaign's memory of what no longer fails it: the divergence classes it has found,
and the declared differences a found class has shown to apply.

What a class is, and how a step's difference is classified, is the judge's
(duespec.judge). A found class is masked for the rest of the search: a difference of the
same kind and op at one of the paths that differed in its counterexample (or below one)
no longer fails. A declared class is masked by its declarations instead, which name
exact paths: whatever else differs is still judged.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from duespec.judge import DECLARED, FOUND, DivergenceClass, FindingKind


def request_key(op: str, args: Any) -> str:
    """A request as a key: its op and arguments (not its `now`); any JSON at all (a
    malformed request's op may be a number, its keys of mixed types)."""
    try:
        return json.dumps([op, args], sort_keys=True, default=repr)
    except (TypeError, ValueError):
        return repr((op, args))


@dataclass
class Masks:
    """What no longer fails a campaign: classes already found, and the declared entries
    that a found class has shown to apply. Counts what each one kept from being compared."""

    profile: str
    #: Every declared entry; a class all of whose paths they name is a declared class.
    declared: list[Any] = field(default_factory=list)
    #: Declared entries a found class matched: masked from then on, exactly their paths.
    active: list[Any] = field(default_factory=list)
    #: Every class found, in order.
    found: list[DivergenceClass] = field(default_factory=list)
    #: Found classes that are not declared: masked from then on, their paths and below.
    undeclared: list[DivergenceClass] = field(default_factory=list)
    #: label of what masked it -> steps where a difference there was not compared.
    skipped: Counter[str] = field(default_factory=Counter)
    #: label -> runs that ended early there (a found class's state difference, a masked
    #: target failure, an op left out of the campaign).
    runs_ended: Counter[str] = field(default_factory=Counter)
    #: found class -> every set of requirement IDs its difference showed with.
    requirement_sets: dict[DivergenceClass, set[tuple[str, ...]]] = field(default_factory=dict)
    #: Requests (op and arguments, as JSON) the target already failed to answer within
    #: --timeout, under a `target too slow` class found: label of that class. Not sent
    #: again: a run that makes one ends there, as it would after waiting the timeout out.
    slow_requests: dict[str, str] = field(default_factory=dict)

    def note_slow(self, op: str, args: Any, label: str) -> None:
        self.slow_requests[request_key(op, args)] = label

    def known_slow(self, op: str, args: Any) -> str | None:
        """The found too-slow class this very request already showed, or None."""
        return self.slow_requests.get(request_key(op, args)) if self.slow_requests else None

    def mask_of(self, kind: FindingKind, op: str, requirements: tuple[str, ...], path: str) -> str | None:
        for entry in self.active:
            if entry.matches(kind, op, requirements, path, self.profile):
                return DECLARED + entry.describe()
        for found in self.undeclared:
            if found.masks(kind, op, path):
                self.requirement_sets.setdefault(found, set()).add(requirements)
                return FOUND + found.label()
        return None

    def declaring(self, kind: FindingKind, op: str, requirements: tuple[str, ...], path: str) -> Any:
        for entry in self.declared:
            if entry.matches(kind, op, requirements, path, self.profile):
                return entry
        return None

    def classify(self, kind: FindingKind, op: str, requirements: tuple[str, ...],
                 paths: list[str]) -> tuple[DivergenceClass | None, list[str]]:
        """The class of a difference at `paths` (None when every path is masked), and the
        labels of the masks that covered the others (each once)."""
        masked, open_paths = [], []
        for path in paths:
            mask = self.mask_of(kind, op, requirements, path)
            if mask is None:
                open_paths.append(path)
            else:
                masked.append(mask)
        if not open_paths:
            return None, list(dict.fromkeys(masked))
        undeclared = [p for p in open_paths if self.declaring(kind, op, requirements, p) is None]
        first = (undeclared or open_paths)[0]
        return DivergenceClass(kind, op, requirements, first, tuple(open_paths)), list(dict.fromkeys(masked))

    def add(self, found: DivergenceClass) -> list[Any]:
        """Mask a found class; return the declared entries that name all its paths (empty
        when it is not declared), which are masked from now on instead of the class: a
        declared class masks exactly what its declarations name."""
        self.found.append(found)
        self.requirement_sets.setdefault(found, set()).add(found.requirements)
        entries = [self.declaring(found.kind, found.op, found.requirements, p) for p in found.paths or (found.path,)]
        if any(entry is None for entry in entries):
            self.undeclared.append(found)
            return []
        declared = list(dict.fromkeys(entries))
        self.active.extend(e for e in declared if e not in self.active)
        return declared

    def requirement_sets_of(self, found: DivergenceClass) -> list[tuple[str, ...]]:
        """Every set of requirement IDs the class showed with, its own first."""
        seen = self.requirement_sets.get(found, set()) - {found.requirements}
        return [found.requirements, *sorted(seen)]
