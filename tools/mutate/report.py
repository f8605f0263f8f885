"""The kill rate: killed of non-equivalent per file and in all, with a Wilson 95%
interval, then the same leaving out the survivors `check` cannot reach, then each open
survivor as source.
"""

from __future__ import annotations

from mutate.equivalent import EQUIVALENT
from mutate.operators import FILES, mutant_key, mutated_expression, source_line
from mutate.out_of_check import OUT_OF_CHECK
from mutate.runner import Verdict


def judged_equivalent(verdict: Verdict) -> str | None:
    """The recorded reason a survivor is equivalent (EQUIVALENT), if it is one."""
    return EQUIVALENT.get(mutant_key(verdict.file, verdict.index))


def summary(verdicts: list[Verdict]) -> str:
    """Per file and in all: killed of non-equivalent, with a Wilson 95% interval; then the
    same leaving out the survivors `check` cannot reach (OUT_OF_CHECK); then the
    hand-written mutants, per campaign seed."""
    hand = [v for v in verdicts if v.hand is not None]
    verdicts = [v for v in verdicts if v.hand is None]
    lines = []
    for file in [*FILES, None]:
        mine = [v for v in verdicts if file is None or v.file == file]
        if not mine:
            continue
        killed = sum(v.killed for v in mine)
        equivalent = [v for v in mine if not v.killed and judged_equivalent(v)]
        counted = len(mine) - len(equivalent)
        low, high = wilson(killed, counted)
        lines.append(f"{file or 'all':28} {killed:4} killed of {counted:4} non-equivalent "
                     f"({100 * killed / max(1, counted):5.1f}%, 95% CI {100 * low:.1f}-{100 * high:.1f}%); "
                     f"{len(mine)} checked, {len(equivalent)} equivalent")
    killed = sum(v.killed for v in verdicts)
    outside = [v for v in verdicts if not v.killed and not judged_equivalent(v)
               and OUT_OF_CHECK.get(mutant_key(v.file, v.index))]
    counted = len(verdicts) - sum(not v.killed and bool(judged_equivalent(v)) for v in verdicts) - len(outside)
    if outside:
        low, high = wilson(killed, counted)
        lines.append(f"{'all, leaving out':28} {killed:4} killed of {counted:4} non-equivalent "
                     f"({100 * killed / max(1, counted):5.1f}%, 95% CI {100 * low:.1f}-{100 * high:.1f}%): "
                     f"{len(outside)} survivors `check` cannot reach (OUT_OF_CHECK)")
    open_survivors = [v for v in verdicts if not v.killed and not judged_equivalent(v)]
    lines += [f"  survived: {v.file}:{v.line} #{v.index} {v.description}: "
              f"{mutated_expression(v.file, v.index)}  in  {source_line(v.file, v.line)}"
              for v in open_survivors]
    return "\n".join(lines + hand_summary(hand))


def hand_summary(verdicts: list[Verdict]) -> list[str]:
    """Per campaign seed: how many hand-written mutants were killed, and the survivors by name
    (none is judged equivalent: each is a bug a user would see)."""
    lines = []
    for seed in sorted({v.seed for v in verdicts}, key=lambda s: -1 if s is None else s):
        mine = [v for v in verdicts if v.seed == seed]
        killed = sum(v.killed for v in mine)
        lines.append(f"hand-written mutants, seed {'default' if seed is None else seed}: "
                     f"{killed} killed of {len(mine)}")
        lines += [f"  survived: {v.hand} ({v.file}): {v.description}" for v in mine if not v.killed]
    return lines


def wilson(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (sound near 100%, unlike p +- 2se)."""
    if trials == 0:
        return 0.0, 1.0
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * ((p * (1 - p) / trials + z * z / (4 * trials * trials)) ** 0.5) / (1 + z * z / trials)
    return max(0.0, centre - half), min(1.0, centre + half)
