"""This project's duebook: the reference model with two bugs of its own.

1. claim: a deferral that is not due yet answers not_found, not not_due;
2. cancel: a caller who is not the owner is told not_found, not not_owner."""

from typing import Any

from duespec.systems.duebook import ModelTarget


class BrokenDuebook(ModelTarget):
    def step(self, op: str, args: dict[str, Any], now: int) -> dict[str, Any]:
        response = super().step(op, args, now)
        if op == "claim" and response.get("error") == "not_due":
            return {"error": "not_found", "message": "nothing claimable with this id"}
        if op == "cancel" and response.get("error") == "not_owner":
            return {"error": "not_found", "message": "no deferral of yours has this id"}
        return response


class GoodDuebook(ModelTarget):
    """The model itself: conforms."""
