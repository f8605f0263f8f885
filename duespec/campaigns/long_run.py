"""`conform --long-run N`: one long lockstep run against any target, where a Hypothesis
run (50 steps) never goes: thousands of steps, a large book that fills, churns and drains.

A seeded random workload of mostly successful calls drives the model and the target side
by side, every step judged as a campaign's (duespec.judge): every response, the whole
state every STATE_EVERY steps and at the end (the workload reads the model's state as of
the last comparison). A difference is classified as a campaign's failure is (the same
class, requirement IDs and reset-leak check), and becomes an ordinary failed
CampaignResult whose counterexample is every step up to it, so conform writes the trace
and prints the replay command as for any campaign. Each system brings its workload
(System.long_run); duebook's is the project's own long run (tests/test_duebook_long_run.py),
made available to every target."""

from __future__ import annotations

import random
import time
from contextlib import nullcontext
from typing import Any

from duespec.campaigns.run import CampaignResult, finding_of
from duespec.campaigns.stopping import Stopper
from duespec.coverage import collecting
from duespec.systems import System
from duespec.judge import Difference, Divergence, StepJudge, TargetRaised, Verdict
from duespec.targets.interface import TargetFactory, close_quietly

#: Steps between whole-state comparisons (every response is compared at every step).
STATE_EVERY = 250


def run_long(system: System, target: TargetFactory, *, steps: int, profile: str | None = None,
             seed: int = 0, observe: bool = True, request_tags: dict[str, str] | None = None,
             stopper: Stopper | None = None, config: dict[str, Any] | None = None) -> CampaignResult:
    """One run of `steps` steps; the verdict as a CampaignResult (one example).
    `observe=False`: every answer compared, no whole state (a target without observe()).
    Its promises and schedules carry `request_tags` (System.tag_request); `stopper` (a
    signal, --budget) ends it early, compared up to where it stopped. `config`: keys set
    over the profile's own (--catch-up)."""
    profile = profile or system.profiles[0]
    workload, configure = system.long_run.call, system.long_run.config
    config = configure({**system.config(profile), **(config or {})})
    rng = random.Random(seed)
    oracle, actual = system.model(), target()
    verdict: Verdict = None
    started = time.perf_counter()
    with collecting() as coverage, collecting() as step_tags, (
            stopper.searching(lambda: None) if stopper is not None else nullcontext()):
        judge = StepJudge(oracle, actual, tags=step_tags, observe=observe, refuses=system.refuses,
                          accepts=system.accepts)
        try:
            verdict = judge.reset(config)
            state, now = judge.oracle_state(), system.long_run.start_now
            for i in range(steps):
                if verdict is not None:
                    break
                if stopper is not None and stopper.requested:
                    verdict = judge.state()  # the state where it stopped is compared too
                    break
                op, args, now = workload(rng, state, now)
                if request_tags and system.tag_request is not None:
                    args = system.tag_request(op, args, request_tags)
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
        findings.append(finding_of(error, list(taken), system.model, target, config, observe))
    first = findings[0] if findings else None
    return CampaignResult(
        system=system.name, profile=profile, seed=seed, examples=1, steps=len(taken),
        seconds=time.perf_counter() - started, coverage=coverage,
        failure=first.failure if first else None, counterexample=first.counterexample if first else [],
        config=config, failure_kind=first.kind if first else None,
        failure_summary=first.summary if first else None, findings=findings,
        request_tags=dict(request_tags or {}),
        cut_short=stopper.reason if stopper is not None and stopper.requested else None, examples_asked=1)
