"""In-process duebook targets with planted bugs, for the conformance-engine tests.

Each is the model with one or more deliberate differences, in different operations and
independent of each other, so a campaign that reports every class must find each one."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from duespec.systems.duebook import ModelTarget

Json = Any


class ThreePlantedBugs(ModelTarget):
    """1. claim: a deferral that is not due yet answers not_found, not not_due;
    2. cancel: a caller who is not the owner is told not_found, not not_owner;
    3. expire: a deferral with a ttl that has not expired yet answers too_early, not
       not_expired (one that never expires still answers not_expired)."""

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        response = super().step(op, args, now)
        if op == "claim" and response.get("error") == "not_due":
            return {"error": "not_found", "message": "nothing claimable with this id"}
        if op == "cancel" and response.get("error") == "not_owner":
            return {"error": "not_found", "message": "no deferral of yours has this id"}
        if op == "expire" and response.get("error") == "not_expired" and self._expires(args["id"]):
            return {"error": "too_early", "message": "the deferral has not expired yet"}
        return response

    def _expires(self, id: Json) -> bool:
        return any(d["id"] == id and d["expires_at"] for d in self.observe()["open"])


class KeepsIdsAcrossReset(ModelTarget):
    """Keeps its id counter across reset, as a server that forgets to clear a sequence."""

    allocated = 0

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        response = super().step(op, args, now)
        if op == "schedule" and "ok" in response:
            type(self).allocated += 1
            response = {"ok": {**response["ok"], "id": type(self).allocated}}
        return response


class RaisesOnExpirable(ModelTarget):
    """Raises a Python exception from its step (a bug in the target, never in duespec),
    and has no close()."""

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        if op == "expirable" and args.get("limit") == 0:
            return self._limit_of(args)
        return super().step(op, args, now)

    def _limit_of(self, args: dict[str, Json]) -> dict[str, Json]:
        return {"ok": [None] * (1 // args["limit"])}

    close = None  # type: ignore[assignment]


class CannotStart(ModelTarget):
    def __init__(self) -> None:
        raise RuntimeError("cannot connect to the database")


class CloseRaises(ModelTarget):
    def close(self) -> None:
        raise OSError("close failed")


class OnePlantedBug(ModelTarget):
    """claim of a deferral not due yet answers not_found: one class, found in the first
    search; every later search finds nothing new and runs all its examples."""

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        response = super().step(op, args, now)
        if op == "claim" and response.get("error") == "not_due":
            return {"error": "not_found", "message": "nothing claimable with this id"}
        return response


class SlowOnceItsBugShows(ModelTarget):
    """OnePlantedBug that answers slowly (SLOW_STEP_SECONDS a step) from the moment its bug
    first shows: the search that finds it is fast, and shrinking it, replaying it from a
    reset and minimising it take far longer than a stop's grace period."""

    SLOW_STEP_SECONDS = 0.25
    shown = False

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        if type(self).shown:
            import time

            if os.environ.get("DUESPEC_TEST_BUG_SHOWN"):
                # Touched at the first step after the bug showed: the failing run has ended
                # and the search knows it, so a test waiting on this file signals a shrink.
                Path(os.environ["DUESPEC_TEST_BUG_SHOWN"]).touch()
            time.sleep(self.SLOW_STEP_SECONDS)
        response = super().step(op, args, now)
        if op == "claim" and response.get("error") == "not_due":
            type(self).shown = True
            return {"error": "not_found", "message": "nothing claimable with this id"}
        return response
