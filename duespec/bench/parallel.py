"""Campaigns on many cores, and with a memory.

1. `duespec check duebook --jobs 2` against `--jobs 1`: the same chunks (same seeds, same
   runs, same steps, same findings, checked on every repeat), the wall time of the whole
   campaign, worker start included. The process's CPU time would leave the workers out,
   so this figure is wall time only: steps per wall second with 2 jobs over 1 job,
   alternated, median with min-max. On a machine with fewer than 2 idle cores it cannot
   reach its goal, and says how many cores there are.
2. A failure remembered: a planted bug deep enough that a fresh campaign needs many runs
   to find it, then a second campaign on a fresh database connection to the same
   redis-server (Debian's, started here on a free loopback port) that replays it. The
   figures are the seconds to the first failing run, fresh and by replay.
"""

from __future__ import annotations

import os
import resource
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from typing import Any

from duespec.bench import Figure, Goal, Sample, alternate
from duespec.campaigns import database as examples_db
from duespec.campaigns import parallel
from duespec.systems.duebook import SYSTEM, ModelTarget
from duespec.targets.resolve import resolve

SECTION = "parallel campaigns and the example database"


def _cpu_with_children() -> float:
    """CPU seconds of this process and of its children that have ended (the workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _campaign(jobs: int, examples: int) -> tuple[Sample, tuple[Any, ...]]:
    """One `duespec check duebook --jobs N` campaign, as the command runs it: the target
    resolved from its name on both sides (so behind the same call boundary, with the
    same fast checks), chunks run here with one job and in worker processes with more."""
    spec = parallel.CampaignSpec(system="duebook", target="impl", timeout=60.0, start_timeout=60.0,
                                 profile=SYSTEM.profiles[0], steps=50, depth=1.0, max_classes=1, database="none")
    factory = resolve(SYSTEM, spec.target, timeout=spec.timeout, start_timeout=spec.start_timeout)
    wall, cpu = time.perf_counter(), _cpu_with_children()
    result = parallel.run_chunks(SYSTEM, factory, spec, seed=0, examples=examples, jobs=jobs)
    seconds, cpu = time.perf_counter() - wall, _cpu_with_children() - cpu
    if not result.ok:
        raise RuntimeError(f"bench campaign failed, figures would be meaningless:\n{result.failure_summary}")
    return Sample(cpu, seconds, result.steps), (result.examples, result.steps, tuple(map(str, result.findings)))


def _jobs_figure(quick: bool) -> Figure:
    examples = 200 if quick else 400
    seen: dict[int, set[tuple[Any, ...]]] = {1: set(), 2: set()}

    def side(jobs: int) -> Sample:
        sample, what = _campaign(jobs, examples)
        seen[jobs].add(what)
        return sample

    two, one = alternate([lambda: side(2), lambda: side(1)])
    if len(seen[1] | seen[2]) != 1:
        raise RuntimeError(f"--jobs 2 and --jobs 1 ran different campaigns: {seen}")
    ratios = sorted((a.count / a.wall) / (b.count / b.wall) for a, b in zip(two, one))
    median = ratios[len(ratios) // 2] if len(ratios) % 2 else sum(ratios[len(ratios) // 2 - 1:][:2]) / 2
    runs, steps, findings = next(iter(seen[1]))
    per_step = {jobs: statistics.median(sample.cpu / sample.count for sample in samples) * 1e6
                for jobs, samples in ((2, two), (1, one))}
    return Figure(SECTION, "check duebook steps/s (wall), --jobs 2 / --jobs 1", median, "x", ratios[0], ratios[-1],
                  median, len(ratios), Goal(">=", 1.7), "the same campaign with --jobs 1",
                  f"seed 0, {examples} examples = {len(parallel.chunks_of(0, examples))} chunks, {runs} runs, "
                  f"{steps:,} steps, {len(findings)} findings on both sides; wall time of whole campaigns; "
                  f"CPU per step, workers included: {per_step[1]:.0f} us with 1 job, {per_step[2]:.0f} us "
                  f"with 2; {os.cpu_count()} cores, shared")


class RareBug(ModelTarget):
    """`claimable` leaves out its last entry once the book holds more than 1,800 open
    deferrals: only the deepest runs reach it."""

    threshold = 1800

    def step(self, op: str, args: dict[str, Any], now: int) -> dict[str, Any]:
        response = super().step(op, args, now)
        if op == "claimable" and isinstance(response.get("ok"), list) and len(response["ok"]) > 1:
            if len(self.observe()["open"]) > self.threshold:
                return {"ok": response["ok"][:-1]}
        return response


def _redis() -> tuple[subprocess.Popen[bytes], str, str]:
    binary = os.environ.get("DUESPEC_REDIS_SERVER") or shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is required for the example-database figures")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    folder = tempfile.mkdtemp(prefix="duespec-bench-redis-")
    process = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                "--appendonly", "no", "--dir", folder],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    return process, f"redis://127.0.0.1:{port}/0", folder


def _memory_figures() -> list[Figure]:
    process, url, folder = _redis()
    try:
        found = []
        for _ in range(2):  # fresh, then by replay: a new connection, as another process would open
            database = examples_db.open_database(url, say=lambda line: None)
            spec = parallel.CampaignSpec(system="duebook", target="bench:RareBug", timeout=60.0, start_timeout=60.0,
                                         profile=SYSTEM.profiles[0], steps=50, depth=1.0, max_classes=1,
                                         database=url)
            wall = time.perf_counter()
            result = parallel.run_chunks(SYSTEM, RareBug, spec, seed=0, examples=2000, database=database)
            if result.ok or result.first_failure_seconds is None:
                raise RuntimeError("the planted bug was not found: the figure would be meaningless")
            found.append((result.first_failure_seconds, time.perf_counter() - wall, result))
    finally:
        process.kill()
        process.wait()
        shutil.rmtree(folder, ignore_errors=True)
    (fresh, fresh_all, first), (replayed, replayed_all, second) = found
    hits = second.database_stats.hit_searches if second.database_stats else []
    if not hits:
        raise RuntimeError("the second campaign did not replay the saved failure")
    return [
        Figure.single(SECTION, "first failing run of a deep planted bug, fresh campaign", fresh, "s",
                      note=f"{first.examples} runs in all, {fresh_all:.1f}s with shrinking; database {url}"),
        Figure.single(SECTION, "first failing run of the same bug, second campaign replaying the shared database",
                      replayed, "s", goal=Goal("<=", 2.0),
                      note=f"database hit (search {hits[0]}); {second.examples} runs in all, "
                           f"{replayed_all:.1f}s with shrinking and minimising"),
    ]


def figures(quick: bool) -> list[Figure]:
    return [_jobs_figure(quick), *_memory_figures()]
