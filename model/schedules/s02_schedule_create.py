"""S-02 schedule.create: idempotent by id; a new schedule is armed at its first tick."""

from __future__ import annotations

from duespec.coverage import reached
from duespec.model.schedules.clock import next_run
from duespec.model.schedules.requests import Res, ScheduleCreateReq
from duespec.model.schedules.state import Schedule, ServerState, get_schedule, set_schedule, set_schedule_timeout


def schedule_create(state: ServerState, req: ScheduleCreateReq, now: int) -> Res:
    existing = get_schedule(state, req.id)
    if existing is not None:
        reached("S-02.exists")
        return Res(200, schedule=existing)
    reached("S-02.created")
    reached("X-01.first_after_now")
    s = Schedule(
        id=req.id, cron=req.cron, promise_id=req.promise_id,
        promise_timeout=req.promise_timeout, promise_param=req.promise_param,
        promise_tags=req.promise_tags, created_at=now,
        next_run_at=next_run(req.cron, now), last_run_at=None,
    )
    set_schedule(state, s)
    set_schedule_timeout(state, s.id, s.next_run_at)
    return Res(200, schedule=s)
