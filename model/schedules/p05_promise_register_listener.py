"""P-05 promise.register_listener: an address told (unblock) when the awaited settles."""

from __future__ import annotations

from duespec.coverage import reached
from duespec.model.schedules.projection import timed_out
from duespec.model.schedules.requests import RegisterListenerReq, Res
from duespec.model.schedules.state import ServerState, add_listener, get_promise, set_promise


def promise_register_listener(state: ServerState, req: RegisterListenerReq, now: int) -> Res:
    awaited = get_promise(state, req.awaited)
    if awaited is None:
        reached("P-05.absent")
        return Res(404)
    if awaited.state != "pending":
        reached("P-05.already_settled")
        return Res(200, promise=awaited)
    if awaited.timeout_at <= now:
        reached("P-05.projected")
        return Res(200, promise=timed_out(awaited))
    reached("P-05.registered")
    awaited = add_listener(awaited, req.address)
    set_promise(state, awaited)
    return Res(200, promise=awaited)
