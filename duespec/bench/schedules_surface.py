"""`duespec bench` figure for the whole Resonate surface: lockstep steps/s of a campaign
whose steps span schedules, promises (settle, callbacks, listeners) and the task state
machine, model vs implementation, against model vs model on the same seed (the harness
and oracle alone). Also how the steps spread over the spec's handlers, so the figure says
what it measured."""

from __future__ import annotations

import time
from collections import Counter

from duespec.bench import Figure
from duespec.campaigns.run import run_campaign
from duespec.systems.schedules import SYSTEM, ModelTarget

SECTION = "schedules: campaign over the whole surface"


def campaign(target: type, examples: int) -> tuple[float, int, Counter[str]]:
    """Steps per CPU second of the default lean campaign against `target`, the step count,
    and how many steps each handler ID took."""
    started = time.process_time()
    result = run_campaign(SYSTEM, target, oracle=ModelTarget, profile="lean", examples=examples,
                          step_count=50, seed=1)
    seconds = time.process_time() - started
    if not result.ok:
        raise AssertionError(f"benchmark campaign diverged:\n{result.failure}")
    handlers: Counter[str] = Counter()
    for tag, count in result.coverage.items():
        requirement = tag.split(".", 1)[0]
        if requirement[:2] in ("P-", "T-", "S-", "TO", "EN"):
            handlers[requirement] += count
    return result.steps / seconds, result.steps, handlers


def figures(quick: bool) -> list[Figure]:
    examples = 20 if quick else 100
    impl_rate, steps, handlers = campaign(SYSTEM.impl, examples)
    model_rate, _, _ = campaign(ModelTarget, examples)
    task_share = sum(n for h, n in handlers.items() if h.startswith(("T-", "P-0", "TO-04", "TO-05"))
                     and h not in ("P-01", "P-02"))
    return [Figure(
        SECTION, "lockstep steps/s, model vs impl (CPU)", impl_rate, "steps/s",
        baseline=f"model vs model on the same seed: {model_rate:,.0f} steps/s", extra={"model_vs_model": model_rate},
        note=f"{examples} runs x 50 steps ({steps:,} steps), profile lean; {len(handlers)} handler IDs "
             f"reached, {task_share:,} handler branches in P-03..P-06, T-01..T-11, TO-04/05")]
