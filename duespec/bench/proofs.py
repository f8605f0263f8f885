"""What each Z3 proof costs, against the cost of asking Z3 anything at all.

The baseline is a trivially valid query (x + 1 > x over the integers) timed in the same
run, so each ratio says how much harder the property is than the solver's own round trip,
whatever the machine. The proof time covers every obligation of the property (for
schedules, both profiles); the control time covers the broken variant and its counter-run."""

from __future__ import annotations

import statistics
import time
from typing import Callable

from z3 import Int, Not, Solver

from duespec.bench import Figure
from duespec.prove import all_proofs

SECTION = "proofs (Z3)"


def _seconds(action: Callable[[], object], repeats: int) -> float:
    """Median wall time, so one slow round (a GC pause, a busy core) does not decide."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _trivial_query() -> None:
    x = Int("x")
    solver = Solver()
    solver.add(Not(x + 1 > x))
    solver.check()


def figures(quick: bool) -> list[Figure]:
    repeats = 1 if quick else 3
    baseline_ms = 1000 * _seconds(_trivial_query, 20 if quick else 50)
    result = []
    for proof in all_proofs():
        proof_ms = 1000 * _seconds(proof.check, repeats)
        control_ms = 1000 * _seconds(proof.control, repeats)
        result.append(Figure(
            SECTION, f"{proof.system} {','.join(proof.requirements)}: {proof.name}"[:52], proof_ms, "ms",
            "a trivially valid Z3 query", baseline_ms,
            note=f"negative control '{proof.control_name.split(':')[0]}': {control_ms:,.1f} ms "
                 f"({control_ms / baseline_ms:,.0f}x the trivial query)"))
    return result
