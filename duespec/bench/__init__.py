"""`duespec bench`: figures measured side by side in one run, reported as ratios.

Each section module defines `figures(quick: bool) -> list[Figure]`. A figure names what
was measured and the baseline it was measured against in the same run, so the ratio means
something on any machine; no figure is ever asserted against a fixed time."""

from __future__ import annotations

import argparse
import importlib
import time
from dataclasses import dataclass
from typing import Callable

#: Sections in print order; a system adds its own module here.
SECTIONS: tuple[str, ...] = ("duespec.bench.duebook", "duespec.bench.proofs", "duespec.bench.schedules",
                               "duespec.bench.schedules_store", "duespec.bench.cron", "duespec.bench.traces",
                               "duespec.bench.conform", "duespec.bench.variants")


@dataclass(frozen=True)
class Figure:
    section: str
    what: str
    value: float
    unit: str
    baseline_what: str | None = None
    baseline_value: float | None = None
    note: str = ""

    def render(self) -> str:
        text = f"  {self.what:<52} {self.value:>14,.1f} {self.unit}"
        if self.baseline_value:
            text += (f"\n    vs {self.baseline_what:<47} {self.baseline_value:>14,.1f} {self.unit}"
                     f"   ratio {self.value / self.baseline_value:,.2f}x")
        if self.note:
            text += f"\n    {self.note}"
        return text


def rate(action: Callable[[], int], min_seconds: float = 0.5) -> float:
    """Operations per second of `action`, which returns how many operations it did."""
    done, started = 0, time.perf_counter()
    while True:
        done += action()
        elapsed = time.perf_counter() - started
        if elapsed >= min_seconds:
            return done / elapsed


def main(args: argparse.Namespace) -> int:
    for name in SECTIONS:
        if args.only and not any(part in name for part in args.only):
            continue
        figures = importlib.import_module(name).figures(args.quick)
        print(f"[{name}]" if not figures else f"[{figures[0].section}]", flush=True)
        for figure in figures:
            print(figure.render(), flush=True)
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "bench", help="measure throughput and memory, each against a baseline in the same run",
        description="Print every figure beside the baseline it was measured against in the "
                    "same run, with their ratio.")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument("--only", nargs="*", default=[], metavar="PART",
                        help="only sections whose module name contains one of these")
    parser.set_defaults(run=main)
