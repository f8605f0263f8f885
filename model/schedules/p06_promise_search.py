"""P-06 promise.search: not implemented at 83d64c3, whatever the request."""

from __future__ import annotations

from duespec.coverage import reached
from duespec.model.schedules.requests import Res
from duespec.model.schedules.state import ServerState


def promise_search(state: ServerState, now: int) -> Res:
    reached("P-06.not_implemented")
    return Res(501)
