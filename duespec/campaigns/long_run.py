"""`conform --long-run N`: one long lockstep run against any target, where a Hypothesis
run (50 steps) never goes: thousands of steps, a large book that fills, churns and drains.

A seeded random workload of mostly successful calls drives the model and the target side
by side, every step judged as a campaign's (duespec.judge): every response, the whole
state every STATE_EVERY steps and at the end (the workload reads the model's state as of
the last comparison). A difference is classified as a campaign's failure is (the same
class, requirement IDs and reset-leak check), and becomes an ordinary failed
CampaignResult whose counterexample is every step up to it, so conform writes the trace
and prints the replay command as for any campaign. The workload per system is below; duebook's is the project's own long run
(tests/test_duebook_long_run.py), made available to every target."""

from __future__ import annotations

import random
import time
from typing import Any, Callable

from duespec.campaigns.run import CampaignResult, finding_of
from duespec.coverage import collecting
from duespec.systems import System
from duespec.judge import Difference, Divergence, StepJudge, TargetRaised, Verdict
from duespec.targets.interface import Json, TargetFactory, close_quietly

#: Steps between whole-state comparisons (every response is compared at every step).
STATE_EVERY = 250

Workload = Callable[[random.Random, dict[str, Json], int], tuple[str, dict[str, Json], int]]

DUEBOOK_OWNERS = ("alice", "bob", "carol")
#: Large enough to hold more than one index run of the implementation (1024 rows).
DUEBOOK_CONFIG = {"max_open": 1500}


def duebook_call(rng: random.Random, state: dict[str, Json], now: int) -> tuple[str, dict[str, Json], int]:
    """Mostly calls that succeed, so the book fills, churns and drains."""
    now += rng.choice((0, 0, 1, 3, 17))
    known = rng.randrange(1, state["next_id"] + 1)
    pick = rng.random()
    if pick < 0.45:
        return "schedule", {"owner": rng.choice(DUEBOOK_OWNERS), "delay": rng.randrange(0, 400),
                            "ttl": rng.choice((0, rng.randrange(1, 600)))}, now
    if pick < 0.65:
        return "claim", {"id": known}, now
    if pick < 0.75:
        return "cancel", {"id": known, "caller": rng.choice(DUEBOOK_OWNERS)}, now
    if pick < 0.85:
        return "expire", {"id": known}, now
    if pick < 0.92:
        return "get", {"id": known}, now
    return rng.choice(("claimable", "expirable")), {"limit": rng.choice((1, 10, 5000))}, now


#: Hourly at most: with the clock moving up to an hour a step, promises grow by a few a step.
SCHEDULE_CRONS = ("0 * * * *", "0 0 * * *", "30 9 * * mon-fri", "0 0 29 2 *", "@daily", "15 */6 * * *")
MINUTE = 60_000


def schedules_call(rng: random.Random, state: dict[str, Json], now: int) -> tuple[str, dict[str, Json], int]:
    """Schedules come and go, promises are created and read, the clock runs forward by
    minutes to hours and the environment ticks; the number of schedules stays small so
    that catch-up work per step stays bounded."""
    now += rng.choice((0, 1, 999, MINUTE, 7 * MINUTE, 60 * MINUTE))
    pick = rng.random()
    schedule_id = f"s{rng.randrange(6)}"
    if pick < 0.15:
        return "schedule.create", {
            "id": schedule_id, "cron": rng.choice(SCHEDULE_CRONS), "promiseId": "{{.id}}.{{.timestamp}}",
            "promiseTimeout": rng.choice((0, MINUTE, 60 * MINUTE)),
            "promiseParam": {"headers": {}, "data": None},
            "promiseTags": rng.choice(({}, {"resonate:target": "poll://any@workers"}))}, now
    if pick < 0.22:
        return "schedule.delete", {"id": schedule_id}, now
    if pick < 0.32:
        return "schedule.get", {"id": schedule_id}, now
    if pick < 0.45:
        return "promise.create", {"id": f"p{rng.randrange(50)}", "timeoutAt": now + rng.choice((0, MINUTE, 3600_000)),
                                  "param": {"headers": {}, "data": None}, "tags": {}}, now
    if pick < 0.6:
        promises = state["promises"]
        promise_id = rng.choice(promises)["id"] if promises else "p0"
        return "promise.get", {"id": promise_id}, now
    return "tick", {}, now


WORKLOADS: dict[str, tuple[Workload, Callable[[dict[str, Any]], dict[str, Any]]]] = {
    "duebook": (duebook_call, lambda config: {**config, **DUEBOOK_CONFIG}),
    "schedules": (schedules_call, lambda config: config),
}


def run_long(system: System, target: TargetFactory, *, steps: int, profile: str | None = None,
             seed: int = 0) -> CampaignResult:
    """One run of `steps` steps; the verdict as a CampaignResult (one example)."""
    profile = profile or system.profiles[0]
    workload, configure = WORKLOADS[system.name]
    config = configure(system.config(profile))
    rng = random.Random(seed)
    oracle, actual = system.model(), target()
    verdict: Verdict = None
    started = time.perf_counter()
    with collecting() as coverage, collecting() as step_tags:
        judge = StepJudge(oracle, actual, tags=step_tags)
        try:
            verdict = judge.reset(config)
            state, now = judge.oracle_state(), 0 if system.name == "duebook" else 1_735_689_600_000
            for i in range(steps):
                if verdict is not None:
                    break
                op, args, now = workload(rng, state, now)
                _, verdict = judge.step(op, args, now)
                if verdict is None and ((i + 1) % STATE_EVERY == 0 or i == steps - 1):
                    verdict, state = judge.state(), judge.oracle_state()
        finally:
            close_quietly(oracle)
            close_quietly(actual)
    taken = judge.steps
    findings = []
    if isinstance(verdict, Difference):
        error = Divergence(verdict) if verdict.kind.compared else TargetRaised(verdict)
        findings.append(finding_of(error, list(taken), system.model, target, config))
    first = findings[0] if findings else None
    return CampaignResult(
        system=system.name, profile=profile, seed=seed, examples=1, steps=len(taken),
        seconds=time.perf_counter() - started, coverage=coverage,
        failure=first.failure if first else None, counterexample=first.counterexample if first else [],
        config=config, failure_kind=first.kind if first else None,
        failure_summary=first.summary if first else None, findings=findings)
