"""TO-05 onTaskLeaseTimeout (Lean 02-timeouts): a holder that stopped heartbeating loses
the task, which is pending again and dispatched (at the same version: the next acquire
bumps it, fencing the old holder out)."""

from __future__ import annotations

from dataclasses import replace

from duespec.coverage import reached
from duespec.model.schedules.state import (
    RETRY, Execute, ServerState, del_task_timeout, get_promise, get_task, set_message, set_task,
    set_task_timeout, tags_get,
)


def on_task_lease_timeout(state: ServerState, id: str, now: int) -> None:
    t = get_task(state, id)
    if t is None:
        reached("TO-05.absent")
        return
    if t.state != "acquired":
        reached("TO-05.not_acquired")
        return
    reached("TO-05.lapsed")
    t = replace(t, state="pending", pid=None, ttl=None)
    set_task(state, t)
    del_task_timeout(state, t.id)
    set_task_timeout(state, t.id, RETRY, now + state.config.retry_timeout)
    p = get_promise(state, t.id)
    if p is not None:
        set_message(state, tags_get(p.tags, "resonate:target") or "", Execute(t.id, t.version),
                    "TO-05.lapsed")
