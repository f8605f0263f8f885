"""duebook targets with planted bugs for the tests of parallel, sharded and remembered
campaigns: the model with one difference that only a deep run reaches."""

from __future__ import annotations

import os
from typing import Any

from duespec.systems.duebook import ModelTarget

Json = Any


class DeepBug(ModelTarget):
    """`claimable` leaves out the last entry once the book holds more than `threshold` open
    deferrals (DUESPEC_TEST_DEEP_BUG, default 200): only a deep run finds it."""

    threshold = int(os.environ.get("DUESPEC_TEST_DEEP_BUG", "200"))

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        response = super().step(op, args, now)
        if op == "claimable" and isinstance(response.get("ok"), list) and len(response["ok"]) > 1:
            if len(self.observe()["open"]) > self.threshold:
                return {"ok": response["ok"][:-1]}
        return response


class SingleCopy(ModelTarget):
    """A conforming target that says it cannot run two copies at once."""

    max_copies = 1


class TwoBugs(ModelTarget):
    """Two shallow differences in two ops: every chunk finds both."""

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        response = super().step(op, args, now)
        if op == "claim" and response.get("error") == "not_due":
            return {"error": "not_found", "message": "nothing claimable with this id"}
        if op == "cancel" and response.get("error") == "not_owner":
            return {"error": "not_found", "message": "no deferral of yours has this id"}
        return response


class KillsRedis(ModelTarget):
    """DeepBug's bug; the first time it answers wrong, it kills the process whose id is in
    DUESPEC_TEST_KILL_PID (the test's redis-server): the database dies mid-campaign."""

    killed = False

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        response = super().step(op, args, now)
        if op == "claimable" and isinstance(response.get("ok"), list) and len(response["ok"]) > 1:
            if len(self.observe()["open"]) > DeepBug.threshold:
                if not type(self).killed:
                    type(self).killed = True
                    os.kill(int(os.environ["DUESPEC_TEST_KILL_PID"]), 9)
                return {"ok": response["ok"][:-1]}
        return response
