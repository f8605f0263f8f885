"""What durability costs the production schedules server: catch-up and tick on a SQLite
file (WAL) against the same work in memory, alternated.

A year of minutely ticks (7 days in quick mode) is caught up by one schedule.timeout,
then one tick times all its promises out. The in-memory catch-up is set against the
reference model in the schedules section; here the question is what the file adds.
Run alone: `python -m duespec.bench.schedules_store [--quick]`."""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Callable

from duespec.bench import Figure, Sample, alternate, ratio_figure, timed
from duespec.impl.schedules import ScheduleServer

SECTION = "schedules impl: catch-up after an outage, on a file"
T0 = 1_735_689_600_000  # 2025-01-01T00:00:00Z
MIN = 60_000
TARGET = {"resonate:target": "poll://any@workers"}
EMPTY = {"headers": {}, "data": None}


def outage(path: Callable[[], str], minutes: int, part: str) -> Callable[[], Sample]:
    """Catch up `minutes` minutely ticks, then time them all out; time `part` of it."""
    def measure() -> Sample:
        server = ScheduleServer(path())
        try:
            server.handle("schedule.create", {
                "id": "s", "cron": "* * * * *", "promiseId": "{{.id}}.{{.timestamp}}",
                "promiseTimeout": 30_000, "promiseParam": EMPTY, "promiseTags": TARGET}, T0)
            end = T0 + minutes * MIN

            def catch_up() -> int:
                server.handle("schedule.timeout", {"id": "s"}, end)
                return minutes

            def tick() -> int:
                fired = server.handle("tick", {}, end + MIN - 1)["fired"]
                assert len(fired) == minutes, f"{len(fired)} promise timeouts for {minutes} occurrences"
                return minutes
            caught = timed(catch_up)
            ticked = timed(tick)
            return caught if part == "catch-up" else ticked
        finally:
            server.close()
    return measure


def figures(quick: bool) -> list[Figure]:
    minutes = 7 * 1440 if quick else 365 * 1440
    result: list[Figure] = []
    with tempfile.TemporaryDirectory() as folder:
        counter = iter(range(1_000_000))

        def fresh_file() -> str:
            return os.path.join(folder, f"s{next(counter)}.db")

        for part in ("catch-up", "tick"):
            on_file, in_memory = alternate([outage(fresh_file, minutes, part),
                                            outage(lambda: ":memory:", minutes, part)])
            result.append(ratio_figure(
                SECTION, f"{part}, {minutes:,} minutely ticks: file (WAL) / in-memory time", on_file,
                in_memory, baseline="the same server in memory",
                note="catch-up: one schedule.timeout owing every tick; tick: timing every promise out"))
    return result


def main(argv: list[str]) -> int:
    print(f"[{SECTION}]")
    for figure in figures(quick="--quick" in argv):
        print(figure.render(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
