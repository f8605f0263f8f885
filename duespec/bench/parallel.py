"""Campaigns on many cores, and with a memory (docs/performance.md says what they mean).

1. `duespec check duebook --jobs 2` against `--jobs 1`: the same chunks (same seeds, same
   runs, same steps, same findings, checked on every repeat), the target resolved from its
   name on both sides as the command does, the wall time of the whole campaign, worker
   start included. Steps per wall second with 2 jobs over 1 job, alternated, median with
   min-max; beside it the CPU per step of each side, workers included, which shows
   whether the two sides do the same work. On a machine with fewer than 2 idle cores it
   cannot reach its goal, and says how many cores there are.
2. A failure remembered: a planted bug that a fresh `duespec conform` finds only after
   about a thousand runs (about 30 s on one core), then the same command in another
   process and working directory, sharing only a redis-server (Debian's, started here on
   a free loopback port), which replays it. The figures are the seconds from each campaign's start to its first
   failing run, with the run number; the second campaign's report must show the hit.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from duespec.bench import Figure, Goal, Sample, alternate
from duespec.campaigns import parallel
from duespec.systems.duebook import SYSTEM, ImplTarget
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


class OnePageOfClaimable(ImplTarget):
    """duespec's duebook whose `claimable` reads one page of its due index, 100 rows,
    whatever the caller's limit: asked for more while more than 100 open entries are due,
    it answers the first 100 only (D-23). Only a run that holds more than 100 due entries
    and then lists them with a larger limit shows it, and the campaign draws such a run
    rarely: at seed 0 a fresh campaign (default steps and depth) first runs one about a
    thousand runs in, about 30 s on one core, so the bench gives it PLANTED_EXAMPLES runs
    rather than the default 200."""

    PAGE = 100

    def step(self, op: str, args: dict[str, Any], now: int) -> dict[str, Any]:
        response = super().step(op, args, now)
        rows = response.get("ok") if op == "claimable" else None
        if type(rows) is list and len(rows) > self.PAGE:
            return {"ok": rows[:self.PAGE]}
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


#: The planted bug as `duespec conform` names it, and the budget that lets it be found.
PLANTED = "duespec.bench.parallel:OnePageOfClaimable"
PLANTED_EXAMPLES = 3000


def remembered_failure(url: str, folder: str) -> list[dict[str, Any]]:
    """`duespec conform duebook --target PLANTED --database URL`, twice, as two machines
    would run it: two processes, each in a working directory of its own, sharing only the
    Redis database. Each campaign's --json report and printed report."""
    campaigns = []
    for machine in ("first", "second"):
        cwd = os.path.join(folder, machine)
        os.makedirs(cwd)
        report = os.path.join(cwd, "report.json")
        run = subprocess.run([sys.executable, "-m", "duespec", "conform", "duebook", "--target", PLANTED,
                              "--examples", str(PLANTED_EXAMPLES), "--max-classes", "1", "--no-coverage",
                              "--database", url, "--json", report],
                             cwd=cwd, capture_output=True, text=True, timeout=3600)
        if run.returncode != 1 or not os.path.exists(report):
            raise RuntimeError(f"the {machine} campaign did not fail on the planted bug (exit {run.returncode}):\n"
                               f"{run.stdout[-2000:]}{run.stderr[-2000:]}")
        with open(report) as handle:
            campaign = json.load(handle)["campaigns"][0]
        campaigns.append({**campaign, "printed": run.stdout})
    return campaigns


def _memory_figures() -> list[Figure]:
    process, url, folder = _redis()
    try:
        fresh, replayed = remembered_failure(url, folder)
    finally:
        process.kill()
        process.wait()
        shutil.rmtree(folder, ignore_errors=True)
    hits = (replayed.get("database") or {}).get("hits", 0)
    shown = [line for line in replayed["printed"].splitlines() if line.startswith("database hit: ")]
    if not hits or not shown:
        raise RuntimeError("the second campaign did not replay the saved failure:\n" + replayed["printed"][-2000:])
    runs_per_second = fresh["first_failure_run"] / fresh["first_failure_seconds"]
    return [
        Figure.single(SECTION, "first failing run of a planted bug, fresh campaign (from its start)",
                      fresh["first_failure_seconds"], "s",
                      note=f"run {fresh['first_failure_run']:,} ({runs_per_second:.0f} runs/s); "
                           f"{fresh['runs']:,} runs in all, {fresh['seconds']:.1f}s with shrinking; "
                           f"`duespec conform duebook --target {PLANTED}`"),
        Figure.single(SECTION, "first failing run of the same bug, another process and directory "
                               "replaying the shared Redis database",
                      replayed["first_failure_seconds"], "s", goal=Goal("<=", 2.0),
                      note=f"run {replayed['first_failure_run']:,}; the report shows {shown[0]!r}; "
                           f"{replayed['runs']:,} runs in all, {replayed['seconds']:.1f}s with shrinking"),
    ]


def figures(quick: bool) -> list[Figure]:
    return [_jobs_figure(quick), *_memory_figures()]
