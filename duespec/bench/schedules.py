"""`duespec bench` figures for Resonate schedules, each against a baseline of the same run.

- Catch-up after an outage: one schedule firing every minute, down for a year (525,600
  missed ticks; a week, 10,080, in quick mode), caught up by one schedule.timeout. The
  implementation's occurrences/s against the reference model's on the same outage.
- Differential throughput: lockstep steps/s of the default campaign, model vs
  implementation, against model vs model (the cost of the harness and oracle alone).
"""

from __future__ import annotations

import time
from typing import Any, Callable

from duespec.bench import Figure
from duespec.campaigns.run import run_campaign
from duespec.systems.schedules import SYSTEM, ImplTarget, ModelTarget

SECTION = "schedules"
T0 = 1_735_689_600_000  # 2025-01-01T00:00:00Z
MINUTE = 60_000
YEAR_OF_MINUTES = 525_600
WEEK_OF_MINUTES = 10_080


def catch_up_rate(target_factory: Callable[[], Any], ticks: int, profile: str = "lean") -> float:
    """Occurrences per second of one catch-up over `ticks` missed minutely ticks."""
    target = target_factory()
    target.reset({"profile": profile, "retry_timeout": 5000})
    try:
        created = target.step("schedule.create", {
            "id": "minutely", "cron": "* * * * *", "promiseId": "{{.id}}.{{.timestamp}}",
            "promiseTimeout": 365 * 24 * 60 * MINUTE, "promiseParam": {"headers": {}, "data": None},
            "promiseTags": {}}, T0)
        assert created["status"] == 200, created
        started = time.perf_counter()
        fired = target.step("schedule.timeout", {"id": "minutely"}, T0 + ticks * MINUTE)
        seconds = time.perf_counter() - started
        assert fired["status"] == 200, fired
        last = target.step("schedule.get", {"id": "minutely"}, T0 + ticks * MINUTE)["schedule"]
        assert last["lastRunAt"] == T0 + ticks * MINUTE, last
        return ticks / seconds
    finally:
        target.close()


def differential_rate(oracle: Callable[[], Any], target: Callable[[], Any], examples: int) -> float:
    result = run_campaign(SYSTEM, target, oracle=oracle, profile="lean", examples=examples,
                          step_count=50, seed=1)
    if not result.ok:
        raise AssertionError(f"benchmark campaign diverged:\n{result.failure}")
    return result.steps / result.seconds


def figures(quick: bool) -> list[Figure]:
    ticks, span = (WEEK_OF_MINUTES, "a week") if quick else (YEAR_OF_MINUTES, "a year")
    impl_rate = catch_up_rate(ImplTarget, ticks)
    model_rate = catch_up_rate(ModelTarget, ticks)
    examples = 20 if quick else 100
    lockstep = differential_rate(ModelTarget, ImplTarget, examples)
    baseline = differential_rate(ModelTarget, ModelTarget, examples)
    return [
        Figure(SECTION, f"catch-up of {span} of minutely ticks ({ticks:,}), impl", impl_rate,
               "ticks/s", "the reference model", model_rate,
               note=f"impl {ticks / impl_rate:.1f} s, model {ticks / model_rate:.1f} s for the outage"),
        Figure(SECTION, "differential campaign, model vs impl", lockstep, "steps/s",
               "model vs model", baseline, note=f"{examples} runs x 50 steps, profile lean"),
    ]
