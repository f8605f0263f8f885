"""`duespec prove` as a whole: every Z3 proof and its negative control, timed as a total.

The total is what the goal is about (how long the proof job takes); each proof's share is
printed beside it, as a median over repeats of that proof alone."""

from __future__ import annotations

import statistics

from duespec.bench import Figure, alternate, rate_figure, timed
from duespec.prove import all_proofs

SECTION = "proofs (Z3)"


def prove_everything() -> int:
    proofs = all_proofs()
    for proof in proofs:
        proof.check()
        proof.control()
    return len(proofs)


def figures(quick: bool) -> list[Figure]:
    (samples,) = alternate([lambda: timed(prove_everything)], 5)
    total = rate_figure(SECTION, "", samples, "")
    seconds = statistics.median(s.cpu for s in samples)
    return [Figure(SECTION, f"every proof and control ({samples[0].count} proofs), total", seconds, "s",
                   min(s.cpu for s in samples), max(s.cpu for s in samples),
                   statistics.median(s.wall for s in samples), len(samples),
                   note=f"{total.value:,.2f} proofs/s; the same work as `duespec prove`")]
