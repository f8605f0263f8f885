"""The time range (spec/schedules.md X-04) and nextCron kept inside it (X-01)."""

from __future__ import annotations

from functools import lru_cache

from duespec.model.schedules.next_cron import next_cron

#: 9999-12-31T23:59:59.999Z: the last instant `now` or a request time may name.
MAX_TIME = 253_402_300_799_999
#: nextRunAt of a schedule whose next occurrence lies beyond MAX_TIME: no valid now reaches it.
NEVER = MAX_TIME + 1


@lru_cache(maxsize=1 << 16)
def next_run(cron: str, after: int) -> int:
    """Lean `nextCron cron after` (strictly after), or NEVER past the end of time.

    Pure, so cached: the machine and the properties ask again for ticks catch-up computed."""
    if after >= MAX_TIME:
        return NEVER
    following = next_cron(cron, after)
    return following if following <= MAX_TIME else NEVER
