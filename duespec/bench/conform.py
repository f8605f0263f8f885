"""What checking a program over the stdio protocol costs, against checking in-process.

1. A whole duebook conformance campaign (same seed, same runs, same steps) against the
   JavaScript duebook over stdio, against the same campaign against duespec's own
   implementation in-process: what a user of `duespec conform` pays per step.
2. Bare steps through the Target interface (no Hypothesis, no model, no invariants): the
   stdio round trip to node against a call into the in-process implementation."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Callable

from duespec.bench import Figure, rate
from duespec.campaigns.run import run_campaign
from duespec.targets.stdio import StdioTargetFactory
from duespec.systems.duebook import SYSTEM
from duespec.targets.interface import Target, TargetFactory

SECTION = "conform (stdio protocol)"
NODE_DUEBOOK = Path(__file__).resolve().parents[1] / "examples" / "node-duebook" / "duebook.js"


def campaign_steps(target: TargetFactory, examples: int) -> int:
    result = run_campaign(SYSTEM, target, seed=0, examples=examples, step_count=50)
    if not result.ok:
        raise RuntimeError(f"bench campaign failed, figures would be meaningless:\n{result.failure_summary}")
    return result.steps


def interleaved_rates(first: Callable[[], int], second: Callable[[], int],
                      rounds: int) -> tuple[float, float]:
    """Steps/s of each, timed in alternation so that load from anything else running on the
    machine falls on both sides alike."""
    done, spent = [0, 0], [0.0, 0.0]
    for _ in range(rounds):
        for side, action in enumerate((first, second)):
            started = time.perf_counter()
            done[side] += action()
            spent[side] += time.perf_counter() - started
    return done[0] / spent[0], done[1] / spent[1]


def bare_steps(target: Target, rounds: int = 50) -> int:
    """Schedule, look up, claim and list, with the clock moving: four calls a round."""
    target.reset({"max_open": 1000})
    for now in range(rounds):
        deferral = target.step("schedule", {"owner": "alice", "delay": 0, "ttl": 10}, now)["ok"]
        target.step("get", {"id": deferral["id"]}, now)
        target.step("claim", {"id": deferral["id"]}, now)
        target.step("claimable", {"limit": 10}, now)
    return 4 * rounds


def figures(quick: bool) -> list[Figure]:
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("node is required for the stdio figures (examples/node-duebook)")
    stdio = StdioTargetFactory([node, str(NODE_DUEBOOK)], "duebook")
    examples, rounds, seconds = (20, 1, 0.5) if quick else (100, 3, 2.0)
    try:
        campaign_stdio, campaign_impl = interleaved_rates(
            lambda: campaign_steps(stdio, examples), lambda: campaign_steps(SYSTEM.impl, examples),
            rounds)
        target = stdio()
        bare_stdio = rate(lambda: bare_steps(target), seconds)
        bare_impl = rate(lambda: bare_steps(SYSTEM.impl()), seconds)
    finally:
        stdio.close()
    return [
        Figure(SECTION, "campaign steps/s, node duebook over stdio", campaign_stdio, "steps/s",
               "same campaign, duespec impl in-process", campaign_impl,
               note=f"seed 0, {examples} runs x 50 steps, {rounds} rounds timed in alternation; "
                    "each step also runs the model, an observe on both sides and every invariant"),
        Figure(SECTION, "bare steps/s, node duebook over stdio", bare_stdio, "steps/s",
               "bare steps/s, duespec impl in-process", bare_impl,
               note="the Target interface alone: one JSON line each way per step"),
    ]
