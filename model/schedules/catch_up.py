"""TO-02 catchUp (Lean 02-timeouts): one promiseCreate per missed occurrence, oldest first.

The Lean recurses once per occurrence; a loop here, so a year of minutely ticks does not
exhaust Python's stack. The `now` handed to promiseCreate is the one reading the spec
leaves open (X-05): the occurrence's own cronTime under profile `lean`, the real firing
time under profile `server`."""

from __future__ import annotations

from dataclasses import replace

from duespec.coverage import reached
from duespec.model.schedules.clock import NEVER, next_run
from duespec.model.schedules.expand import expand
from duespec.model.schedules.p02_promise_create import promise_create
from duespec.model.schedules.requests import PromiseCreateReq
from duespec.model.schedules.state import Schedule, ServerState


def catch_up(state: ServerState, now: int, s: Schedule) -> Schedule:
    while s.next_run_at <= now:
        reached("TO-02.occurrence")
        cron_time = s.next_run_at
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
        reached("X-01.next_after_cron_time")
        s = replace(s, last_run_at=cron_time, next_run_at=next_run(s.cron, cron_time))
    if s.next_run_at == NEVER:
        reached("X-04.end_of_time")
    reached("TO-02.caught_up")
    return s
