"""S-01 schedule.get: a pure lookup."""

from __future__ import annotations

from duespec.coverage import reached
from duespec.model.schedules.requests import IdReq, Res
from duespec.model.schedules.state import ServerState, get_schedule


def schedule_get(state: ServerState, req: IdReq, now: int) -> Res:
    s = get_schedule(state, req.id)
    if s is None:
        reached("S-01.absent")
        return Res(404)
    reached("S-01.found")
    return Res(200, schedule=s)
