"""T-08 task.release: the holder gives the task back; it is pending and dispatched again."""

from __future__ import annotations

from dataclasses import replace

from duespec.coverage import reached
from duespec.model.schedules.fencing import guard
from duespec.model.schedules.requests import Res, TaskVersionReq
from duespec.model.schedules.state import (
    RETRY, Execute, ServerState, del_task_timeout, set_message, set_task, set_task_timeout, tags_get,
)


def task_release(state: ServerState, req: TaskVersionReq, now: int) -> Res:
    checked = guard(state, "T-08", req.id, req.version, "acquired", now)
    if isinstance(checked, int):
        return Res(checked)
    t, p = checked
    reached("T-08.released")
    t = replace(t, state="pending", pid=None, ttl=None)
    set_task(state, t)
    del_task_timeout(state, t.id)
    set_task_timeout(state, t.id, RETRY, now + state.config.retry_timeout)
    set_message(state, tags_get(p.tags, "resonate:target") or "", Execute(t.id, t.version),
                "T-08.released")
    return Res(200)
