"""In-process duebook targets with planted bugs, for the conformance-engine tests.

Each is the model with one or more deliberate differences, in different operations and
independent of each other, so a campaign that reports every class must find each one."""

from __future__ import annotations

from typing import Any

from duespec.systems.duebook import ModelTarget

Json = Any


class ThreePlantedBugs(ModelTarget):
    """1. claim: the window is closed at its end (a claim at expires_at succeeds);
    2. cancel: a caller who is not the owner is told not_found, not not_owner;
    3. get: an id that is not open is invalid, not not_found."""

    def step(self, op: str, args: dict[str, Json], now: int) -> dict[str, Json]:
        if op == "claim" and type(args.get("id")) is int and type(now) is int and now > 0:
            deferral = next((d for d in self.observe()["open"] if d["id"] == args["id"]), None)
            if deferral is not None and deferral["expires_at"] == now:
                return super().step(op, args, now - 1)
        response = super().step(op, args, now)
        if op == "cancel" and response.get("error") == "not_owner":
            return {"error": "not_found", "message": "no deferral of yours has this id"}
        if op == "get" and response.get("error") == "not_found":
            return {"error": "invalid", "message": "unknown id"}
        return response


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
