"""`conform --long-run N`: one long lockstep run against any target, where a Hypothesis
run (50 steps) never goes: thousands of steps, a large book that fills, churns and drains.

A seeded random workload of mostly successful calls drives the model and the target side
by side; every response is compared, the whole state every STATE_EVERY steps and at the
end (the workload reads the model's state as of the last comparison). A divergence becomes an ordinary failed CampaignResult whose counterexample is every
step up to it, so conform writes the trace and prints the replay command as for any
campaign. Each system brings its workload (System.long_run); duebook's is the project's own
long run (tests/test_duebook_long_run.py), made available to every target."""

from __future__ import annotations

import random
import time

from duespec.campaigns.classes import TARGET_RAISED, DivergenceClass, differing_paths
from duespec.campaigns.lockstep import Divergence, exception_details
from duespec.campaigns.run import DIVERGENCE, TARGET_ERROR, CampaignResult, Finding
from duespec.coverage import collecting
from duespec.systems import System
from duespec.targets.interface import Json, TargetError, TargetFactory, comparable, responses_agree, same_json

#: Steps between whole-state comparisons (every response is compared at every step).
STATE_EVERY = 250

def run_long(system: System, target: TargetFactory, *, steps: int, profile: str | None = None,
             seed: int = 0) -> CampaignResult:
    """One run of `steps` steps; the verdict as a CampaignResult (one example)."""
    profile = profile or system.profiles[0]
    workload, configure = system.long_run.call, system.long_run.config
    config = configure(system.config(profile))
    rng = random.Random(seed)
    oracle, actual = system.model(), target()
    taken: list[dict[str, Json]] = []
    failure = kind = None
    finding: Finding | None = None
    started = time.perf_counter()
    with collecting() as coverage:
        try:
            oracle.reset(dict(config))
            actual.reset(dict(config))
            state, now = oracle.observe(), system.long_run.start_now
            for i in range(steps):
                op, args, now = workload(rng, state, now)
                expected = oracle.step(op, args, now)
                step = {"i": i, "op": op, "args": args, "now": now, "result": expected}
                taken.append(step)
                answer = actual.step(op, args, now)
                if not responses_agree(expected, answer):
                    raise Divergence(step, "response", comparable(expected), comparable(answer))
                if (i + 1) % STATE_EVERY == 0 or i == steps - 1:
                    state, observed = oracle.observe(), actual.observe()
                    if not same_json(state, observed):
                        raise Divergence(step, "state", state, observed)
        except (Divergence, TargetError) as error:
            failure = f"{type(error).__name__}: {error}"
            op = taken[-1]["op"] if taken else "reset"
            if isinstance(error, Divergence):
                kind, paths = DIVERGENCE, differing_paths(error.expected, error.actual) or ["$"]
                found = DivergenceClass(error.kind, op, (), paths[0], tuple(paths))
            else:
                kind, site = TARGET_ERROR, exception_details(error)[3]
                found = DivergenceClass(TARGET_RAISED, op, (), site, (site,))
            finding = Finding(kind, found, failure, failure, list(taken), config=config)
        finally:
            oracle.close()
            actual.close()
    return CampaignResult(
        system=system.name, profile=profile, seed=seed, examples=1, steps=len(taken),
        seconds=time.perf_counter() - started, coverage=coverage, failure=failure,
        counterexample=taken if failure else [], config=config, failure_kind=kind,
        failure_summary=failure, findings=[finding] if failure else [])
