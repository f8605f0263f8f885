"""Checking one mutant: `duespec check` in a fresh child process with the mutated module
installed, bounded in CPU time, and its exit read as a verdict; and drawing the
stratified sample of mutants a run checks.
"""

from __future__ import annotations

import importlib
import importlib.util
import random
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from mutate.independent import HandMutant, hand_mutant
from mutate.operators import FILES, ROOT, Mutant, mutated_source_tree

#: The command a child runs (`--child FILE INDEX TRACE_DIR MODE SEED`; INDEX `hand:NAME` for
#: a hand-written mutant, SEED `default` for the campaign's own).
COMMAND = ROOT / "tools" / "mutate_impl.py"
#: CPU seconds one check may take before the mutant counts as hanging (killed): about 15
#: times what the unmutated `duespec check schedules --profile all` takes. CPU, not wall
#: clock: on a loaded machine a surviving mutant can take longer than that by the clock.
CPU_LIMIT = 600
#: Wall-clock backstop, for a child that blocks without using CPU.
WALL_LIMIT = 4 * 3600


def run_in_this_process(file: str, index: int | str, trace_dir: str, exact: bool, seed: int | None = None) -> int:
    """Install the mutated module, then run the check (the child side of `check_mutant`).

    Every check runs with `--database none`: the child runs in the clone's top folder, where
    the default example database is the clone's own `.duespec/examples`, so each mutant's
    failures were saved there and replayed first by the next mutant's check (a verdict that
    depended on the mutants checked before it, and on the user's own campaigns).

    `exact` runs `duespec check SYSTEM --profile all` as a user would. Otherwise the same
    verdict is reached sooner: the profiles run one by one in the same order, stopping at
    the first that fails, each with --max-classes 1 and without Hypothesis's shrink phase.
    The exit code cannot differ: the generate phase, which decides whether any run fails,
    is the same (same seed, same draws); once a run failed, shrinking only picks the
    counterexample to report (and whatever it ends with, the search ends in an error, so
    the campaign fails); later searches only look for more classes; and `--profile all`
    exits 1 as soon as one profile's campaign failed."""
    module_name = "duespec.impl." + Path(file).stem
    importlib.import_module("duespec.impl")
    spec = importlib.util.find_spec(module_name)
    assert spec is not None and spec.origin is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    source = hand_mutant(index.removeprefix("hand:")).source() if isinstance(index, str) else \
        mutated_source_tree(file, index)
    exec(compile(source, spec.origin, "exec"), module.__dict__)
    from duespec.cli import main
    from duespec.systems import get_system
    common = ["--no-coverage", "--progress", "0", "--trace-dir", trace_dir, "--database", "none",
              *([] if seed is None else ["--seed", str(seed)])]
    if exact:
        return main(["check", FILES[file], "--profile", "all", *common])
    import duespec.campaigns.run as campaign_run
    from hypothesis import Phase, settings

    def without_shrinking(**chosen: object) -> settings:
        chosen["phases"] = [phase for phase in chosen["phases"] if phase is not Phase.shrink]  # type: ignore[attr-defined]
        return settings(**chosen)  # type: ignore[arg-type]

    campaign_run.settings = without_shrinking  # type: ignore[assignment]
    for profile in get_system(FILES[file]).profiles:
        code = main(["check", FILES[file], "--profile", profile, "--max-classes", "1", *common])
        if code != 0:
            return code
    return 0


@dataclass(frozen=True)
class Verdict:
    file: str
    index: int
    line: int
    description: str
    #: "killed" (a campaign failed), "hung", "broken" (the mutated module crashed duespec
    #: outright, e.g. on import: what any caller would notice) or "survived".
    outcome: str
    exit_code: int | None
    seconds: float
    first_lines: str
    #: CPU seconds of the check's process (None in runs before this was recorded).
    cpu_seconds: float | None = None
    #: The campaign's --seed (None: its default).
    seed: int | None = None
    #: A hand-written mutant's name (tools/mutate/independent.py); index is then -1.
    hand: str | None = None

    @property
    def killed(self) -> bool:
        return self.outcome != "survived"


def check_mutant(mutant: Mutant | HandMutant, exact: bool = False, seed: int | None = None) -> Verdict:
    """The verdict of the mutant's check (at campaign seed `seed`, or the default)."""
    started = time.perf_counter()
    index = f"hand:{mutant.name}" if isinstance(mutant, HandMutant) else str(mutant.index)
    with tempfile.TemporaryDirectory(prefix="duespec-mutant-") as traces:
        try:
            child = subprocess.Popen([sys.executable, str(COMMAND), "--child", mutant.file, index, traces,
                                      "exact" if exact else "fast", "default" if seed is None else str(seed)],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                                     preexec_fn=_limit_cpu)
            output, _ = child.communicate(timeout=WALL_LIMIT)
            code: int | None = child.returncode
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            code, output = None, f"no verdict within {WALL_LIMIT}s of wall clock"
    if code == -signal.SIGXCPU:
        code, output = None, f"no verdict within {CPU_LIMIT} CPU seconds\n{output}"
    cpu = re.search(r"^mutant check cpu seconds: ([0-9.]+)$", output, re.MULTILINE)
    failed = re.search(r"^(DIVERGES|TARGET FAILED|FAILED): ", output, re.MULTILINE)
    outcome = ("survived" if code == 0 else "hung" if code is None else
               "killed" if code == 1 and failed else "broken")
    hand = isinstance(mutant, HandMutant)
    return Verdict(mutant.file, -1 if hand else mutant.index, 0 if hand else mutant.line,
                   mutant.bug if hand else mutant.description, outcome,
                   code, time.perf_counter() - started, "\n".join(output.splitlines()[:6]),
                   float(cpu.group(1)) if cpu else None, seed, mutant.name if hand else None)


def _limit_cpu() -> None:
    """In the child before exec: SIGXCPU once it has used CPU_LIMIT seconds."""
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_LIMIT, CPU_LIMIT + 30))


#: Smallest share of a sample any one file gets (all of its mutants if it has fewer).
MIN_PER_FILE = 8


def stratified_sample(everything: list[Mutant], size: int, seed: int) -> list[Mutant]:
    """`size` mutants: each file gets its share in proportion to its mutant count (at least
    MIN_PER_FILE), drawn uniformly within the file; the whole is shuffled so that a run cut
    short still covers every file."""
    rng = random.Random(seed)
    by_file = {file: [m for m in everything if m.file == file] for file in FILES}
    quotas = {file: min(len(ms), max(MIN_PER_FILE, round(size * len(ms) / len(everything))))
              for file, ms in by_file.items()}
    chosen = [m for file, ms in by_file.items() for m in rng.sample(ms, quotas[file])]
    rng.shuffle(chosen)
    return chosen
