"""T-09 task.halt: stop a task that is not done; it keeps its buffered resumes."""

from __future__ import annotations

from dataclasses import replace

from duespec.coverage import reached
from duespec.model.schedules.requests import IdReq, Res
from duespec.model.schedules.state import ServerState, del_task_timeout, get_task, set_task


def task_halt(state: ServerState, req: IdReq, now: int) -> Res:
    t = get_task(state, req.id)
    if t is None:
        reached("T-09.absent")
        return Res(404)
    if t.state == "fulfilled":
        reached("T-09.fulfilled")
        return Res(409)
    if t.state == "halted":
        reached("T-09.already_halted")
        return Res(200)
    reached("T-09.halted")
    set_task(state, replace(t, state="halted", pid=None, ttl=None))
    del_task_timeout(state, t.id)
    return Res(200)
