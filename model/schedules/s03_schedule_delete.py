"""S-03 schedule.delete: the record and its timeout go together, or neither does."""

from __future__ import annotations

from duespec.coverage import reached
from duespec.model.schedules.requests import IdReq, Res
from duespec.model.schedules.state import ServerState, del_schedule, del_schedule_timeout, get_schedule


def schedule_delete(state: ServerState, req: IdReq, now: int) -> Res:
    s = get_schedule(state, req.id)
    if s is None:
        reached("S-03.absent")
        return Res(404)
    reached("S-03.deleted")
    del_schedule(state, s.id)
    del_schedule_timeout(state, s.id)
    return Res(200)
