"""The guard T-03..T-08 share: the task, its live promise, the right state and version.

Inlined in each Lean handler in the same order (404, 409 no promise, 409 state, 409
promise done, 409 version); one function so the handlers cannot drift apart."""

from __future__ import annotations

from duespec.coverage import reached
from duespec.model.schedules.state import PromiseObject, ServerState, TaskObject, get_promise, get_task


def guard(state: ServerState, spec_id: str, id: str, version: int, task_state: str,
          now: int) -> tuple[TaskObject, PromiseObject] | int:
    """The task and its promise when every check passes, else the status to answer."""
    t = get_task(state, id)
    if t is None:
        reached(f"{spec_id}.absent")
        return 404
    p = get_promise(state, t.id)
    if p is None:
        reached(f"{spec_id}.no_promise")
        return 409
    if t.state != task_state:
        reached(f"{spec_id}.wrong_state")
        return 409
    if p.state != "pending" or p.timeout_at <= now:
        reached(f"{spec_id}.promise_done")
        return 409
    if t.version != version:
        reached(f"{spec_id}.stale_version")
        return 409
    return t, p
