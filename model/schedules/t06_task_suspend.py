"""T-06 task.suspend: park the held task on callbacks, or 300 if one awaited promise is
already done (the caller goes on instead of waiting)."""

from __future__ import annotations

from dataclasses import replace

from duespec.coverage import reached
from duespec.model.schedules.fencing import guard
from duespec.model.schedules.requests import Res, TaskSuspendReq
from duespec.model.schedules.state import (
    ServerState, add_callback, del_task_timeout, get_promise, set_promise, set_task,
)


def task_suspend(state: ServerState, req: TaskSuspendReq, now: int) -> Res:
    checked = guard(state, "T-06", req.id, req.version, "acquired", now)
    if isinstance(checked, int):
        return Res(checked)
    t, _ = checked
    settled = False
    for action in req.actions:
        pa = get_promise(state, action.awaited)
        if pa is None:
            reached("T-06.awaited_absent")
            return Res(422)
        if pa.state != "pending" or pa.timeout_at <= now:
            settled = True
    if settled:
        reached("T-06.already_settled")
        set_task(state, replace(t, resumes=()))
        return Res(300)
    if not req.actions:  # parked awaiting nothing: no settle will resume it (34049e8 refuses this, 400)
        reached("T-06.awaits_nothing")
    reached("T-06.suspended")
    for action in req.actions:
        pa = get_promise(state, action.awaited)
        if pa is not None:
            set_promise(state, add_callback(pa, req.id))
    set_task(state, replace(t, state="suspended", pid=None, ttl=None, resumes=()))
    del_task_timeout(state, t.id)
    return Res(200)
