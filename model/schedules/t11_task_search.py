"""T-11 task.search: not implemented at 83d64c3, whatever the request."""

from __future__ import annotations

from duespec.coverage import reached
from duespec.model.schedules.requests import Res
from duespec.model.schedules.state import ServerState


def task_search(state: ServerState, now: int) -> Res:
    reached("T-11.not_implemented")
    return Res(501)
