"""T-07 task.fulfill: the holder settles the task's own promise and the task is done.

The settlement is the task's promise (the request's action.id is not read, as in the
Lean); everything waiting on it is unblocked or resumed."""

from __future__ import annotations

from dataclasses import replace

from duespec.coverage import reached
from duespec.model.schedules.fencing import guard
from duespec.model.schedules.requests import Res, TaskFulfillReq
from duespec.model.schedules.settlement import settle
from duespec.model.schedules.state import ServerState


def task_fulfill(state: ServerState, req: TaskFulfillReq, now: int) -> Res:
    checked = guard(state, "T-07", req.id, req.version, "acquired", now)
    if isinstance(checked, int):
        return Res(checked)
    _, p = checked
    reached("T-07.fulfilled")
    settled = settle(state, p, replace(p, state=req.action.state, value=req.action.value, settled_at=now),
                     now, "T-07")
    return Res(200, promise=settled)
