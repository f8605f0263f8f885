"""Linearizability and stress figures, each beside its goal.

1. The shapes of issue 43's table, each beside the Resonate specification's Porcupine-based
   checker (valid/porc/cmd/conccheck, measured there on the same valid/ `.history` files:
   whole process, user+sys CPU, median of 3) as its bar. Each history is generated, written
   in that format and checked as `duespec linearize` checks it: read, then searched. The
   figure is the CPU of that (time.process_time of this process: `duespec linearize` less
   its start-up), median with min-max over repeats; the 100-event row is the whole
   command in a child process (its CPU from the children's rusage), whose goal is 0.15 s.
2. A history `duespec stress --keys 1 --ticks` records from duespec serve: 800 calls of 16
   clients on one id slot, every tick joining all calls into one search (goal <= 60 s).
3. What recording costs `duespec stress`: its client loop against an in-process server,
   calls per CPU second with the history written against the same loop writing nothing
   (goal >= 0.9). Both sides run in this process, server included, alternated.
"""

from __future__ import annotations

import asyncio
import json
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from duespec.bench import Figure, Goal, Sample, alternate, ratio_figure, timed

SECTION = "linearize"

#: (what, events, clients, keys, Porcupine's CPU seconds as measured in issue 43, the bar).
#: The bar is the upper end of Porcupine's range, except on the 100-event row (the whole
#: command, start-up included: goal 0.15 s) and the one-key 10,000-event row (0.29 s,
#: Porcupine's figure, under the issue's own goal of 0.3 s).
PORCUPINE_SHAPES = (
    ("generated, 100 events, 8 clients, 5 keys (whole command)", 100, 8, 5, "< 0.01", 0.15),
    ("generated, 1,000 events, 16 clients, 50 keys", 1_000, 16, 50, "0.03-0.05", 0.05),
    ("generated, one key, 1,000 events, 16 clients", 1_000, 16, 1, "0.02-0.03", 0.03),
    ("generated, one key, 5,000 events, 16 clients", 5_000, 16, 1, "0.15", 0.15),
    ("generated, 10,000 events, 16 clients, 200 keys", 10_000, 16, 200, "0.46-0.48", 0.48),
    ("generated, one key, 10,000 events, 4 clients", 10_000, 4, 1, "0.29", 0.29),
    ("generated, 50,000 events, 16 clients, 1,000 keys", 50_000, 16, 1_000, "4.21-4.30", 4.30),
)


def _check(history, budget: float | None = None):
    from duespec.histories.linearize import check_history

    return check_history(history, budget=budget, shrink=False)


def _valid_file(path: Path, events: int, clients: int, keys: int) -> None:
    """A generated history (no schedules: the specification's checkers refuse them), in
    the specification's `.history` format."""
    from duespec.histories.generate import generate
    from duespec.histories.resonate_valid import resonate_valid_line

    history = generate(seed=events + keys, clients=clients, ops=events, keys=keys, with_schedules=False)
    numbers: dict[str, int] = {}
    with open(path, "w") as out:
        for event in history.events:
            line = resonate_valid_line(event, numbers.setdefault(event.client, len(numbers)))
            if line is not None:
                out.write(json.dumps(line) + "\n")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def porcupine_figure(what: str, events: int, clients: int, keys: int, porcupine: str, bar: float,
                     repeats: int, workdir: Path) -> Figure:
    from duespec.histories.resonate_valid import read_any_history

    path = workdir / f"{events}-{clients}-{keys}.history"
    _valid_file(path, events, clients, keys)
    statuses: list[str] = []
    samples: list[float] = []
    searches: list[float] = []
    for _ in range(repeats):
        if events <= 100:
            before = _children_cpu()
            run = subprocess.run([sys.executable, "-m", "duespec", "linearize", str(path)],
                                 capture_output=True, text=True)
            samples.append(_children_cpu() - before)
            statuses.append({0: "linearizable", 1: "not linearizable", 3: "unknown"}.get(run.returncode, "error"))
        else:
            histories, verdicts = [], []
            read = timed(lambda: histories.append(read_any_history(path)) or 1)
            search = timed(lambda: verdicts.append(_check(histories[-1], budget=120)) or 1)
            samples.append(read.cpu + search.cpu)
            searches.append(search.cpu)
            statuses.append(verdicts[-1].status)
    samples.sort()
    split = f"; of which the search {statistics.median(searches):.3f} s, the rest reading" if searches else ""
    return Figure(SECTION, what, statistics.median(samples), "s", samples[0], samples[-1], None, len(samples),
                  Goal("<=", bar), baseline=f"Porcupine checker {porcupine} s",
                  note=f"verdicts {', '.join(sorted(set(statuses)))}{split}")


def porcupine_figures(quick: bool) -> list[Figure]:
    workdir = Path(tempfile.mkdtemp(prefix="duespec-bench-porcupine-"))
    try:
        return [porcupine_figure(*shape, repeats=1 if quick and shape[1] >= 50_000 else (3 if quick else 5),
                                 workdir=workdir) for shape in PORCUPINE_SHAPES]
    finally:
        for path in workdir.iterdir():
            path.unlink()
        workdir.rmdir()


def recorded_hot_key_figure(quick: bool) -> Figure:
    """The realistic unpartitionable case: `duespec stress --keys 1 --ticks` against duespec
    serve, 16 clients, 800 calls, all on one id slot and joined by ticks into one search."""
    from duespec.histories.stress import stress

    workdir = Path(tempfile.mkdtemp(prefix="duespec-bench-hot-"))
    path = workdir / "hot.ndjson"
    history = stress(target="serve", clients=16, ops=800, clock="pinned", seed=3, keys=1, output=path, ticks=True)
    path.unlink()
    workdir.rmdir()
    verdicts = []

    def run() -> int:
        verdicts.append(_check(history, budget=60))
        return len(history.events)

    sample = timed(run)
    verdict = verdicts[-1]
    progress = (f"; placed {verdict.progress[0]} of {verdict.progress[1]} calls" if verdict.progress else "")
    return Figure(SECTION, "decide a recorded 800-call stress history, one id slot, ticks", sample.cpu, "s",
                  wall=sample.wall, goal=Goal("<=", 60),
                  note=f"verdict {verdict.status}; {verdict.partitions} part(s); {verdict.states:,} states{progress}")


def recording_figure(quick: bool) -> Figure:
    from duespec.histories.format import HistoryHeader, HistoryWriter
    from duespec.histories.stress import run_clients
    from duespec.wire.serve import ServerThread, WireServer

    ops = 300 if quick else 600
    header = HistoryHeader("schedules", "pinned", {"profile": "lean", "retry_timeout": 5000}, "duespec bench")
    workdir = Path(tempfile.mkdtemp(prefix="duespec-bench-stress-"))
    runs = [0]
    seeds = {True: 0, False: 0}

    with ServerThread(WireServer()) as server:
        def side(record: bool) -> Sample:
            runs[0] += 1
            seeds[record] += 1  # the n-th run of each side draws the same calls
            seed = seeds[record]
            path = workdir / f"h{runs[0]}.ndjson"

            def action() -> int:
                if record:
                    with HistoryWriter(path, header) as writer:
                        return asyncio.run(run_clients(server.url, clients=8, ops=ops, clock="pinned", seed=seed,
                                                       keys=3, writer=writer))
                return asyncio.run(run_clients(server.url, clients=8, ops=ops, clock="pinned", seed=seed, keys=3,
                                               writer=None))

            sample = timed(action)
            path.unlink(missing_ok=True)
            return sample

        with_, without = alternate([lambda: side(True), lambda: side(False)])
    workdir.rmdir()
    return ratio_figure(SECTION, "stress throughput recording / not recording", with_, without, per="rate",
                        goal=Goal(">=", 0.9), baseline="the same client loop writing no history",
                        note=f"{ops} calls by 8 clients per run against duespec serve in this process")


def figures(quick: bool) -> list[Figure]:
    return [*porcupine_figures(quick), recorded_hot_key_figure(quick), recording_figure(quick)]
