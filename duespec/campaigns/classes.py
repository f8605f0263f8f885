"""A campaign's memory of what no longer fails it: the divergence classes it has found,
and the declared differences a found class has shown to apply.

What a class is, and how a step's difference is classified, is the judge's
(duespec.judge). A found class is masked for the rest of the search: a difference of the
same kind, op and cause at one of the paths that differed in its counterexample (or below
one) no longer fails; the same path reached through another branch of the model still
does. A declared class is masked by its declarations instead, which name exact paths:
whatever else differs is still judged. A baseline's classes (--baseline, classes known
before the campaign) are masked as found ones are, from the first step.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from duespec.campaigns.declared import in_declared_order
from duespec.judge import DECLARED, FOUND, KNOWN, REFUSED, STATUS, DivergenceClass, FindingKind, requirements_of


class RunPrefix:
    """A digest of a run so far: its config and every step's op, arguments and `now`. The
    target is deterministic (the reset-leak check holds it to that), so the same prefix
    makes the same call, as slow as it was."""

    def __init__(self, config: Any) -> None:
        self.digest = hashlib.sha256(_json_bytes(config))
        self.taken = 0

    def key(self, steps: list[Any], op: Any, args: Any, now: Any) -> str:
        """The key of the request (op, args, now) made after `steps` (this run's, of which
        the first `taken` are in the digest already)."""
        for step in steps[self.taken:]:
            self.digest.update(_json_bytes([step["op"], step["args"], step["now"]]))
        self.taken = len(steps)
        ending = self.digest.copy()
        ending.update(_json_bytes([op, args, now]))
        return ending.hexdigest()


def _json_bytes(value: Any) -> bytes:
    """Any value as bytes, alike for equal JSON (a malformed request's op may be a number,
    its keys of mixed types)."""
    try:
        text = json.dumps(value, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        text = repr(value)
    return text.encode("utf-8", "surrogatepass") + b"\n"


def slow_key(config: Any, steps: list[Any]) -> str:
    """The key of a run's last step, as RunPrefix makes it."""
    last = steps[-1]
    return RunPrefix(config).key(steps[:-1], last["op"], last["args"], last["now"])


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
    #: A baseline's classes (--baseline): masked from the first step, as found ones are.
    known: list[DivergenceClass] = field(default_factory=list)
    #: Known class -> its witness as the report holds it (duespec.campaigns.baseline: the run
    #: that showed it, with the target's answers); carried into the report, the refreshed baseline.
    witnesses: dict[DivergenceClass, dict[str, Any]] = field(default_factory=dict)
    #: Known classes whose witness the target replayed as recorded (baseline.recheck).
    rechecked: int = 0
    #: Requests the spec refuses that were not sent (--inputs valid).
    not_sent: int = 0
    #: label of what masked it -> steps where a difference there was not compared.
    skipped: Counter[str] = field(default_factory=Counter)
    #: label -> runs that ended early there (a found class's state difference, a masked
    #: target failure, an op left out of the campaign).
    runs_ended: Counter[str] = field(default_factory=Counter)
    #: Requests the target already failed to answer within --timeout, under a `target
    #: too slow` class found, each keyed by its run so far (RunPrefix: config, every
    #: earlier step, this one's op, arguments and now) -> that class's label. Not sent
    #: again: a run that makes one ends there, as it would after waiting the timeout out.
    slow_requests: dict[str, str] = field(default_factory=dict)

    def mask_of(self, kind: FindingKind, op: str, cause: tuple[str, ...], path: str,
                status_differs: bool | None = None) -> str | None:
        for entry in self.active:
            if entry.matches(kind, op, cause, path, self.profile):
                return DECLARED + entry.describe()
        for found in self.undeclared:
            if found.masks(kind, op, path, cause, status_differs):
                return FOUND + found.label()
        for known in self.known:
            if known.masks(kind, op, path, cause, status_differs):
                return KNOWN + known.label()
        return None

    def masks_op(self, op: str) -> bool:
        return any(entry.op == op for entry in (*self.found, *self.known, *self.declared))

    def refusal_masked(self, op: str, cause: tuple[str, ...]) -> bool:
        return REFUSED in cause and any(c.op == op and c.cause == cause for c in (*self.found, *self.known))

    def in_declared_order(self, kind: FindingKind, op: str, cause: tuple[str, ...],
                          expected: Any, actual: Any) -> tuple[Any, list[str]]:
        """`actual` with every list an `unordered` declaration of this step names in the
        expected order, where it holds the same elements (duespec.campaigns.declared); the
        labels of the declarations that reordered one."""
        entries = [entry for entry in self.declared
                   if getattr(entry, "unordered", False) and entry.applies(kind, op, cause, self.profile)]
        if not entries:
            return actual, []
        actual, used = in_declared_order(entries, expected, actual)
        return actual, [DECLARED + entry.describe() for entry in used]

    def declaring(self, kind: FindingKind, op: str, cause: tuple[str, ...], path: str) -> Any:
        for entry in self.declared:
            if entry.matches(kind, op, cause, path, self.profile):
                return entry
        return None

    def classify(self, kind: FindingKind, op: str, cause: tuple[str, ...],
                 paths: list[str]) -> tuple[DivergenceClass | None, list[str]]:
        """The class of a difference at `paths` with this cause (None when every path is
        masked), and the labels of the masks that covered the others (each once)."""
        masked, open_paths = [], []
        status_differs = kind == FindingKind.RESPONSE and STATUS in paths
        for path in paths:
            mask = self.mask_of(kind, op, cause, path, status_differs)
            if mask is None:
                open_paths.append(path)
            else:
                masked.append(mask)
        if not open_paths:
            return None, list(dict.fromkeys(masked))
        requirements = requirements_of(cause)
        undeclared = [p for p in open_paths if self.declaring(kind, op, cause, p) is None]
        first = (undeclared or open_paths)[0]
        # a status masked here still differed: the class is one of another outcome
        kept = (*open_paths, STATUS) if status_differs and STATUS not in open_paths else tuple(open_paths)
        return DivergenceClass(kind, op, requirements, first, kept, cause), list(dict.fromkeys(masked))

    def declarations_of(self, found: DivergenceClass) -> list[Any] | None:
        """The declared entries that name every path of a class, or None when one is named by none."""
        entries = [self.declaring(found.kind, found.op, found.cause, p) for p in found.paths or (found.path,)]
        return None if any(entry is None for entry in entries) else list(dict.fromkeys(entries))

    def add(self, found: DivergenceClass) -> list[Any]:
        """Mask a found class; return the declared entries that name all its paths (empty
        when it is not declared), which are masked from now on instead of the class: a
        declared class masks exactly what its declarations name."""
        self.found.append(found)
        declared = self.declarations_of(found)
        if declared is None:
            self.undeclared.append(found)
            return []
        self.active.extend(e for e in declared if e not in self.active)
        return declared
