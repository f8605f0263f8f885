"""The settlement the Lean inlines three times (P-03 settle, T-07 fulfill, TO-01 timeout).

One function here so the three cannot drift apart: store the settled promise without its
registrations, disarm its timeout, fulfil its task, scrub it from pending promises'
callbacks, unblock each listener and resume each callback, in the Lean's order."""

from __future__ import annotations

from dataclasses import replace

from duespec.coverage import reached
from duespec.model.schedules.enqueue_resume import enqueue_resume
from duespec.model.schedules.state import (
    PromiseObject, ServerState, Unblock, del_promise_timeout, del_task_timeout, get_task,
    note_fulfilled, promises_naming_in_callbacks, set_message, set_promise, set_task,
)


def settle(state: ServerState, pending: PromiseObject, settled: PromiseObject, now: int,
           spec_id: str) -> PromiseObject:
    """`pending` as stored, `settled` its new state/value/settledAt; returns what is stored."""
    listeners, callbacks = pending.listeners, pending.callbacks
    p = replace(settled, callbacks=(), listeners=())
    set_promise(state, p)
    del_promise_timeout(state, p.id)
    t = get_task(state, p.id)
    if t is not None:
        reached(f"{spec_id}.task_fulfilled")
        note_fulfilled(state, t.id, f"{spec_id}.task_fulfilled")
        set_task(state, replace(t, state="fulfilled", pid=None, ttl=None, resumes=()))
        del_task_timeout(state, t.id)
    # Settlement scrub, a direct state update in the Lean: p can never resume anyone.
    for q in promises_naming_in_callbacks(state, p.id):
        if q.state == "pending":
            set_promise(state, replace(q, callbacks=tuple(c for c in q.callbacks if c != p.id)))
    for address in listeners:
        reached(f"{spec_id}.unblocked")
        set_message(state, address, Unblock(p), f"{spec_id}.unblocked")
    for awaiter_id in callbacks:
        reached(f"{spec_id}.resumed")
        enqueue_resume(state, p.id, awaiter_id, now)
    return p
