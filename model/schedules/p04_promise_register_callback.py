"""P-04 promise.register_callback: the awaiter's task is resumed when the awaited settles.

The awaiter must be a promise with a target (422 otherwise); the callback is kept only
while both promises are pending and before their timeouts."""

from __future__ import annotations

from duespec.coverage import reached
from duespec.model.schedules.projection import timed_out
from duespec.model.schedules.requests import RegisterCallbackReq, Res
from duespec.model.schedules.state import (
    ServerState, add_callback, get_promise, set_promise, tags_has,
)


def promise_register_callback(state: ServerState, req: RegisterCallbackReq, now: int) -> Res:
    awaited = get_promise(state, req.awaited)
    if awaited is None:
        reached("P-04.absent")
        return Res(404)
    awaiter = get_promise(state, req.awaiter)
    if awaiter is None:
        reached("P-04.no_awaiter")
        return Res(422)
    if not tags_has(awaiter.tags, "resonate:target"):
        reached("P-04.awaiter_without_target")
        return Res(422)
    if awaited.state != "pending":
        reached("P-04.already_settled")
        return Res(200, promise=awaited)
    if awaited.timeout_at <= now:
        reached("P-04.projected")
        return Res(200, promise=timed_out(awaited))
    if awaiter.state == "pending" and awaiter.timeout_at > now:
        reached("P-04.registered")
        set_promise(state, add_callback(awaited, req.awaiter))
    else:
        reached("P-04.awaiter_done")
    return Res(200, promise=awaited)

