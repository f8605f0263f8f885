"""A schedules target whose catch-up is none of the four policies, for tests/test_catch_up.py:
a timer pass fires only the latest missed occurrence (a reading users ask for, "run the last
one"), then goes on from the tick after it."""

from __future__ import annotations

from dataclasses import replace

from duespec.impl.cron import compile_cron
from duespec.impl.schedules import ScheduleServer
from duespec.impl.schedules_records import Schedule, next_run
from duespec.systems.schedules.adapter import ImplTarget


class LatestOnlyServer(ScheduleServer):
    def _catch_up(self, s: Schedule, now: int) -> Schedule:
        if s.next_run_at > now:
            return s
        cron = compile_cron(s.cron)
        latest = s.next_run_at
        for latest in cron.occurrences(s.next_run_at, now):
            pass
        self._create_occurrences(s, [latest], now)
        return replace(s, last_run_at=latest, next_run_at=next_run(cron, latest))


def latest_only() -> ImplTarget:
    return ImplTarget(server=LatestOnlyServer)
