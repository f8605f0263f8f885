"""Linearizability and stress figures, each beside its goal.

1. A 10,000-event history of 16 clients over 200 ids (a workload that partitions by key),
   checked whole: CPU seconds (goal <= 10), events/s and states explored.
2. An 800-event history of 16 clients all on one id (it cannot be partitioned): decided
   within a 60 s budget (goal <= 60 s CPU), or unknown with how far the search got.
3. The same for a history `duespec stress --keys 1 --ticks` records from duespec serve:
   800 calls of 16 clients on one id slot, every tick joining all calls into one search.
4. What recording costs `duespec stress`: its client loop against an in-process server,
   calls per CPU second with the history written against the same loop writing nothing
   (goal >= 0.9). Both sides run in this process, server included, alternated.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from duespec.bench import Figure, Goal, Sample, alternate, rate_figure, ratio_figure, timed

SECTION = "linearize"


def _check(history, budget: float | None = None):
    from duespec.histories.linearize import check_history

    return check_history(history, budget=budget, shrink=False)


def scale_figures(quick: bool) -> list[Figure]:
    from duespec.histories.generate import generate

    history = generate(seed=1, clients=16, ops=10_000, keys=200, max_call_ms=30)
    verdicts = []

    def run() -> int:
        verdicts.append(_check(history, budget=60))
        return len(history.events)

    samples = [timed(run) for _ in range(3 if quick else 5)]
    verdict = verdicts[-1]
    seconds = sorted(s.cpu for s in samples)
    note = (f"verdict {verdict.status}; {verdict.partitions} parts; {verdict.states:,} states explored "
            f"({verdict.states / samples[-1].cpu:,.0f} states/s)")
    return [
        Figure(SECTION, "check a 10,000-event, 16-client history (partitionable)", seconds[len(seconds) // 2], "s",
               seconds[0], seconds[-1], sorted(s.wall for s in samples)[len(samples) // 2], len(samples),
               Goal("<=", 10), note=note),
        rate_figure(SECTION, "events checked per CPU second (same history)", samples, "events/s"),
    ]


def hot_key_figure(quick: bool) -> Figure:
    from duespec.histories.generate import generate

    history = generate(seed=11, clients=16, ops=800, keys=1, max_call_ms=60, with_schedules=False)
    verdicts = []

    def run() -> int:
        verdicts.append(_check(history, budget=60))
        return len(history.events)

    samples = [timed(run) for _ in range(1 if quick else 3)]
    verdict = verdicts[-1]
    progress = (f"; placed {verdict.progress[0]} of {verdict.progress[1]} calls" if verdict.progress else "")
    seconds = sorted(s.cpu for s in samples)
    return Figure(SECTION, f"decide an {len(history.events)}-event one-key history (16 clients)",
                  seconds[len(seconds) // 2], "s", seconds[0], seconds[-1], None, len(samples), Goal("<=", 60),
                  note=f"verdict {verdict.status}; {verdict.partitions} part(s); {verdict.states:,} states{progress}")


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
    return [*scale_figures(quick), hot_key_figure(quick), recorded_hot_key_figure(quick), recording_figure(quick)]
