"""Catch-up and tick throughput of the production schedules server, for `duespec bench`.

The question is whether a long outage is survivable: one year of minutely ticks is
525,600 promise.create calls in one handler. Each figure is set beside the naive way of
doing the same work measured in the same run: one promise.create (or promise.timeout)
handler call per occurrence. Run alone: `python -m duespec.bench.schedules_store [--quick]`.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

from duespec.bench import Figure
from duespec.impl.schedules import ScheduleServer

SECTION = "schedules impl: catch-up after an outage"
T0 = 1_735_689_600_000  # 2025-01-01T00:00:00Z
MIN = 60_000
TARGET = {"resonate:target": "poll://any@workers"}
EMPTY = {"headers": {}, "data": None}


def outage(server: ScheduleServer, minutes: int) -> tuple[float, float, float]:
    """Seconds to catch up `minutes` minutely ticks (and the CPU seconds of that), then
    seconds to time all their promises out."""
    server.handle("schedule.create", {
        "id": "s", "cron": "* * * * *", "promiseId": "{{.id}}.{{.timestamp}}", "promiseTimeout": 30_000,
        "promiseParam": EMPTY, "promiseTags": TARGET}, T0)
    end = T0 + minutes * MIN
    started, cpu_started = time.perf_counter(), time.process_time()
    server.handle("schedule.timeout", {"id": "s"}, end)
    caught_up, cpu = time.perf_counter(), time.process_time() - cpu_started
    fired = server.handle("tick", {}, end + MIN - 1)["fired"]
    settled = time.perf_counter()
    assert len(fired) == minutes, f"{len(fired)} promise timeouts for {minutes} occurrences"
    return caught_up - started, cpu, settled - caught_up


def one_at_a_time(server: ScheduleServer, count: int) -> tuple[float, float]:
    """Seconds for the same work as `count` separate promise.create and promise.timeout calls."""
    started = time.perf_counter()
    for k in range(1, count + 1):
        cron_time = T0 + k * MIN
        server.handle("promise.create", {"id": f"s.{cron_time}", "timeoutAt": cron_time + 30_000,
                                         "param": EMPTY, "tags": TARGET}, cron_time)
    created = time.perf_counter()
    for k in range(1, count + 1):
        server.handle("promise.timeout", {"id": f"s.{T0 + k * MIN}"}, T0 + (count + 1) * MIN)
    return created - started, time.perf_counter() - created


def figures(quick: bool) -> list[Figure]:
    minutes = 30 * 1440 if quick else 365 * 1440
    result: list[Figure] = []
    with tempfile.TemporaryDirectory() as folder:
        # On a file each one-at-a-time call waits for its own fsync: fewer of them suffice.
        stores = (("in memory", ":memory:", 2_000 if quick else 20_000),
                  ("file, WAL", os.path.join(folder, "s.db"), 200 if quick else 2_000))
        for where, path, naive_count in stores:
            server = ScheduleServer(path)
            catch_up_s, catch_up_cpu_s, tick_s = outage(server, minutes)
            server.close()
            naive = ScheduleServer(path if path == ":memory:" else os.path.join(folder, "naive.db"))
            create_s, timeout_s = one_at_a_time(naive, naive_count)
            naive.close()
            result.append(Figure(
                SECTION, f"catch-up, {minutes:,} minutely ticks, targeted ({where})", minutes / catch_up_s,
                "occurrences/s", "one promise.create call per occurrence", naive_count / create_s,
                note=f"catch-up took {catch_up_s:.2f} s ({catch_up_cpu_s:.2f} s CPU)"))
            result.append(Figure(
                SECTION, f"tick timing out {minutes:,} promises ({where})", minutes / tick_s,
                "firings/s", "one promise.timeout call per promise", naive_count / timeout_s,
                note=f"tick took {tick_s:.2f} s"))
    return result


def main(argv: list[str]) -> int:
    print(f"[{SECTION}]")
    for figure in figures(quick="--quick" in argv):
        print(figure.render(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
