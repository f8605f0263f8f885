"""TO-02 catchUp (Lean 02-timeouts): one promiseCreate per missed occurrence, oldest first.

The Lean recurses once per occurrence; a loop here, so a year of minutely ticks does not
exhaust Python's stack. The `now` handed to promiseCreate is the one reading the spec
leaves open (X-05): the occurrence's own cronTime under profile `lean`, the real firing
time under profile `server`. Profile `deployed` (DEP-02, DEP-03) fires only the earliest
owed occurrence per pass, as the deployed Rust server does.

Under profiles lean and server the config names a catch-up policy (spec/schedules.md, "Catch-up policies"): `all`
is the loop above, the Lean's; `one-per-pass`, `once-skip` and `never` are the other
readings servers implement on purpose, each one branch below."""

from __future__ import annotations

from dataclasses import replace

from duespec.coverage import reached
from duespec.model.schedules.clock import NEVER, next_run
from duespec.model.schedules.expand import expand
from duespec.model.schedules.p02_promise_create import promise_create
from duespec.model.schedules.requests import PromiseCreateReq
from duespec.model.schedules.state import (
    RETRY, Execute, PromiseObject, Schedule, ServerState, TaskObject, get_promise, is_timer,
    set_message, set_promise, set_promise_timeout, set_task, set_task_timeout, tags_get,
)

#: Tags the deployed server adds to every occurrence's promise (DEP-03): the schedule's id,
#: and the promise's own id as its origin, branch, parent and prefix.
DEPLOYED_LINEAGE_TAGS = ("resonate:origin", "resonate:branch", "resonate:parent", "resonate:prefix")


def catch_up(state: ServerState, now: int, s: Schedule) -> Schedule:
    if state.config.profile == "deployed":
        return deployed_pass(state, now, s)
    policy = state.config.catch_up
    if policy == "one-per-pass":
        return one_per_pass(state, now, s)
    if policy == "once-skip":
        return once_skip(state, now, s)
    if policy == "never":
        return never(s)
    while s.next_run_at <= now:  # all: the Lean's loop
        cron_time = s.next_run_at
        create_occurrence(state, s, cron_time, now)
        reached("X-01.next_after_cron_time")
        s = replace(s, last_run_at=cron_time, next_run_at=next_run(s.cron, cron_time))
    return caught_up(s)


def create_occurrence(state: ServerState, s: Schedule, cron_time: int, now: int) -> None:
    """The Lean's promiseCreate of one occurrence, at the `now` of X-05."""
    reached("TO-02.occurrence")
    promise_id = expand(s.promise_id, s.id, cron_time)
    if state.config.profile == "lean":
        reached("X-05.lean_now_is_cron_time")
        create_now = cron_time
    else:
        reached("X-05.server_now_is_firing_time")
        create_now = now
    promise_create(state, PromiseCreateReq(
        id=promise_id, timeout_at=cron_time + s.promise_timeout,
        param=s.promise_param, tags=s.promise_tags), create_now)


def caught_up(s: Schedule) -> Schedule:
    if s.next_run_at == NEVER:
        reached("X-04.end_of_time")
    reached("TO-02.caught_up")
    return s


def one_per_pass(state: ServerState, now: int, s: Schedule) -> Schedule:
    """one-per-pass: only the earliest owed occurrence; the next one, due or not, waits for the
    next timer pass (ENV-01 delivers a schedule's timeout at most once per tick)."""
    if s.next_run_at <= now:
        reached("TO-02.one_per_pass")
        cron_time = s.next_run_at
        create_occurrence(state, s, cron_time, now)
        reached("X-01.next_after_cron_time")
        s = replace(s, last_run_at=cron_time, next_run_at=next_run(s.cron, cron_time))
        if s.next_run_at <= now:
            reached("TO-02.still_owed")
    return caught_up(s)


def once_skip(state: ServerState, now: int, s: Schedule) -> Schedule:
    """once-skip: the occurrence the timer was armed for fires once; every later missed one is
    skipped, and the next run is computed from the firing time."""
    if s.next_run_at <= now:
        reached("TO-02.once_skip")
        cron_time = s.next_run_at
        create_occurrence(state, s, cron_time, now)
        if next_run(s.cron, cron_time) <= now:
            reached("TO-02.skipped")
        s = replace(s, last_run_at=cron_time, next_run_at=next_run(s.cron, now))
    return caught_up(s)


def never(s: Schedule) -> Schedule:
    """never: a schedule is a record that never fires: nothing is created, the schedule
    stays as it was (its timeout re-armed where it stood)."""
    reached("TO-02.never")
    return s


def deployed_pass(state: ServerState, now: int, s: Schedule) -> Schedule:
    """DEP-02: one occurrence (the earliest owed) per pass, created as DEP-03 says."""
    if s.next_run_at > now:
        reached("TO-02.caught_up")
        return s
    reached("TO-02.occurrence")
    reached("DEP-02.one_occurrence")
    cron_time = s.next_run_at
    deployed_occurrence(state, s, cron_time, now)
    reached("X-01.next_after_cron_time")
    s = replace(s, last_run_at=cron_time, next_run_at=next_run(s.cron, cron_time))
    if s.next_run_at <= now:
        reached("DEP-02.still_owed")
    if s.next_run_at == NEVER:
        reached("X-04.end_of_time")
    reached("TO-02.caught_up")
    return s


def deployed_occurrence(state: ServerState, s: Schedule, cron_time: int, now: int) -> None:
    """DEP-03: the deployed server's occurrence. Created at its cronTime; expired iff the
    firing time has reached cronTime + promiseTimeout (then settled at its timeout, task
    fulfilled); else pending with its promise timeout, a task retried at now +
    retry_timeout and an execute message at once, `resonate:delay` notwithstanding.
    An id already taken creates nothing."""
    promise_id = expand(s.promise_id, s.id, cron_time)
    if get_promise(state, promise_id) is not None:
        reached("DEP-03.exists")
        return
    tags = {**s.promise_tags, "resonate:schedule": s.id,
            **{key: promise_id for key in DEPLOYED_LINEAGE_TAGS}}
    timeout_at = cron_time + s.promise_timeout
    target = tags_get(tags, "resonate:target")
    if now >= timeout_at:
        reached("DEP-03.expired_at_firing")
        set_promise(state, PromiseObject(
            id=promise_id, state="resolved" if is_timer(tags) else "rejected_timedout",
            param=s.promise_param, tags=tags, timeout_at=timeout_at, created_at=cron_time,
            settled_at=timeout_at))
        if target is not None:
            set_task(state, TaskObject(id=promise_id, state="fulfilled", version=0))
        return
    reached("DEP-03.pending")
    set_promise(state, PromiseObject(id=promise_id, state="pending", param=s.promise_param, tags=tags,
                                     timeout_at=timeout_at, created_at=cron_time))
    if target is None:
        return
    set_promise_timeout(state, promise_id, timeout_at)
    set_task(state, TaskObject(id=promise_id, state="pending", version=0))
    set_task_timeout(state, promise_id, RETRY, now + state.config.retry_timeout)
    set_message(state, target, Execute(promise_id, 0), "DEP-03.pending")
