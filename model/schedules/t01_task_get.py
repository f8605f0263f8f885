"""T-01 task.get: the task, read as fulfilled once its promise is settled or past its timeout."""

from __future__ import annotations

from dataclasses import replace

from duespec.coverage import reached
from duespec.model.schedules.requests import IdReq, Res
from duespec.model.schedules.state import ServerState, get_promise, get_task


def task_get(state: ServerState, req: IdReq, now: int) -> Res:
    t = get_task(state, req.id)
    if t is None:
        reached("T-01.absent")
        return Res(404)
    p = get_promise(state, t.id)
    if p is None:
        reached("T-01.no_promise")
        return Res(404)
    if p.state == "pending" and p.timeout_at > now:
        reached("T-01.found")
        return Res(200, task=t)
    reached("T-01.projected")
    return Res(200, task=replace(t, state="fulfilled", pid=None, ttl=None, resumes=()))
