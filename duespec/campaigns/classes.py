"""A campaign's memory of what no longer fails it: the divergence classes it has found,
and the declared differences a found class has shown to apply.

What a class is, and how a step's difference is classified, is the judge's
(duespec.judge). A found class is masked for the rest of the search: a difference of the
same kind, op and requirement IDs at one of the paths that differed in its counterexample
no longer fails.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from duespec.judge import DivergenceClass, FindingKind


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

    def mask_of(self, kind: FindingKind, op: str, requirements: tuple[str, ...], path: str) -> str | None:
        for entry in self.active:
            if entry.matches(kind, op, requirements, path, self.profile):
                return f"declared: {entry.describe()}"
        for found in self.found:
            if found.masks(kind, op, requirements, path):
                return f"found: {found.label()}"
        return None

    def declaring(self, kind: FindingKind, op: str, requirements: tuple[str, ...], path: str) -> Any:
        for entry in self.declared:
            if entry.matches(kind, op, requirements, path, self.profile):
                return entry
        return None

    def classify(self, kind: FindingKind, op: str, requirements: tuple[str, ...],
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
