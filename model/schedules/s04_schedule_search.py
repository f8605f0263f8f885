"""S-04 schedule.search: not implemented at 83d64c3, whatever the request."""

from __future__ import annotations

from duespec.coverage import reached
from duespec.model.schedules.requests import Res
from duespec.model.schedules.state import ServerState


def schedule_search(state: ServerState, now: int) -> Res:
    reached("S-04.not_implemented")
    return Res(501)
