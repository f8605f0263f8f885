"""`duespec bench` figure for the whole Resonate surface: lockstep steps/s of a campaign
whose steps span schedules, promises (settle, callbacks, listeners) and the task state
machine, model vs implementation, against model vs model on the same seed (the harness
and oracle alone). Also how the steps spread over the spec's handlers, so the figure says
what it measured."""

from __future__ import annotations

from collections import Counter
from typing import Callable

from duespec.bench import Figure, Sample, alternate, rate_figure, timed
from duespec.campaigns.run import run_campaign
from duespec.systems.schedules import SYSTEM, ModelTarget

SECTION = "schedules: campaign over the whole surface"


def campaign(target: type, examples: int, handlers: Counter[str]) -> Callable[[], Sample]:
    """One timed default lean campaign against `target`; how many steps each handler ID
    took goes into `handlers`."""
    def measure() -> Sample:
        def run() -> int:
            result = run_campaign(SYSTEM, target, oracle=ModelTarget, profile="lean", examples=examples,
                                  step_count=50, seed=1)
            if not result.ok:
                raise AssertionError(f"benchmark campaign diverged:\n{result.failure}")
            handlers.clear()
            for tag, count in result.coverage.items():
                requirement = tag.split(".", 1)[0]
                if requirement[:2] in ("P-", "T-", "S-", "TO", "EN"):
                    handlers[requirement] += count
            return result.steps
        return timed(run)
    return measure


def figures(quick: bool) -> list[Figure]:
    examples = 5 if quick else 30
    handlers: Counter[str] = Counter()
    on_impl, on_model = alternate([campaign(SYSTEM.impl, examples, handlers),
                                   campaign(ModelTarget, examples, Counter())])
    task_share = sum(n for h, n in handlers.items() if h.startswith(("T-", "P-0", "TO-04", "TO-05"))
                     and h not in ("P-01", "P-02"))
    model_rate = rate_figure(SECTION, "", on_model, "").value
    return [rate_figure(
        SECTION, "lockstep steps/s, model vs impl", on_impl, "steps/s",
        baseline=f"model vs model on the same seed: {model_rate:,.0f} steps/s",
        note=f"{examples} runs x 50 steps ({on_impl[0].count:,} steps), profile lean; {len(handlers)} "
             f"handler IDs reached, {task_share:,} handler branches in P-03..P-06, T-01..T-11, TO-04/05")]
