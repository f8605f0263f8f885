"""duebook's workload for `conform --long-run N` (duespec.campaigns.long_run): the project's
own long run (tests/test_duebook_long_run.py), made available to every target."""

from __future__ import annotations

import random
from typing import Any

from duespec.systems import LongRun
from duespec.targets.interface import Json

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


def long_run_config(config: dict[str, Any]) -> dict[str, Any]:
    return {**config, **DUEBOOK_CONFIG}


#: The clock starts at 0: duebook asks nothing of `now` but that it be a valid time.
LONG_RUN = LongRun(call=duebook_call, config=long_run_config, start_now=0)
