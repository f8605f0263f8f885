"""P-02 promise.create: idempotent by id; a promise already past its timeout is born settled."""

from __future__ import annotations

from duespec.coverage import reached
from duespec.model.schedules.projection import timed_out
from duespec.model.schedules.requests import PromiseCreateReq, Res, delay_ms
from duespec.model.schedules.state import (
    RETRY, Execute, PromiseObject, ServerState, TaskObject, get_promise, is_external, is_timer,
    set_message, set_promise, set_promise_timeout, set_task, set_task_timeout, tags_get, tags_has,
)


def promise_create(state: ServerState, req: PromiseCreateReq, now: int) -> Res:
    retry_timeout = state.config.retry_timeout
    existing = get_promise(state, req.id)
    if existing is not None:
        if existing.state == "pending" and existing.timeout_at <= now:
            reached("P-02.exists_projected")
            return Res(200, promise=timed_out(existing))
        reached("P-02.exists")
        return Res(200, promise=existing)
    if req.timeout_at > now:
        reached("P-02.pending")
        p = PromiseObject(id=req.id, state="pending", param=req.param, tags=req.tags,
                          timeout_at=req.timeout_at, created_at=now)
        set_promise(state, p)
        if is_external(p):
            reached("P-02.pending_external")
            set_promise_timeout(state, p.id, p.timeout_at)
        target = tags_get(p.tags, "resonate:target")
        if target is None:
            return Res(200, promise=p)
        t = TaskObject(id=p.id, state="pending", version=0)
        set_task(state, t)
        delay = tags_get(p.tags, "resonate:delay")
        if delay is None:
            reached("P-02.dispatched")
            set_task_timeout(state, t.id, RETRY, now + retry_timeout)
            set_message(state, target, Execute(t.id, t.version), "P-02.dispatched")
            return Res(200, promise=p)
        if delay_ms(delay) > now:
            reached("P-02.delayed")
            set_task_timeout(state, t.id, RETRY, delay_ms(delay))
            return Res(200, promise=p)
        reached("P-02.delay_passed")
        set_task_timeout(state, t.id, RETRY, now + retry_timeout)
        set_message(state, target, Execute(t.id, t.version), "P-02.delay_passed")
        return Res(200, promise=p)
    reached("P-02.expired_at_creation")
    p = PromiseObject(id=req.id, state="resolved" if is_timer(req.tags) else "rejected_timedout",
                      param=req.param, tags=req.tags, timeout_at=req.timeout_at,
                      created_at=req.timeout_at, settled_at=req.timeout_at)
    set_promise(state, p)
    if tags_has(p.tags, "resonate:target"):
        reached("P-02.expired_at_creation_task")
        set_task(state, TaskObject(id=p.id, state="fulfilled", version=0))
    return Res(200, promise=p)
