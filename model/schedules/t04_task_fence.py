"""T-04 task.fence: a promise.create or promise.settle done only while the caller holds the
task at its current version."""

from __future__ import annotations

from duespec.coverage import reached
from duespec.model.schedules.fencing import guard
from duespec.model.schedules.p02_promise_create import promise_create
from duespec.model.schedules.p03_promise_settle import promise_settle
from duespec.model.schedules.requests import PromiseCreateReq, Res, TaskFenceReq
from duespec.model.schedules.state import ServerState


def task_fence(state: ServerState, req: TaskFenceReq, now: int) -> Res:
    checked = guard(state, "T-04", req.id, req.version, "acquired", now)
    if isinstance(checked, int):
        return Res(checked)
    if isinstance(req.action, PromiseCreateReq):
        reached("T-04.create")
        return Res(200, action=("create", promise_create(state, req.action, now)))
    reached("T-04.settle")
    return Res(200, action=("settle", promise_settle(state, req.action, now)))
