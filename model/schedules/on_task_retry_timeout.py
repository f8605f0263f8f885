"""TO-04 onTaskRetryTimeout (Lean 02-timeouts): a pending task nobody took is dispatched
again and its retry re-armed."""

from __future__ import annotations

from duespec.coverage import reached
from duespec.model.schedules.state import (
    RETRY, Execute, ServerState, del_task_timeout, get_promise, get_task, set_message,
    set_task_timeout, tags_get,
)


def on_task_retry_timeout(state: ServerState, id: str, now: int) -> None:
    t = get_task(state, id)
    if t is None:
        reached("TO-04.absent")
        return
    if t.state != "pending":
        reached("TO-04.not_pending")
        return
    reached("TO-04.redispatched")
    del_task_timeout(state, t.id)
    set_task_timeout(state, t.id, RETRY, now + state.config.retry_timeout)
    p = get_promise(state, t.id)
    if p is not None:
        set_message(state, tags_get(p.tags, "resonate:target") or "", Execute(t.id, t.version),
                    "TO-04.redispatched")
