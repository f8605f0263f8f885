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
from mutate.independent import HAND_MUTANTS, HandMutant, hand_mutant
from mutate.operators import ROOT, Mutant, mutant_key, mutants_of
from mutate.out_of_check import OUT_OF_CHECK
from mutate.runner import Verdict, stratified_sample

FLOOR_FILE = ROOT / "tools" / "mutation-floor.txt"
#: The files the floor samples: the cron evaluator, the schedules records, the duebook store.
FLOOR_FILES = ("impl/cron.py", "impl/schedules_records.py", "impl/duebook.py")
#: The hand-written mutants of the quick sample: bugs issue 45 found slipping through a
#: default campaign (a day split by 61 minutes in catch-up, `?` refused, trailing garbage
#: accepted, a schedule id refused).
QUICK_HAND = ("catch-up-splits-the-day-by-61", "question-mark-refused-in-day-of-month",
              "trailing-garbage-accepted", "schedule-id-no-spaces")
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
    quick, about a minute of CPU while every one is killed, at the default seed: 3 AST
    mutants each of cron.py and duebook.py (none judged out of check either), and the
    hand-written QUICK_HAND, of cron.py and schedules_records.py (that file's AST mutants
    mostly tell only in profile deployed's search parsing, two whole campaigns each). full:
    every hand-written mutant at seeds 0, 1 and 2, then a stratified sample of 60 at the
    default seed."""
    everything = [m for file in FLOOR_FILES for m in mutants_of(file)
                  if mutant_key(m.file, m.index) not in EQUIVALENT]
    rng = random.Random(45)
    if name == "quick":
        chosen: list[Mutant | HandMutant] = [m for file in ("impl/cron.py", "impl/duebook.py") for m in rng.sample(
            [m for m in everything if m.file == file and mutant_key(m.file, m.index) not in OUT_OF_CHECK], 3)]
        chosen += [hand_mutant(name) for name in QUICK_HAND]
        return [Check(m, None) for m in chosen]
    if name == "full":
        return ([Check(m, seed) for m in HAND_MUTANTS for seed in HAND_SEEDS]
                + [Check(m, None) for m in stratified_sample(everything, 60, 45)])
    raise ValueError(f"no floor named {name!r}; known: quick, full")


_LINE = re.compile(r"^(quick|full|sql) killed >= (\d+)$")


def read_floors(path: Path = FLOOR_FILE) -> dict[str, int]:
    """`name killed >= N` lines; `#` starts a comment (where a lowered floor says why)."""
    floors: dict[str, int] = {}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = _LINE.fullmatch(line)
        if match is None:
            raise ValueError(f"{path}:{number}: expected `quick|full|sql killed >= N`, got {raw!r}")
        floors[match.group(1)] = int(match.group(2))
    return floors


def judge(name: str, floor: int, verdicts: list[Verdict], unchecked: int = 0) -> tuple[bool, str]:
    """Whether the killed count holds the floor, and the lines that say so (every survivor
    listed, with its judgement when it has one). `unchecked` checks of the sample that a
    run cut short never finished count as survivors, and are said."""
    killed = sum(v.killed for v in verdicts)
    survivors = [v for v in verdicts if not v.killed]
    cut = f" ({unchecked} of the sample not checked: counted as survivors)" if unchecked else ""
    lines = [f"mutation floor {name}: {killed} killed of {len(verdicts)} checked{cut}; floor {floor}: "
             + ("HOLDS" if killed >= floor else f"BROKEN, {floor - killed} more survived than the floor allows")]
    for v in survivors:
        what = f"hand {v.hand}" if v.hand else f"{v.file}:{v.line} #{v.index}"
        judged = "" if v.hand else (" (judged equivalent)" if EQUIVALENT.get(mutant_key(v.file, v.index))
                                    else " (judged out of check)" if OUT_OF_CHECK.get(mutant_key(v.file, v.index))
                                    else "")
        seed = "default" if v.seed is None else v.seed
        lines.append(f"  survived: {what} at seed {seed}: {v.description}{judged}")
    return killed >= floor, "\n".join(lines)


def write_figures(doc: Path, name: str, command: str, said: str) -> None:
    """Replace the block between `<!-- mutation-floor NAME -->` and `<!-- /mutation-floor
    NAME -->` in `doc` with the command and what it printed: the doc's figures are the
    command's output, never typed. Raises ValueError when the markers are missing."""
    begin, end = f"<!-- mutation-floor {name} -->", f"<!-- /mutation-floor {name} -->"
    text = doc.read_text(encoding="utf-8")
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise ValueError(f"{doc} has no block {begin} ... {end} to write the figures into")
    block = f"{begin}\n```\n$ {command}\n{said}\n```\n{end}"
    doc.write_text(text[:text.index(begin)] + block + text[text.index(end) + len(end):], encoding="utf-8")
