"""The mutation benchmark: does the default campaign catch realistic bugs in a duebook it
did not write?

duespec/bench/independent_duebook.py is a duebook written from the docs alone, with 30
single-bug variants (types, config, owners, depth, a reset leak, int64 edges, listing
order). Each variant gets `duespec conform duebook` with default settings (its first
search: see check_all), in a worker process (two at a time); a variant is caught when
conform exits 1 and the `duespec replay` command it prints exits 1 on the written trace
(the reset leak: when conform also reports it as "state survives reset"; its trace holds the
steps, a reset and the same steps again, so a fresh program shows it). Reported, each beside
its goal: the kill rate (100%) and the median seconds to the first failing run (<= 2 s);
beside them the steps/s of the campaign on the correct program, and the duebook
campaign's steps/s on this tree over main's (or --against REF's), both measured in this
run (duespec/bench/against.py; goal >= 0.85). `--quick`: one variant per class."""

from __future__ import annotations

import contextlib
import io
import multiprocessing
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from duespec.bench import Figure, Goal
from duespec.bench.against import EXAMPLES, RATIO_GOAL, SEED, STEPS, AgainstError, compare, summary

SECTION = "variants (mutation benchmark, independent duebook)"
PROGRAM = Path(__file__).resolve().with_name("independent_duebook.py")
#: The variant whose bug is a leak across reset: conform must report it as a target bug
#: ("state survives reset"), never as a failure of duespec, and its replay must fail too.
RESET_LEAK = "counter-survives-reset"
#: One variant of each class (`--quick`, and what `make test` runs): the full set is 30.
ONE_PER_CLASS = ("float-id-accepted", "cap-wrong-key", "cancel-case-folds", "id-block-skip",
                 "times-as-doubles", "claimable-by-id", RESET_LEAK)
#: The goals of issue 8: every variant caught, the first failing run within 2 s (median).
KILL_RATE_GOAL, FIRST_FAILURE_GOAL = 100.0, 2.0
#: What the campaign's steps/s is measured against when --against is not given.
DEFAULT_REF = "main"


def variant_names() -> list[str]:
    listed = subprocess.run([sys.executable, str(PROGRAM), "--list"], capture_output=True,
                            text=True, check=True).stdout
    return [line.split(":", 1)[0] for line in listed.splitlines()]


def target_of(bug: str | None) -> str:
    command = [sys.executable, str(PROGRAM)] + (["--bug", bug] if bug else [])
    return "stdio:" + shlex.join(command)


@dataclass(frozen=True)
class VariantVerdict:
    bug: str | None
    conform_exit: int
    #: The exit status of the printed `duespec replay` command (None: none was printed).
    replay_exit: int | None
    first_failure_seconds: float | None
    #: Steps the campaign took, and the CPU seconds duespec's own process spent on them
    #: (the target's process not counted).
    steps: int | None
    cpu_seconds: float
    output: str
    #: Steps in the first class's shrunk counterexample (None: none printed).
    counterexample_steps: int | None = None

    @property
    def reported_as_leak(self) -> bool:
        return "state survives reset" in self.output and "inside duespec" not in self.output

    @property
    def caught(self) -> bool:
        """Conform failed and its printed replay failed too; a leak across reset must also
        be reported as the target's bug of its own kind."""
        replayed = self.conform_exit == 1 and self.replay_exit == 1
        return replayed and self.reported_as_leak if self.bug == RESET_LEAK else replayed


def run_cli(words: list[str]) -> tuple[int, str]:
    """`duespec WORDS...` in this process: its exit status and what it printed."""
    from duespec.cli import main

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        code = main(words)
    return code, printed.getvalue()


def check_variant(bug: str | None, trace_dir: Path, extra: tuple[str, ...] = ()) -> VariantVerdict:
    """`duespec conform duebook` (default settings) on one variant, then the `duespec
    replay` command it printed, exactly as printed."""
    cpu = time.process_time()
    conform_exit, output = run_cli(["conform", "duebook", "--target", target_of(bug), "--trace-dir",
                                    str(trace_dir), "--no-coverage", "--progress", "0", *extra])
    cpu = time.process_time() - cpu
    replay_exit = None
    replay = re.search(r"^  (duespec replay .*)$", output, re.MULTILINE)
    if replay:
        words = shlex.split(replay.group(1))
        assert words[0] == "duespec", words
        replay_exit, replayed = run_cli(words[1:])
        output += "\n--- replay ---\n" + replayed
    first = re.search(r"first failing run found after ([0-9.]+)s", output)
    steps = re.search(r" steps=([0-9]+) ", output)
    shrunk = re.search(r"shrunk counterexample \(([0-9]+) steps", output)
    return VariantVerdict(bug, conform_exit, replay_exit,
                          float(first.group(1)) if first else None,
                          int(steps.group(1)) if steps else None, cpu, output,
                          int(shrunk.group(1)) if shrunk else None)


def _check_in_worker(job: tuple[str | None, str, tuple[str, ...]]) -> VariantVerdict:
    bug, trace_dir, extra = job
    return check_variant(bug, Path(trace_dir), extra)


def check_all(bugs: list[str | None], workers: int = 2) -> list[VariantVerdict]:
    """Every variant in its own worker process (a fresh interpreter each, `workers` at a
    time): a campaign holds the process's Hypothesis and stdio state while it runs.

    A variant runs with `--max-classes 1`: the default campaign's first search is exactly
    this one (same seed, nothing masked yet), so its first class, counterexample, trace and
    replay command are the default campaign's; the searches it would go on to run for
    further classes cannot undo a catch. The correct program runs the whole default, its
    report with the depth and coverage lines (--coverage): a HOLDS says how deep it looked."""
    with tempfile.TemporaryDirectory(prefix="duespec-variants-") as scratch:
        jobs = [(bug, str(Path(scratch) / str(index)), ("--coverage",) if bug is None else ("--max-classes", "1"))
                for index, bug in enumerate(bugs)]
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            return list(pool.map(_check_in_worker, jobs))


def figures(quick: bool, against: str | None = None) -> list[Figure]:
    """The kill rate and the median time to the first failing run, each beside its goal,
    the campaign's steps/s on the correct program, and the same campaign's steps/s on this
    tree over its steps/s at `against` (default main), measured now in alternation.
    `quick`: one variant per class."""
    names = list(ONE_PER_CLASS) if quick else variant_names()
    verdicts = check_all([None, *names])
    correct, variants = verdicts[0], verdicts[1:]
    if correct.conform_exit != 0:
        raise RuntimeError(f"the correct independent duebook fails conform:\n{correct.output[-2000:]}")
    caught = [v for v in variants if v.caught]
    missed = [str(v.bug) for v in variants if not v.caught]
    times = [v.first_failure_seconds for v in variants if v.first_failure_seconds is not None]
    median = statistics.median(times) if times else float("inf")
    which = f"{len(variants)} variants, one per class (--quick)" if quick else f"all {len(variants)} variants"
    judged = [
        Figure(SECTION, "kill rate, default campaign", 100 * len(caught) / len(variants), "%",
               goal=Goal(">=", KILL_RATE_GOAL),
               extra={str(v.bug): float(v.counterexample_steps) for v in variants
                      if v.counterexample_steps is not None},
               note=f"{which}: {len(caught)} caught (conform exits 1, its printed replay exits 1; "
                    f"{RESET_LEAK}: also reported as 'state survives reset')"
                    + (f"; missed: {', '.join(missed)}" if missed else "")),
        Figure(SECTION, "median seconds to the first failing run", median, "s",
               goal=Goal("<=", FIRST_FAILURE_GOAL),
               extra={str(v.bug): v.first_failure_seconds for v in variants
                      if v.first_failure_seconds is not None},
               note=(f"over the {len(times)} that failed; min {min(times):.2f} s, max {max(times):.2f} s "
                     "(wall clock from the campaign's start, two variants at a time)")
               if times else "no variant failed"),
    ]
    speed, missing = speed_against(against)
    return [
        *judged,
        Figure(SECTION, "campaign steps/s on the correct program", (correct.steps or 0) / correct.cpu_seconds,
               "steps/s", note=f"{correct.steps or 0:,} steps of the default campaign over stdio per CPU "
                               "second of duespec's process (the target's process not counted)"
                               + (f"; against {DEFAULT_REF}: not measured: {missing} (name a commit "
                                  "with --against REF)" if missing else "")),
        *speed,
    ]


def speed_against(against: str | None) -> tuple[list[Figure], str | None]:
    """The duebook campaign's steps/s on this tree over REF's, both run now (against.py).
    With no --against, REF is main when there is one; else no figure, and why."""
    ref = against or DEFAULT_REF
    try:
        comparison = compare(ref)
    except AgainstError as error:
        if against is not None:
            raise
        return [], str(error)
    ratios, facts = comparison.ratios, summary(comparison)
    return [Figure(
        SECTION, f"campaign steps/s, this tree over {ref}", statistics.median(ratios), "x",
        min(ratios), max(ratios), repeats=len(ratios), goal=Goal(">=", RATIO_GOAL),
        baseline=f"{ref} ({comparison.commit[:12]})", extra=facts,
        note=f"duebook model vs impl, seeds {SEED}-{SEED + len(ratios) - 1} (one per repeat, the median of "
             f"their ratios), {EXAMPLES} runs x {STEPS} steps, each side in its own process, alternated; "
             f"steps/s by each child's CPU clock, all seeds pooled: {facts['steps_per_s_current']:,.0f} "
             f"here ({facts['steps_current']:,.0f} steps), {facts['steps_per_s_ref']:,.0f} at {ref} "
             f"({facts['steps_ref']:,.0f} steps), {facts['pooled_ratio']:.2f}x; CPU per run "
             f"{facts['cpu_per_run_ratio']:.2f}x; whole "
             f"child CPU {facts['child_cpu_current']:.2f} s vs {facts['child_cpu_ref']:.2f} s")], None
