"""Resonate schedules' workload for `conform --long-run N` (duespec.campaigns.long_run)."""

from __future__ import annotations

import random
from typing import Any

from duespec.systems import LongRun
from duespec.systems.schedules.adapter import MINUTE
from duespec.systems.schedules.ops import EPOCH_2025
from duespec.targets.interface import Json

#: Hourly at most: with the clock moving up to an hour a step, promises grow by a few a step.
SCHEDULE_CRONS = ("0 * * * *", "0 0 * * *", "30 9 * * mon-fri", "0 0 29 2 *", "@daily", "15 */6 * * *")


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


def long_run_config(config: dict[str, Any]) -> dict[str, Any]:
    return config


#: The clock starts at 2025-01-01T00:00:00Z, as the machine's runs mostly do.
LONG_RUN = LongRun(call=schedules_call, config=long_run_config, start_now=EPOCH_2025)
