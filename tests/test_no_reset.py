"""Campaigns against a target that cannot be reset (`conform --reset none`, and `auto`
for a target that says it has no reset): each run in a namespace of its own.

The targets below are one production implementation shared by every instance, never
reset, so every run finds the objects of the runs before it; each refuses reset and has
no snapshot, as a production server would. A correct one must hold, a planted bug must
still be caught and its trace must replay against the dirty target, and every id on the
wire must carry its run's token.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from duespec.cli import main
from duespec.systems import get_system

SCHEDULES = get_system("schedules")
#: The one implementation every instance shares: the server that is never reset.
_SERVER: dict[str, Any] = {}
#: Every request as the server received it.
RECEIVED: list[tuple[str, Any]] = []


class NeverReset:
    def __init__(self) -> None:
        if "impl" not in _SERVER:
            impl = SCHEDULES.impl()
            impl.reset(SCHEDULES.config("lean"))
            _SERVER["impl"] = impl
        self.inner = _SERVER["impl"]

    def reset(self, config: dict[str, Any]) -> None:
        raise NotImplementedError("this server cannot be reset")

    def step(self, op: str, args: Any, now: Any) -> dict[str, Any]:
        RECEIVED.append((op, args))
        return self.inner.step(op, args, now)

    def observe(self) -> dict[str, Any]:
        raise NotImplementedError("this server has no snapshot of its state")


class SettleAnswersTheOldRecord(NeverReset):
    """Settles as it should, and answers with the promise as it was before."""

    def step(self, op: str, args: Any, now: Any) -> dict[str, Any]:
        if op == "promise.settle" and isinstance(args, dict) and isinstance(args.get("id"), str):
            before = self.inner.step("promise.get", {"id": args["id"]}, now)
            response = super().step(op, args, now)
            if response.get("status") in (200, 201) and "promise" in before:
                return {**response, "promise": before["promise"]}
            return response
        return super().step(op, args, now)


def conform(tmp_path: Path, target: str, *extra: str) -> int:
    return main(["conform", "schedules", "--target", f"{__name__}:{target}", "--progress", "0",
                 "--no-coverage", "--trace-dir", str(tmp_path / "failures"), *extra])
