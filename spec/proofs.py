"""The shape every Z3 proof in spec/ takes, so `duespec prove` can list them all.

A proof is only trusted with its negative control: the same property checked against a
deliberately broken transition, which Z3 must refute with a counterexample. A property
that also "holds" for the broken transition proves nothing about the real one."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Outcome:
    holds: bool
    #: Z3's counterexample, rendered for people, when the property does not hold.
    counterexample: str | None = None


@dataclass(frozen=True)
class Proof:
    system: str
    #: Requirement IDs the property establishes, e.g. ("D-04",).
    requirements: tuple[str, ...]
    name: str
    check: Callable[[], Outcome]
    #: The same property over a broken transition; must be refuted.
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
        return self.outcome.holds and not self.control.holds


def decide(proof: Proof) -> Verdict:
    started = time.perf_counter()
    outcome = proof.check()
    control = proof.control()
    return Verdict(proof, outcome, control, time.perf_counter() - started)
