"""T-10 task.continue: a halted task becomes pending and is dispatched again."""

from __future__ import annotations

from dataclasses import replace

from duespec.coverage import reached
from duespec.model.schedules.requests import IdReq, Res
from duespec.model.schedules.state import (
    RETRY, Execute, ServerState, get_promise, get_task, set_message, set_task, set_task_timeout, tags_get,
)


def task_continue(state: ServerState, req: IdReq, now: int) -> Res:
    t = get_task(state, req.id)
    if t is None:
        reached("T-10.absent")
        return Res(404)
    if t.state != "halted":
        reached("T-10.not_halted")
        return Res(409)
    p = get_promise(state, t.id)
    if p is None:
        reached("T-10.no_promise")
        return Res(404)
    reached("T-10.continued")
    t = replace(t, state="pending")
    set_task(state, t)
    set_task_timeout(state, t.id, RETRY, now + state.config.retry_timeout)
    set_message(state, tags_get(p.tags, "resonate:target") or "", Execute(t.id, t.version),
                "T-10.continued")
    return Res(200)
