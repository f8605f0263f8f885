"""Run one differential campaign: a lockstep machine, a seed, a budget, a verdict."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.stateful import run_state_machine_as_test

from duespec.coverage import collecting
from duespec.lockstep import lockstep
from duespec.systems import System
from duespec.target import TargetFactory


@dataclass
class CampaignResult:
    system: str
    profile: str
    seed: int
    examples: int
    steps: int
    seconds: float
    coverage: Counter[str]
    failure: str | None = None
    #: The shrunk failing run, as trace steps; empty when the campaign held.
    counterexample: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.failure is None


def run_campaign(system: System, target: TargetFactory, *, profile: str | None = None,
                 seed: int = 0, examples: int = 200, step_count: int = 50,
                 oracle: TargetFactory | None = None) -> CampaignResult:
    """Drive `target` against the model (or `oracle`) until `examples` runs pass or one fails."""
    profile = profile or system.profiles[0]
    if profile not in system.profiles:
        raise ValueError(f"{system.name} has no profile {profile!r}; known: {', '.join(system.profiles)}")
    machine = lockstep(system.machine, oracle or system.model, target, system.config(profile))
    hypothesis_seed(seed)(machine)
    counted = {"examples": 0, "steps": 0}
    base_init = machine.__init__

    def counting_init(self: Any) -> None:
        base_init(self)
        counted["examples"] += 1

    machine.__init__ = counting_init  # type: ignore[method-assign]
    run_settings = settings(
        max_examples=examples, stateful_step_count=step_count, deadline=None,
        database=None, derandomize=False, print_blob=False,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
    )
    started = time.perf_counter()
    failure = None
    with collecting() as coverage:
        try:
            run_state_machine_as_test(machine, settings=run_settings)
        except Exception as error:  # the machine's verdict, reported rather than raised
            notes = "\n".join(getattr(error, "__notes__", []))
            failure = f"{type(error).__name__}: {error}" + (f"\n{notes}" if notes else "")
    seconds = time.perf_counter() - started
    return CampaignResult(
        system=system.name, profile=profile, seed=seed, examples=counted["examples"],
        steps=machine.total_steps, seconds=seconds,
        coverage=coverage, failure=failure,
        counterexample=list(machine.last_steps) if failure else [],
    )

