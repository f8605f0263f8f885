"""T-05 task.heartbeat: renew the lease of every listed task the caller still holds."""

from __future__ import annotations

from duespec.coverage import reached
from duespec.model.schedules.requests import Res, TaskHeartbeatReq
from duespec.model.schedules.state import (
    LEASE, ServerState, del_task_timeout, get_promise, get_task, set_task_timeout,
)


def task_heartbeat(state: ServerState, req: TaskHeartbeatReq, now: int) -> Res:
    for ref in req.tasks:
        t = get_task(state, ref.id)
        if t is None:
            reached("T-05.absent")
            continue
        if not (t.state == "acquired" and t.version == ref.version and t.pid == req.pid):
            reached("T-05.not_held")
            continue
        p = get_promise(state, t.id)
        if p is None or not (p.state == "pending" and p.timeout_at > now):
            reached("T-05.promise_done")
            continue
        reached("T-05.renewed")
        del_task_timeout(state, t.id)
        set_task_timeout(state, t.id, LEASE, now + (t.ttl or 0))
    return Res(200)
