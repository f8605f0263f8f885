"""What checking a program over the stdio protocol costs, against checking in-process.

1. A whole duebook conformance campaign (same seed, same runs, same steps) against the
   JavaScript duebook over stdio, against the same campaign against duespec's own
   implementation in-process: what a user of `duespec conform` pays per step.
2. Bare steps through the Target interface (no Hypothesis, no model, no invariants): the
   stdio round trip to node against a call into the in-process implementation."""

from __future__ import annotations

import shutil
from pathlib import Path

from duespec.bench import Figure, alternate, ratio_figure, timed
from duespec.campaigns.run import run_campaign
from duespec.targets.stdio import StdioTargetFactory
from duespec.systems.duebook import SYSTEM
from duespec.targets.interface import Target, TargetFactory

SECTION = "conform (stdio protocol)"
NODE_DUEBOOK = Path(__file__).resolve().parents[2] / "examples" / "node-duebook" / "duebook.js"


def campaign_steps(target: TargetFactory, examples: int) -> int:
    result = run_campaign(SYSTEM, target, seed=0, examples=examples, step_count=50)
    if not result.ok:
        raise RuntimeError(f"bench campaign failed, figures would be meaningless:\n{result.failure_summary}")
    return result.steps


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
    examples, rounds = (10, 40) if quick else (100, 200)
    try:
        campaign_stdio, campaign_impl = alternate([
            lambda: timed(lambda: campaign_steps(stdio, examples)),
            lambda: timed(lambda: campaign_steps(SYSTEM.impl, examples))])
        target = stdio()
        bare_stdio, bare_impl = alternate([lambda: timed(lambda: bare_steps(target, rounds)),
                                           lambda: timed(lambda: bare_steps(SYSTEM.impl(), rounds))])
    finally:
        stdio.close()
    return [
        ratio_figure(SECTION, "campaign steps/s, node duebook over stdio / impl in-process",
                     campaign_stdio, campaign_impl, per="rate",
                     baseline="the same campaign against duespec's impl in-process",
                     note=f"seed 0, {examples} runs x 50 steps; CPU time of this process only: "
                          "node's own CPU is not in it, so the wall figure is the honest one here"),
        ratio_figure(SECTION, "bare steps/s, node duebook over stdio / impl in-process", bare_stdio,
                     bare_impl, per="rate", baseline="the Target interface alone, impl in-process",
                     note="one JSON line each way per step"),
    ]
