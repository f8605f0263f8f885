"""ENV-01 tick: the environment the Lean leaves out, firing whatever timeout is due.

The Lean has no dispatcher; docs/operations.md fixes one so two targets can be compared.
First the promise and schedule timeouts, smallest (timeout, kind, id) first, promise
before schedule, until none is due, each schedule's at most once a tick (a tick is one
timer pass: under the catch-up policies one-per-pass and never a fired schedule stays due;
under all and once-skip it is re-armed after now, so the rule never bites); then the task
timeouts, smallest (timeout, id, kind) first: each one due when that phase starts, once.
Promise timeouts go first because a task whose promise is due is moot: its timeout settles the promise and fulfils the task (disarming its timeouts),
where a retry or a lapsed lease would dispatch work nobody may do any more. Task timeouts
arm nothing but a retry at now + retry_timeout (> now: the config requires >= 1) and touch
no other task, so one pass leaves nothing due. Profile `deployed` makes one pass of
promise and schedule timeouts instead (DEP-02) and fires no task timeouts."""

from __future__ import annotations

from typing import Iterator

from duespec.coverage import reached
from duespec.model.schedules.on_promise_timeout import on_promise_timeout
from duespec.model.schedules.on_schedule_timeout import on_schedule_timeout
from duespec.model.schedules.on_task_lease_timeout import on_task_lease_timeout
from duespec.model.schedules.on_task_retry_timeout import on_task_retry_timeout
from duespec.model.schedules.state import LEASE, RETRY, ServerState, begin_transition

#: Firing order of the kinds when two timeouts fall on the same instant.
KIND_ORDER = {"promise": 0, "schedule": 1}
#: How a fired task timeout is named in `fired`, by Lean TaskTimeout.kind.
TASK_KIND_NAMES = {RETRY: "retry", LEASE: "lease"}


def due_in_order(state: ServerState, now: int, fired_schedules: set[str]) -> Iterator[tuple[str, str]]:
    """The promise and schedule timeouts to fire, one at a time: each time, the smallest
    (timeout, kind, id) due then, a schedule at most once. Only a schedule's firing can arm
    another due timeout (its catch-up creates promises, each with its own); a promise's
    firing disarms that promise's alone. So the due list is read anew after a schedule
    fires, and otherwise taken in order, each entry fired only if still armed as listed
    (one pass over the timeouts per schedule fired, not per timeout fired)."""
    while True:
        due = sorted([(timeout, KIND_ORDER["promise"], id) for id, timeout in state.promise_timeouts.items()
                      if timeout <= now]
                     + [(timeout, KIND_ORDER["schedule"], id) for id, timeout in state.schedule_timeouts.items()
                        if timeout <= now and id not in fired_schedules])
        for timeout, kind, id in due:
            if kind == KIND_ORDER["promise"]:
                if state.promise_timeouts.get(id) == timeout:
                    yield "promise", id
            elif state.schedule_timeouts.get(id) == timeout and id not in fired_schedules:
                yield "schedule", id
                break  # what its catch-up armed is read with the rest
        else:
            return


def due_tasks(state: ServerState, now: int) -> list[tuple[str, int]]:
    """(id, kind) of every due task timeout, in firing order."""
    return [(id, kind) for _, id, kind in sorted(
        (timeout, id, kind) for (id, kind), timeout in state.task_timeouts.items() if timeout <= now)]


def tick(state: ServerState, now: int) -> list[dict[str, str]]:
    if state.config.profile == "deployed":
        return deployed_tick(state, now)
    fired = []
    fired_schedules: set[str] = set()
    for kind, id in due_in_order(state, now, fired_schedules):
        begin_transition(state)
        if kind == "promise":
            reached("ENV-01.promise")
            on_promise_timeout(state, id, now)
        else:
            reached("ENV-01.schedule")
            on_schedule_timeout(state, id, now)
            fired_schedules.add(id)
        fired.append({"kind": kind, "id": id})
    for id, task_kind in due_tasks(state, now):
        begin_transition(state)
        if task_kind == RETRY:
            reached("ENV-01.retry")
            on_task_retry_timeout(state, id, now)
        else:
            reached("ENV-01.lease")
            on_task_lease_timeout(state, id, now)
        fired.append({"kind": TASK_KIND_NAMES[task_kind], "id": id})
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
        begin_transition(state)
        on_promise_timeout(state, id, now)
        fired.append({"kind": "promise", "id": id})
    for timeout, id in sorted((t, id) for id, t in state.schedule_timeouts.items() if t <= now):
        reached("ENV-01.schedule")
        begin_transition(state)
        on_schedule_timeout(state, id, now)
        fired.append({"kind": "schedule", "id": id})
    if not fired:
        reached("ENV-01.idle")
    return fired
