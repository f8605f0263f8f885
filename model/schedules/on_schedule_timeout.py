"""TO-03 onScheduleTimeout (Lean 02-timeouts): catch up, store, re-arm at the next tick."""

from __future__ import annotations

from duespec.coverage import reached
from duespec.model.schedules.catch_up import catch_up
from duespec.model.schedules.state import (
    ServerState, del_schedule_timeout, get_schedule, set_schedule, set_schedule_timeout,
)


def on_schedule_timeout(state: ServerState, id: str, now: int) -> None:
    s0 = get_schedule(state, id)
    if s0 is None:
        reached("TO-03.absent")
        return
    reached("TO-03.fired")
    s = catch_up(state, now, s0)
    set_schedule(state, s)
    del_schedule_timeout(state, s.id)
    set_schedule_timeout(state, s.id, s.next_run_at)
