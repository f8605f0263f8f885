"""P-01 promise.get: a lookup that projects a pending promise past its timeout."""

from __future__ import annotations

from duespec.coverage import reached
from duespec.model.schedules.projection import timed_out
from duespec.model.schedules.requests import IdReq, Res
from duespec.model.schedules.state import ServerState, get_promise


def promise_get(state: ServerState, req: IdReq, now: int) -> Res:
    p = get_promise(state, req.id)
    if p is None:
        reached("P-01.absent")
        return Res(404)
    if p.state == "pending":
        if p.timeout_at <= now:
            reached("P-01.projected")
            return Res(200, promise=timed_out(p))
        reached("P-01.pending")
        return Res(200, promise=p)
    reached("P-01.settled")
    return Res(200, promise=p)
