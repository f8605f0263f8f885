"""TO-01 onPromiseTimeout (Lean 02-timeouts): settle a pending promise at its timeoutAt."""

from __future__ import annotations

from dataclasses import replace

from duespec.coverage import reached
from duespec.model.schedules.enqueue_resume import enqueue_resume
from duespec.model.schedules.projection import timed_out
from duespec.model.schedules.state import (
    ServerState, Unblock, del_promise_timeout, del_task_timeout, get_promise, get_task,
    set_message, set_promise, set_task,
)


def on_promise_timeout(state: ServerState, id: str, now: int) -> None:
    p = get_promise(state, id)
    if p is None:
        reached("TO-01.absent")
        return
    if p.state != "pending":
        reached("TO-01.not_pending")
        return
    reached("TO-01.settled")
    listeners, callbacks = p.listeners, p.callbacks
    p = replace(timed_out(p), callbacks=(), listeners=())
    set_promise(state, p)
    del_promise_timeout(state, p.id)
    t = get_task(state, p.id)
    if t is not None:
        reached("TO-01.task_fulfilled")
        set_task(state, replace(t, state="fulfilled", pid=None, ttl=None, resumes=()))
        del_task_timeout(state, t.id)
    # Settlement scrub, inlined in the Lean as a direct state update: p can never resume anyone.
    for q in list(state.promises.values()):
        if q.state == "pending" and p.id in q.callbacks:
            state.promises[q.id] = replace(q, callbacks=tuple(c for c in q.callbacks if c != p.id))
    for address in listeners:
        set_message(state, address, Unblock(p))
    for awaiter_id in callbacks:
        enqueue_resume(state, p.id, awaiter_id, now)
