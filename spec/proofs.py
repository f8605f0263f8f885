"""The shape every Z3 proof in spec/ takes, so `duespec prove` can list them all.

A proof is only trusted with its negative control: a deliberately broken transition that
must break the proof's own goal. Any failing proof step is not enough (a broken
transition also breaks a shared invariant, which says nothing about this goal): the
control counts as refuted only when Z3 produces a concrete run of the broken transition
that ends with the goal false, and that run, judged outside Z3 by the goal restated in
Python and replayed through the reference model, is confirmed to break the goal while the
model's own run of the same inputs keeps it. A goal that also "holds" for the broken
transition proves nothing about the real one."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Outcome:
    holds: bool
    #: Z3's counterexample, rendered for people, when the property does not hold; for a
    #: control, its first line sums up the concrete run.
    counterexample: str | None = None
    #: For a refuted control: the goal its concrete run was confirmed to break.
    breaks: str | None = None


@dataclass(frozen=True)
class Proof:
    system: str
    #: Requirement IDs the property establishes, e.g. ("D-04",).
    requirements: tuple[str, ...]
    name: str
    check: Callable[[], Outcome]
    #: The goal the control must break: the property's own conclusion, by name.
    goal: str
    #: A broken transition searched for a concrete run that breaks `goal`; must be refuted.
    control: Callable[[], Outcome]
    control_name: str


@dataclass(frozen=True)
class Verdict:
    proof: Proof
    outcome: Outcome
    control: Outcome
    seconds: float

    @property
    def proved(self) -> bool:
        return self.outcome.holds and self.control_refuted

    @property
    def control_refuted(self) -> bool:
        """Refuted on the proof's own goal, not on some other failing step."""
        return not self.control.holds and self.control.breaks == self.proof.goal


def decide(proof: Proof) -> Verdict:
    started = time.perf_counter()
    outcome = proof.check()
    control = proof.control()
    return Verdict(proof, outcome, control, time.perf_counter() - started)
