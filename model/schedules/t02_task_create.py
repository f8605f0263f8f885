"""T-02 task.create: create a promise with its task already acquired, or acquire the
pending task of an existing targeted promise."""

from __future__ import annotations

from dataclasses import replace

from duespec.coverage import reached
from duespec.model.schedules.requests import Res, TaskCreateReq
from duespec.model.schedules.state import (
    LEASE, PromiseObject, ServerState, TaskObject, del_task_timeout, get_promise, get_task, is_timer,
    set_promise, set_promise_timeout, set_task, set_task_timeout, tags_has,
)


def task_create(state: ServerState, req: TaskCreateReq, now: int) -> Res:
    a = req.action
    p = get_promise(state, a.id)
    if p is None:
        if a.timeout_at > now:
            reached("T-02.created")
            p = PromiseObject(id=a.id, state="pending", param=a.param, tags=a.tags,
                              timeout_at=a.timeout_at, created_at=now)
            set_promise(state, p)
            set_promise_timeout(state, p.id, p.timeout_at)
            t = TaskObject(id=p.id, state="acquired", version=1, ttl=req.ttl, pid=req.pid)
            set_task(state, t)
            set_task_timeout(state, t.id, LEASE, now + req.ttl)
            return Res(200, promise=p, task=t)
        reached("T-02.expired_at_creation")
        p = PromiseObject(id=a.id, state="resolved" if is_timer(a.tags) else "rejected_timedout",
                          param=a.param, tags=a.tags, timeout_at=a.timeout_at,
                          created_at=a.timeout_at, settled_at=a.timeout_at)
        set_promise(state, p)
        t = TaskObject(id=p.id, state="fulfilled", version=0)
        set_task(state, t)
        return Res(200, promise=p, task=t)
    if not tags_has(p.tags, "resonate:target"):
        reached("T-02.no_target")
        return Res(422)
    t = get_task(state, p.id)
    if t is None:
        reached("T-02.no_task")
        return Res(409)
    if t.state == "fulfilled":
        reached("T-02.fulfilled")
        return Res(200, promise=p, task=t)
    if t.state == "pending":
        reached("T-02.acquired")
        t = replace(t, state="acquired", version=t.version + 1, ttl=req.ttl, pid=req.pid, resumes=())
        set_task(state, t)
        del_task_timeout(state, t.id)
        set_task_timeout(state, t.id, LEASE, now + req.ttl)
        return Res(200, promise=p, task=t)
    reached("T-02.busy")
    return Res(409)
