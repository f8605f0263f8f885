"""The mutation floor: a fixed, seeded sample of mutants checked through the default
campaigns, its killed count compared with the floor committed in tools/mutation-floor.txt.
`make test` runs the quick sample (a test), `make check` the full one; one mutant more
surviving than the floor allows fails the build, with the survivors listed.

The samples are fixed here, not drawn per run: the same mutants at the same campaign seeds
every time, so the count moves only when the campaign (or impl/) does.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

from mutate.equivalent import EQUIVALENT
from mutate.independent import HAND_MUTANTS, HandMutant
from mutate.operators import ROOT, Mutant, mutant_key, mutants_of
from mutate.out_of_check import OUT_OF_CHECK
from mutate.runner import Verdict, stratified_sample

FLOOR_FILE = ROOT / "tools" / "mutation-floor.txt"
#: The files the floor samples: the cron evaluator, the schedules records, the duebook store.
FLOOR_FILES = ("impl/cron.py", "impl/schedules_records.py", "impl/duebook.py")
#: Campaign seeds the hand-written mutants are checked at in the full sample.
HAND_SEEDS = (0, 1, 2)


@dataclass(frozen=True)
class Check:
    mutant: Mutant | HandMutant
    #: The campaign's --seed (None: its default).
    seed: int | None


def sample(name: str) -> list[Check]:
    """The checks of floor `name`, over the mutants of FLOOR_FILES no one has judged
    equivalent (EQUIVALENT: nothing can kill them, and each would cost a whole campaign).
    quick: 3 of each file, none judged out of check either, and 3 hand-written mutants, at
    the default seed: about a minute of CPU while every one is killed. full: a stratified
    sample of 120 at the default seed, and every hand-written mutant at seeds 0, 1 and 2."""
    everything = [m for file in FLOOR_FILES for m in mutants_of(file)
                  if mutant_key(m.file, m.index) not in EQUIVALENT]
    rng = random.Random(45)
    if name == "quick":
        chosen = [m for file in FLOOR_FILES for m in rng.sample(
            [m for m in everything if m.file == file and mutant_key(m.file, m.index) not in OUT_OF_CHECK], 3)]
        return [Check(m, None) for m in chosen + rng.sample(list(HAND_MUTANTS), 3)]
    if name == "full":
        return ([Check(m, None) for m in stratified_sample(everything, 120, 45)]
                + [Check(m, seed) for m in HAND_MUTANTS for seed in HAND_SEEDS])
    raise ValueError(f"no floor named {name!r}; known: quick, full")


_LINE = re.compile(r"^(quick|full) killed >= (\d+)$")


def read_floors(path: Path = FLOOR_FILE) -> dict[str, int]:
    """`name killed >= N` lines; `#` starts a comment (where a lowered floor says why)."""
    floors: dict[str, int] = {}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = _LINE.fullmatch(line)
        if match is None:
            raise ValueError(f"{path}:{number}: expected `quick killed >= N` or `full killed >= N`, got {raw!r}")
        floors[match.group(1)] = int(match.group(2))
    return floors


def judge(name: str, floor: int, verdicts: list[Verdict]) -> tuple[bool, str]:
    """Whether the killed count holds the floor, and the lines that say so (every survivor
    listed, with its judgement when it has one)."""
    killed = sum(v.killed for v in verdicts)
    survivors = [v for v in verdicts if not v.killed]
    lines = [f"mutation floor {name}: {killed} killed of {len(verdicts)} checked; floor {floor}: "
             + ("HOLDS" if killed >= floor else f"BROKEN, {floor - killed} more survived than the floor allows")]
    for v in survivors:
        what = f"hand {v.hand}" if v.hand else f"{v.file}:{v.line} #{v.index}"
        judged = "" if v.hand else (" (judged equivalent)" if EQUIVALENT.get(mutant_key(v.file, v.index))
                                    else " (judged out of check)" if OUT_OF_CHECK.get(mutant_key(v.file, v.index))
                                    else "")
        seed = "default" if v.seed is None else v.seed
        lines.append(f"  survived: {what} at seed {seed}: {v.description}{judged}")
    return killed >= floor, "\n".join(lines)
