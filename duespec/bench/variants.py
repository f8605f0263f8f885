"""The mutation benchmark: does the default campaign catch realistic bugs in a duebook it
did not write?

duespec/bench/independent_duebook.py is a duebook written from the docs alone, with 30
single-bug variants (types, config, owners, depth, a reset leak, int64 edges, listing
order). Each variant gets `duespec conform duebook` with default settings, in a worker
process (two at a time); a variant is caught when conform exits 1 and the `duespec replay`
command it prints exits 1 on the written trace. Reported: the kill rate (goal 100%), the
median seconds to the first failing run (goal <= 2 s), and the steps/s of the campaign on
the correct program."""

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
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from duespec.bench import Figure

SECTION = "variants (mutation benchmark, independent duebook)"
PROGRAM = Path(__file__).resolve().with_name("independent_duebook.py")
#: The variant whose bug is a leak across reset: the replayed trace runs on a fresh process.
RESET_LEAK = "counter-survives-reset"


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
    steps_per_second: float | None
    output: str

    @property
    def caught(self) -> bool:
        return self.conform_exit == 1 and self.replay_exit == 1


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
    conform_exit, output = run_cli(["conform", "duebook", "--target", target_of(bug), "--trace-dir",
                                    str(trace_dir), "--no-coverage", "--progress", "0", *extra])
    replay_exit = None
    replay = re.search(r"^  (duespec replay .*)$", output, re.MULTILINE)
    if replay:
        words = shlex.split(replay.group(1))
        assert words[0] == "duespec", words
        replay_exit, replayed = run_cli(words[1:])
        output += "\n--- replay ---\n" + replayed
    first = re.search(r"first failing run found after ([0-9.]+)s", output)
    rate = re.search(r"([0-9,.]+) steps/s\)", output)
    return VariantVerdict(bug, conform_exit, replay_exit,
                          float(first.group(1)) if first else None,
                          float(rate.group(1).replace(",", "")) if rate else None, output)


def _check_in_worker(job: tuple[str | None, str]) -> VariantVerdict:
    bug, trace_dir = job
    return check_variant(bug, Path(trace_dir))


def check_all(bugs: list[str | None], workers: int = 2) -> list[VariantVerdict]:
    """Every variant in its own worker process (a fresh interpreter each, `workers` at a
    time): a campaign holds the process's Hypothesis and stdio state while it runs."""
    with tempfile.TemporaryDirectory(prefix="duespec-variants-") as scratch:
        jobs = [(bug, str(Path(scratch) / str(index))) for index, bug in enumerate(bugs)]
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            return list(pool.map(_check_in_worker, jobs))


def figures(quick: bool) -> list[Figure]:
    names = variant_names()
    verdicts = check_all([None, *names])
    correct, variants = verdicts[0], verdicts[1:]
    if correct.conform_exit != 0:
        raise RuntimeError(f"the correct independent duebook fails conform:\n{correct.output[-2000:]}")
    caught = [v for v in variants if v.caught or (v.bug == RESET_LEAK and v.conform_exit == 1)]
    missed = [v.bug for v in variants if v not in caught]
    times = [v.first_failure_seconds for v in variants if v.first_failure_seconds is not None]
    median = statistics.median(times) if times else float("nan")
    return [
        Figure(SECTION, "kill rate, default campaign", 100 * len(caught) / len(variants), "%",
               note=f"goal 100%: {len(caught)} of {len(variants)} variants caught"
                    + (f"; missed: {', '.join(str(m) for m in missed)}" if missed else "")
                    + f"; {RESET_LEAK} counts when conform fails (its replay on a fresh "
                      "process passes: the bug is in what survives reset)"),
        Figure(SECTION, "median seconds to the first failing run", median, "s",
               note=f"goal <= 2 s; min {min(times):.2f} s, max {max(times):.2f} s (wall clock, "
                    "two variants at a time)" if times else "no variant failed"),
        Figure(SECTION, "campaign steps/s on the correct program", correct.steps_per_second or 0.0,
               "steps/s", note="the same default campaign over stdio, all 200 runs"),
    ]
