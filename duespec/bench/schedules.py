"""`duespec bench` figures for Resonate schedules, each against a baseline of the same run.

- Catch-up after an outage: one schedule firing every minute, down for a year (525,600
  missed ticks), caught up by one schedule.timeout, the implementation against the
  reference model on the same outage, alternated.
  Goal: impl time <= 0.064 x the model's (the figure before the bench was made honest).
  Each sample starts with the model's nextCron memo cleared: repeats of an outage shorter
  than the memo found every tick there (0.23x at 30 days). Cold, both sides cost the same
  per tick at any length, so quick mode's 7 days (10,080 ticks) measures the same ratio.
- Differential throughput (full run only): lockstep steps/s of the default campaign,
  model vs implementation, against model vs model (what the implementation side costs).
"""

from __future__ import annotations

from typing import Any, Callable

from duespec.bench import Figure, Goal, Sample, alternate, ratio_figure, timed
from duespec.campaigns.run import run_campaign
from duespec.model.schedules.clock import next_run_memo as model_next_run
from duespec.systems.schedules import SYSTEM, ImplTarget, ModelTarget

SECTION = "schedules"
T0 = 1_735_689_600_000  # 2025-01-01T00:00:00Z
MINUTE = 60_000
YEAR_OF_MINUTES = 525_600


def catch_up(target_factory: Callable[[], Any], ticks: int, profile: str = "lean") -> Callable[[], Sample]:
    """A fresh target with one minutely schedule, then one schedule.timeout that owes
    `ticks` occurrences: only that call is timed, and its outcome checked."""
    def measure() -> Sample:
        # The model memoizes nextCron for the last 65,536 ticks it asked about: a repeat of
        # a shorter outage would find every tick there and skip the cron arithmetic a real
        # catch-up does (at a year the memo never hits, as the ticks come in order).
        # Every sample starts cold.
        model_next_run.cache_clear()
        target = target_factory()
        target.reset({"profile": profile, "retry_timeout": 5000})
        try:
            created = target.step("schedule.create", {
                "id": "minutely", "cron": "* * * * *", "promiseId": "{{.id}}.{{.timestamp}}",
                "promiseTimeout": 365 * 24 * 60 * MINUTE, "promiseParam": {"headers": {}, "data": None},
                "promiseTags": {}}, T0)
            assert created["status"] == 200, created
            fired: dict[str, Any] = {}

            def fire() -> int:
                fired.update(target.step("schedule.timeout", {"id": "minutely"}, T0 + ticks * MINUTE))
                return ticks
            sample = timed(fire)
            assert fired["status"] == 200, fired
            last = target.step("schedule.get", {"id": "minutely"}, T0 + ticks * MINUTE)["schedule"]
            assert last["lastRunAt"] == T0 + ticks * MINUTE, last
            return sample
        finally:
            target.close()
    return measure


def campaign(oracle: Callable[[], Any], target: Callable[[], Any], examples: int) -> Callable[[], Sample]:
    def measure() -> Sample:
        def run() -> int:
            result = run_campaign(SYSTEM, target, oracle=oracle, profile="lean", examples=examples,
                                  step_count=50, seed=1)
            if not result.ok:
                raise AssertionError(f"benchmark campaign diverged:\n{result.failure}")
            return result.steps
        return timed(run)
    return measure


def figures(quick: bool) -> list[Figure]:
    ticks, span = (7 * 1440, "7 days") if quick else (YEAR_OF_MINUTES, "a year")
    impl_samples, model_samples = alternate([catch_up(ImplTarget, ticks), catch_up(ModelTarget, ticks)])
    found = [ratio_figure(SECTION, f"catch-up of {span} of minutely ticks ({ticks:,}): impl / model time",
                          impl_samples, model_samples, goal=Goal("<=", 0.064),
                          baseline="the reference model's catch-up of the same outage",
                          note="one schedule.timeout owing every tick; the answers are checked")]
    if not quick:
        lockstep, baseline = alternate([campaign(ModelTarget, ImplTarget, 100),
                                        campaign(ModelTarget, ModelTarget, 100)])
        found.append(ratio_figure(SECTION, "differential campaign steps/s, model vs impl / model vs model",
                                  lockstep, baseline, per="rate",
                                  note="100 runs x 50 steps, profile lean: what the impl side costs"))
    return found
