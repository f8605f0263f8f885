"""`duespec bench`: figures that hold on a busy machine, each printed beside its goal.

How a figure is measured (every section does it this way):

- Time is the CPU time of the measuring process (`time.process_time`), with wall time
  beside it; a machine shared with other jobs slows wall time, much less CPU time.
- What is compared (A against its baseline B) is measured in alternation, A B B A A B ...,
  at least `MIN_REPEATS` times, so load that comes and goes falls on both sides alike.
- A figure is the median over the repeats, with the min-max range beside it; a ratio is
  the median of the per-repeat ratios, each taken from one A and the B measured next to it.
- A figure that has a goal prints it with PASS or FAIL; no test asserts a time.
- Each section runs in a fresh process of its own (`--in-process`: all in this one), so
  no figure depends on which sections ran before it: measured after the million-deferral
  books, in one process, compiled cron read 0.026 of croniter's time, and 0.018 alone.

Adding a section: write a module with `figures(quick: bool) -> list[Figure]` and add its
name to `SECTIONS`. Measure with `timed` (one Sample: CPU and wall seconds of an action
that returns how many operations it did) and `alternate` (samples of several sides,
interleaved); turn samples into a Figure with `rate_figure` (operations per CPU second),
`ratio_figure` (A's CPU time per operation over B's) or `Figure.single` (one value, e.g.
bytes, that needs no repeats), and pass the goal as `Goal(">=", 100_000)` or
`Goal("<=", 0.5)`. `duespec bench --json PATH` writes every figure with its goal and
verdict, so CI can compare two commits figure by figure.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import multiprocessing
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Callable, Sequence

#: Sections in print order; a system adds its own module here.
SECTIONS: tuple[str, ...] = ("duespec.bench.duebook", "duespec.bench.proofs", "duespec.bench.schedules",
                               "duespec.bench.schedules_store", "duespec.bench.schedules_surface",
                               "duespec.bench.cron", "duespec.bench.traces",
                               "duespec.bench.conform", "duespec.bench.parallel", "duespec.bench.wire",
                               "duespec.bench.linearize", "duespec.bench.variants")

#: Sections with no quick form, left out of `--quick` unless named with --only (the output
#: says so): the variants' kill rate runs 31 whole campaigns over stdio and measures how
#: fast bugs are found, which a smaller run would not measure at all.
FULL_ONLY: tuple[str, ...] = ("duespec.bench.variants",)

#: The fewest alternated repeats behind any timed figure.
MIN_REPEATS = 5


@dataclass(frozen=True)
class Sample:
    """One timed run of an action: CPU and wall seconds and how many operations it did."""

    cpu: float
    wall: float
    count: int


def timed(action: Callable[[], int]) -> Sample:
    """Time `action`, which returns how many operations it did."""
    wall, cpu = time.perf_counter(), time.process_time()
    count = action()
    return Sample(time.process_time() - cpu, time.perf_counter() - wall, count)


def alternate(sides: Sequence[Callable[[], Sample]], repeats: int = MIN_REPEATS) -> list[list[Sample]]:
    """Samples of each side, `repeats` each, taken in alternating order (A B, B A, A B ...)
    so that whatever else the machine does falls on every side alike. Each side prepares
    untimed what it needs and returns the Sample of its timed part."""
    samples: list[list[Sample]] = [[] for _ in sides]
    order = list(range(len(sides)))
    for _ in range(max(repeats, MIN_REPEATS)):
        for side in order:
            samples[side].append(sides[side]())
        order.reverse()
    return samples


@dataclass(frozen=True)
class Goal:
    """What a figure must be: `op` is ">=" or "<="."""

    op: str
    value: float

    def met(self, figure: float) -> bool:
        return figure >= self.value if self.op == ">=" else figure <= self.value

    def __str__(self) -> str:
        return f"{self.op} {_number(self.value)}"


@dataclass(frozen=True)
class Figure:
    section: str
    what: str
    #: The median over repeats (or the single measured value).
    value: float
    unit: str
    low: float | None = None
    high: float | None = None
    #: The same figure from wall-clock time, median.
    wall: float | None = None
    repeats: int = 1
    goal: Goal | None = None
    #: What the figure is measured against, and that side's median in `unit`s per op.
    baseline: str = ""
    note: str = ""
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def passed(self) -> bool | None:
        return None if self.goal is None else self.goal.met(self.value)

    @classmethod
    def single(cls, section: str, what: str, value: float, unit: str, **more: object) -> Figure:
        return cls(section, what, value, unit, **more)  # type: ignore[arg-type]

    def render(self) -> str:
        text = f"  {self.what:<58} {_number(self.value):>12} {self.unit}"
        if self.low is not None and self.high is not None:
            text += f"  [{_number(self.low)}-{_number(self.high)}]"
        if self.goal is not None:
            text += f"  goal {self.goal}: {'PASS' if self.passed else 'FAIL'}"
        details = []
        if self.wall is not None:
            details.append(f"wall {_number(self.wall)} {self.unit}")
        if self.repeats > 1:
            details.append(f"median of {self.repeats} alternated repeats, CPU time")
        if self.baseline:
            details.append(f"vs {self.baseline}")
        if details:
            text += "\n    " + "; ".join(details)
        if self.note:
            text += f"\n    {self.note}"
        return text

    def as_json(self) -> dict[str, object]:
        data = asdict(self)
        data["goal"] = None if self.goal is None else {"op": self.goal.op, "value": self.goal.value}
        data["passed"] = self.passed
        return data


def _number(value: float) -> str:
    if value == 0 or abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:,.2f}"
    return f"{value:.3g}"


def rate_figure(section: str, what: str, samples: list[Sample], unit: str, *,
                goal: Goal | None = None, note: str = "", baseline: str = "") -> Figure:
    """Operations per CPU second, median over the samples."""
    rates = [s.count / s.cpu for s in samples if s.cpu > 0]
    walls = [s.count / s.wall for s in samples if s.wall > 0]
    return Figure(section, what, statistics.median(rates), unit, min(rates), max(rates),
                  statistics.median(walls), len(rates), goal, baseline, note)


def ratio_figure(section: str, what: str, a: list[Sample], b: list[Sample], *,
                 goal: Goal | None = None, note: str = "", baseline: str = "",
                 per: str = "time") -> Figure:
    """A's CPU time per operation over B's (per="time"), or A's rate over B's (per="rate"),
    from each repeat's pair; median with min-max."""
    def ratio(x: Sample, y: Sample, cpu: bool) -> float:
        tx, ty = (x.cpu, y.cpu) if cpu else (x.wall, y.wall)
        value = (tx / x.count) / (ty / y.count)
        return value if per == "time" else 1 / value
    ratios = [ratio(x, y, True) for x, y in zip(a, b)]
    walls = [ratio(x, y, False) for x, y in zip(a, b)]
    return Figure(section, what, statistics.median(ratios), "x", min(ratios), max(ratios),
                  statistics.median(walls), len(ratios), goal, baseline, note)


def measure_section(name: str, quick: bool, against: str | None) -> tuple[list[Figure], float]:
    """One section's figures and the CPU seconds of the process that measured them.
    `against` (--against REF) goes to the sections whose `figures` take it."""
    cpu = time.process_time()
    section = importlib.import_module(name).figures
    takes_ref = "against" in inspect.signature(section).parameters
    figures = section(quick, against=against) if takes_ref else section(quick)
    return figures, time.process_time() - cpu


def run_sections(names: Sequence[str], quick: bool, out: Callable[[str], None],
                 broken: list[str] | None = None, against: str | None = None,
                 in_process: bool = False) -> list[Figure]:
    """Every section's figures, each section measured in a fresh process (spawned, so it
    inherits no heap) unless `in_process`; a section that raises, or whose process dies,
    is named in `broken` and skipped."""
    found: list[Figure] = []
    for name in names:
        wall = time.perf_counter()
        try:
            if in_process:
                figures, cpu = measure_section(name, quick, against)
            else:
                with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
                    figures, cpu = pool.submit(measure_section, name, quick, against).result()
        except Exception as error:  # one broken section must not hide the others' figures
            first = (str(error).splitlines() or [""])[0]
            out(f"[{name}] could not be measured: {type(error).__name__}: {first}")
            if broken is not None:
                broken.append(name)
            continue
        out(f"[{figures[0].section if figures else name}] ({time.perf_counter() - wall:,.0f} s wall, "
            f"{cpu:,.0f} s CPU)")
        for figure in figures:
            out(figure.render())
        found.extend(figures)
    return found


def main(args: argparse.Namespace) -> int:
    from duespec.outputs import write_text

    names = [name for name in SECTIONS if not args.only or any(part in name for part in args.only)]
    if args.only and not names or "" in args.only:
        from duespec.cli import UsageError

        raise UsageError(f"--only {' '.join(map(repr, args.only))} matches no bench section; sections: "
                         f"{', '.join(name.rsplit('.', 1)[-1] for name in SECTIONS)}")
    text = sys.stderr if args.json == "-" else sys.stdout  # keep stdout for the JSON then
    started = time.perf_counter()
    broken: list[str] = []
    left_out = [name for name in names if args.quick and not args.only and name in FULL_ONLY]
    for name in left_out:
        print(f"[{name}] not in --quick (no smaller form measures the same thing): "
              f"duespec bench --only {name.rsplit('.', 1)[-1]}", file=text, flush=True)
    names = [name for name in names if name not in left_out]
    against = getattr(args, "against", None)
    if against is not None:  # a REF that cannot be measured against is bad usage: before any work
        from duespec.bench.against import AgainstError, resolve_ref
        from duespec.exits import UsageError

        try:
            resolve_ref(against)
        except AgainstError as error:
            raise UsageError(str(error)) from None
    figures = run_sections(names, args.quick, lambda line: print(line, file=text, flush=True), broken,
                           against, getattr(args, "in_process", False))
    judged = [f for f in figures if f.goal is not None]
    failed = [f for f in judged if not f.passed]
    print(f"{len(judged) - len(failed)} of {len(judged)} goals met"
          f"{': FAIL ' + '; '.join(f.what for f in failed) if failed else ''} "
          f"({time.perf_counter() - started:,.0f} s wall)"
          f"{'; not measured: ' + ', '.join(broken) if broken else ''}", file=text)
    if args.json:
        document = {"quick": args.quick, "figures": [f.as_json() for f in figures], "not_measured": broken,
                    "left_out": left_out}
        if args.json == "-":
            json.dump(document, sys.stdout, indent=1)
            print()
        else:
            write_text(args.json, json.dumps(document, indent=1) + "\n", what="--json")
    return 1 if broken else 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "bench", help="measure speed and memory, each figure beside its goal",
        description="Print every figure as the median CPU-time figure of alternated repeats "
                    "(min-max and wall time beside it) with its goal and PASS/FAIL. Exit 0 "
                    "whatever the figures (a busy machine must not fail a build), 1 when a "
                    "section could not be measured at all.")
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats (under 2 minutes)")
    parser.add_argument("--only", nargs="*", default=[], metavar="PART",
                        help="only sections whose module name contains one of these")
    parser.add_argument("--against", metavar="REF",
                        help="git commit (branch, tag, id) whose campaign steps/s the variants section "
                             "measures in the same run, alternating the two trees (default: main, "
                             "when this is a git checkout that has it); exit 2 if REF is no commit")
    parser.add_argument("--json", metavar="PATH",
                        help="also write every figure, goal and verdict as JSON to PATH ('-' for stdout)")
    parser.add_argument("--in-process", action="store_true",
                        help="measure every section in this process (by default each runs in a fresh "
                             "process of its own, so no figure depends on the sections before it)")
    parser.set_defaults(run=main)
