"""P-03 promise.settle: settle a pending promise before its timeout; otherwise answer it."""

from __future__ import annotations

from dataclasses import replace

from duespec.coverage import reached
from duespec.model.schedules.projection import timed_out
from duespec.model.schedules.requests import PromiseSettleReq, Res
from duespec.model.schedules.settlement import settle
from duespec.model.schedules.state import ServerState, get_promise


def promise_settle(state: ServerState, req: PromiseSettleReq, now: int) -> Res:
    p = get_promise(state, req.id)
    if p is None:
        reached("P-03.absent")
        return Res(404)
    if p.state != "pending":
        reached("P-03.already_settled")
        return Res(200, promise=p)
    if p.timeout_at <= now:
        reached("P-03.projected")
        return Res(200, promise=timed_out(p))
    reached("P-03.settled")
    settled = settle(state, p, replace(p, state=req.state, value=req.value, settled_at=now), now, "P-03")
    return Res(200, promise=settled)
