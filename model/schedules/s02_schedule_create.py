"""S-02 schedule.create: idempotent by id; a new schedule is armed at its first tick.

Profile `deployed` also requires a `resonate:target` in promiseTags (DEP-01), checked
before the lookup like every other 400."""

from __future__ import annotations

from duespec.coverage import reached
from duespec.model.schedules.clock import next_run
from duespec.model.schedules.requests import Res, ScheduleCreateReq
from duespec.model.schedules.state import Schedule, ServerState, get_schedule, set_schedule, set_schedule_timeout


def schedule_create(state: ServerState, req: ScheduleCreateReq, now: int) -> Res:
    if state.config.profile == "deployed" and "resonate:target" not in req.promise_tags:
        reached("DEP-01.missing_target")
        reached("S-02.invalid")
        return Res(400)
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
