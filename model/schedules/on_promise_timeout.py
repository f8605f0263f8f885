"""TO-01 onPromiseTimeout (Lean 02-timeouts): settle a pending promise at its timeoutAt.

A delivery before timeoutAt is skipped (spec/schedules.md TO-01): the Lean's handler
ignores `now` because its environment delivers only due timeouts, and the Lean's later
commits skip an early one; settling early would store a settledAt in the future."""

from __future__ import annotations

from duespec.coverage import reached
from duespec.model.schedules.projection import timed_out
from duespec.model.schedules.settlement import settle
from duespec.model.schedules.state import ServerState, get_promise


def on_promise_timeout(state: ServerState, id: str, now: int) -> None:
    p = get_promise(state, id)
    if p is None:
        reached("TO-01.absent")
        return
    if p.state != "pending":
        reached("TO-01.not_pending")
        return
    if p.timeout_at > now:
        reached("TO-01.early")
        return
    reached("TO-01.settled")
    settle(state, p, timed_out(p), now, "TO-01")
