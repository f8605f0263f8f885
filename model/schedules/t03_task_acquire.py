"""T-03 task.acquire: take a pending task at the version the caller saw; the version is
bumped, so whoever held the previous one is fenced out."""

from __future__ import annotations

from dataclasses import replace

from duespec.coverage import reached
from duespec.model.schedules.fencing import guard
from duespec.model.schedules.requests import Res, TaskAcquireReq
from duespec.model.schedules.state import LEASE, ServerState, del_task_timeout, set_task, set_task_timeout


def task_acquire(state: ServerState, req: TaskAcquireReq, now: int) -> Res:
    checked = guard(state, "T-03", req.id, req.version, "pending", now)
    if isinstance(checked, int):
        return Res(checked)
    t, p = checked
    reached("T-03.acquired")
    t = replace(t, state="acquired", version=t.version + 1, ttl=req.ttl, pid=req.pid, resumes=())
    set_task(state, t)
    del_task_timeout(state, t.id)
    set_task_timeout(state, t.id, LEASE, now + req.ttl)
    return Res(200, promise=p, task=t)
