"""SIGKILL durability of the file-backed schedules store, against the model.

A forked child opens the store file and applies a fixed, seeded sequence of schedules
operations (creates, deletes, promise creates, ticks whose catch-ups fire hundreds of
occurrences in one transaction), writing "begin i" before and "ack i" after each to a
pipe. The parent kills it with SIGKILL, either a few hundred microseconds after it began
an operation (so the kill lands inside the handler's transaction or its commit) or at a
random moment, then reopens the file, runs PRAGMA integrity_check and compares the whole
observable state with the model after exactly the acknowledged operations, or those plus
the one in flight. Anything else is a lost or half-applied operation. The next child
carries on from what is on disk.

    python tests/store_crash.py --kills 1000 [--seed N]    # the bigger run (make crash-test)
"""

from __future__ import annotations

import argparse
import os
import random
import select
import signal
import sqlite3
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from duespec.impl.schedules import ScheduleServer
from duespec.systems.schedules import ModelTarget

START = 1_767_225_600_000  # 2026-01-01T00:00:00Z
MINUTE = 60_000
CONFIG = {"profile": "lean", "retry_timeout": 5000}
CRONS = ("* * * * *", "*/5 * * * *", "0 * * * *", "*/2 * * * *")

Op = tuple[str, dict[str, Any], int]


def operations(seed: int, count: int) -> list[Op]:
    """A seeded stream of operations whose catch-ups stay in the hundreds of occurrences."""
    rng = random.Random(seed)
    now, ops = START, []
    for n in range(count):
        kind = rng.random()
        sid = f"s{rng.randrange(6)}"
        if kind < 0.25:
            ops.append(("schedule.create", {
                "id": sid, "cron": rng.choice(CRONS), "promiseId": "{{.id}}.{{.timestamp}}",
                "promiseTimeout": rng.choice((MINUTE, 3 * MINUTE, 60 * MINUTE)),
                "promiseParam": {"headers": {}, "data": None}, "promiseTags": {}}, now))
        elif kind < 0.37:
            ops.append(("schedule.delete", {"id": sid}, now))
        elif kind < 0.45:
            ops.append(("promise.create", {"id": f"p{n}", "timeoutAt": now + rng.choice((1, MINUTE, 9 * MINUTE)),
                                           "param": {"headers": {}, "data": None}, "tags": {}}, now))
        elif kind < 0.55:
            ops.append(("schedule.timeout", {"id": sid}, now))
        else:
            now += rng.choice((1000, MINUTE, 3 * MINUTE, 7 * MINUTE, 7 * MINUTE, 120 * MINUTE))
            ops.append(("tick", {}, now))
    return ops


@dataclass
class CrashReport:
    kills: int = 0
    #: Kills that landed while an operation was in flight (begun, not acknowledged).
    in_flight: int = 0
    #: ...of which the in-flight operation turned out applied (its commit made it).
    in_flight_applied: int = 0
    operations_applied: int = 0
    problems: list[str] = field(default_factory=list)


def _child(path: str, ops: list[Op], start: int, write_fd: int) -> None:
    """Apply ops[start:] to the store, reporting each; never returns."""
    try:
        server = ScheduleServer(path)
        for index in range(start, len(ops)):
            op, args, now = ops[index]
            os.write(write_fd, b"b%d\n" % index)
            server.handle(op, args, now)
            os.write(write_fd, b"a%d\n" % index)
        server.close()
        os.write(write_fd, b"done\n")
    finally:
        os._exit(0)


def _read_until_killed(read_fd: int, pid: int, rng: random.Random, start: int) -> tuple[int, int | None]:
    """Kill the child per the plan; return (ops acknowledged, op in flight or None)."""
    acked, begun = start, None
    buffer = b""
    aim = start + rng.randrange(4)  # kill inside this op's handler...
    deadline = time.monotonic() + rng.uniform(0.0, 0.03)  # ...or at this moment
    inside = rng.random() < 0.6
    done = False
    while True:
        wait = 0.5 if inside else max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select([read_fd], [], [], wait)
        if ready:
            chunk = os.read(read_fd, 65536)
            if not chunk:
                done = True
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if line.startswith(b"b"):
                    begun = int(line[1:])
                elif line.startswith(b"a"):
                    acked, begun = int(line[1:]) + 1, None
                elif line == b"done":
                    done = True
            if inside and begun is not None and begun >= aim:
                time.sleep(rng.choice((0.0, 0.0005, 0.001, 0.002, 0.005, 0.02)) * rng.random())
                break
            if done:
                break
        elif not inside or time.monotonic() > deadline + 5:
            break
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    for line in (buffer + _drain(read_fd)).split(b"\n"):  # what was written before the kill
        if line.startswith(b"b"):
            begun = int(line[1:])
        elif line.startswith(b"a"):
            acked, begun = int(line[1:]) + 1, None
    return acked, (None if done else begun)


def _drain(fd: int) -> bytes:
    data = b""
    while select.select([fd], [], [], 0)[0]:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        data += chunk
    return data


#: Kills per store file: a fresh file (and model) after each, so states stay small and
#: reopening and comparing them stays cheap however many kills are asked for.
KILLS_PER_FILE = 20


def run(kills: int, seed: int = 0, directory: str | None = None) -> CrashReport:
    rng = random.Random(seed)
    report = CrashReport()
    with tempfile.TemporaryDirectory(dir=directory) as workdir:
        for segment in range(0, kills, KILLS_PER_FILE):
            ops = operations(seed * 100_003 + segment, 40 * KILLS_PER_FILE + 200)
            path = str(Path(workdir) / f"schedules-{segment}.db")
            ScheduleServer(path, profile="lean", retry_timeout=CONFIG["retry_timeout"]).close()
            model = ModelTarget()
            model.reset(dict(CONFIG))
            applied = 0  # ops on disk, and in the model
            for _ in range(min(KILLS_PER_FILE, kills - segment)):
                if applied >= len(ops):
                    break
                read_fd, write_fd = os.pipe()
                pid = os.fork()
                if pid == 0:
                    os.close(read_fd)
                    _child(path, ops, applied, write_fd)
                os.close(write_fd)
                try:
                    acked, in_flight = _read_until_killed(read_fd, pid, rng, applied)
                finally:
                    os.close(read_fd)
                report.kills += 1
                report.in_flight += in_flight is not None
                applied = _check(path, model, ops, applied, acked, in_flight, report)
                if report.problems:
                    return report
            report.operations_applied += applied
    return report


def _check(path: str, model: ModelTarget, ops: list[Op], applied: int, acked: int,
           in_flight: int | None, report: CrashReport) -> int:
    """Reopen, check integrity, find which allowed prefix the store holds; return its length."""
    with sqlite3.connect(path) as raw:
        verdict = raw.execute("PRAGMA integrity_check").fetchone()[0]
    if verdict != "ok":
        report.problems.append(f"kill {report.kills}: integrity_check says {verdict!r}")
        return applied
    server = ScheduleServer(path)
    try:
        on_disk = server.observe()
    finally:
        server.close()
    for index in range(applied, acked):
        model.step(*ops[index])
    if on_disk == model.observe():
        return acked
    if in_flight is not None and in_flight == acked:
        model.step(*ops[acked])
        if on_disk == model.observe():
            report.in_flight_applied += 1
            return acked + 1
    report.problems.append(f"kill {report.kills}: the store holds neither the {acked} acknowledged "
                           f"operations nor those plus the one in flight ({in_flight}): lost or "
                           f"half-applied")
    return acked


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dir", default=None,
                        help="where the store file lives (default: the system's temporary directory)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    report = run(args.kills, args.seed, args.dir)
    print(f"{report.kills} SIGKILLs ({report.in_flight} with an operation in flight, "
          f"{report.in_flight_applied} of those committed), {report.operations_applied} operations "
          f"applied, {len(report.problems)} lost or half-applied ({time.monotonic() - started:.1f}s)")
    for problem in report.problems:
        print(problem)
    return 1 if report.problems or report.kills < args.kills else 0


if __name__ == "__main__":
    sys.exit(main())
