"""The time range (spec/schedules.md X-04) and nextCron kept inside it (X-01)."""

from __future__ import annotations

from functools import lru_cache

from duespec.coverage import isolated, reached
from duespec.model.schedules.next_cron import next_cron

#: 9999-12-31T23:59:59.999Z: the last instant `now` or a request time may name.
MAX_TIME = 253_402_300_799_999
#: nextRunAt of a schedule whose next occurrence lies beyond MAX_TIME: no valid now reaches it.
NEVER = MAX_TIME + 1
#: The last instant a request may store (a promise's timeoutAt, a `resonate:delay`): 2^63-1,
#: the int64 every real store keeps times in (the deployed server, resonate-pg's BIGINT,
#: SQLite's INTEGER) and the value real clients send as "never" (spec/schedules.md X-04).
MAX_INSTANT = 2**63 - 1
#: The longest duration a request may name (promiseTimeout, ttl, retry_timeout): every
#: instant derived as `now + duration` (now <= MAX_TIME) must itself fit in MAX_INSTANT, so
#: the sum stays exact where it is stored.
MAX_DURATION = MAX_INSTANT - MAX_TIME


def next_run(cron: str, after: int) -> int:
    """Lean `nextCron cron after` (strictly after), or NEVER past the end of time.

    Pure, so cached (the machine and the properties ask again for ticks catch-up computed);
    the branches it took are reached again on every call, a cached one too, so the tags of
    a step (its divergence class's cause) never depend on what an earlier run computed."""
    following, branches = next_run_memo(cron, after)
    for tag in branches:
        reached(tag)
    return following


@lru_cache(maxsize=1 << 16)
def next_run_memo(cron: str, after: int) -> tuple[int, tuple[str, ...]]:
    """next_run's answer and the branches it took, memoized (the bench clears it)."""
    with isolated() as branches:
        following = NEVER if after >= MAX_TIME else next_cron(cron, after)
    return (following if following <= MAX_TIME else NEVER), tuple(branches.elements())
