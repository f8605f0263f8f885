"""ENV-01 tick: the environment the Lean leaves out, firing whatever timeout is due.

The Lean has no dispatcher; docs/operations.md fixes one so two targets can be compared:
smallest (timeout, kind, id) first, promise before schedule, until nothing is due. Task
timeouts are not fired: their handlers are outside the schedules scope. Profile `deployed`
makes one pass instead (DEP-02)."""

from __future__ import annotations

from duespec.coverage import reached
from duespec.model.schedules.on_promise_timeout import on_promise_timeout
from duespec.model.schedules.on_schedule_timeout import on_schedule_timeout
from duespec.model.schedules.state import ServerState

#: Firing order of the kinds when two timeouts fall on the same instant.
KIND_ORDER = {"promise": 0, "schedule": 1}


def next_due(state: ServerState, now: int) -> tuple[str, str] | None:
    due = [(timeout, KIND_ORDER["promise"], id) for id, timeout in state.promise_timeouts.items()
           if timeout <= now]
    due += [(timeout, KIND_ORDER["schedule"], id) for id, timeout in state.schedule_timeouts.items()
            if timeout <= now]
    if not due:
        return None
    _, kind, id = min(due)
    return ("promise" if kind == KIND_ORDER["promise"] else "schedule", id)


def tick(state: ServerState, now: int) -> list[dict[str, str]]:
    if state.config.profile == "deployed":
        return deployed_tick(state, now)
    fired = []
    while (due := next_due(state, now)) is not None:
        kind, id = due
        if kind == "promise":
            reached("ENV-01.promise")
            on_promise_timeout(state, id, now)
        else:
            reached("ENV-01.schedule")
            on_schedule_timeout(state, id, now)
        fired.append({"kind": kind, "id": id})
    if not fired:
        reached("ENV-01.idle")
    return fired


def deployed_tick(state: ServerState, now: int) -> list[dict[str, str]]:
    """DEP-02: one pass, as the deployed server's timeout processing: every due promise
    timeout, then every schedule due at the start of the pass once, by (timeout, id). A
    schedule that still owes occurrences stays due for the next pass."""
    fired = []
    for timeout, id in sorted((t, id) for id, t in state.promise_timeouts.items() if t <= now):
        reached("ENV-01.promise")
        on_promise_timeout(state, id, now)
        fired.append({"kind": "promise", "id": id})
    for timeout, id in sorted((t, id) for id, t in state.schedule_timeouts.items() if t <= now):
        reached("ENV-01.schedule")
        on_schedule_timeout(state, id, now)
        fired.append({"kind": "schedule", "id": id})
    if not fired:
        reached("ENV-01.idle")
    return fired
