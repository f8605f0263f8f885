"""The duebook campaign's steps/s against another commit, measured in the same run.

A figure measured today and one written down yesterday on a machine under another load
cannot be compared; so both trees run here, now, in alternation. `REF` (any git commit,
e.g. `main`) is exported with `git archive` into a temporary directory, and the working
tree (what is being measured, edits included) is copied beside it, each laid out as the
installed package is (`spec/`, `model/` and `impl/` as `duespec.spec`, `duespec.model`,
`duespec.impl`). Each side runs the same campaign (the duebook model against impl, same
seeds, same runs x steps) in a child process with its tree first on PYTHONPATH; the child
checks that every duespec module it imported came from that tree, times the campaign with
its own CPU clock and reports its steps. The parent alternates the two children (A B, B A,
...) and keeps each child's whole CPU time too (os.wait4), interpreter start included.

Each repeat takes the next seed (SEED, SEED + 1, ...), both sides the same one. A seed
decides which runs go deep (a fill of a thousand cheap steps, a tour of two thousand) and
a campaign change moves that, so one seed measures the draws as much as the harness: the
same two commits gave 0.78x at one seed and 1.04-2.43x at five others."""

from __future__ import annotations

import io
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

#: The tree this duespec runs from (a git checkout when developing duespec).
SOURCE_TREE = Path(__file__).resolve().parents[2]
#: The top-level folders of the package, and where the installed package puts them.
LAYOUT = {"duespec": "duespec", "spec": "duespec/spec", "model": "duespec/model", "impl": "duespec/impl"}
#: The campaign both sides run: the bench's harness budget (docs/mutation.md).
EXAMPLES, STEPS, SEED = 100, 50, 1
#: The goal of issue 8: steps/s falls by at most 15% against main.
RATIO_GOAL = 0.85

#: What a child runs: the campaign, timed with the child's own CPU clock, after checking
#: that duespec came from the tree it was given (an editable install elsewhere must not
#: stand in for it).
CHILD = """
import json, sys, time
tree, examples, steps, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
from duespec.campaigns.run import run_campaign
from duespec.systems.duebook import SYSTEM, ImplTarget
stray = sorted(name for name, module in sys.modules.items() if name.split(".")[0] == "duespec"
               and getattr(module, "__file__", None) and not module.__file__.startswith(tree))
if stray:
    sys.exit(f"modules not from {tree}: {stray}")
cpu = time.process_time()
result = run_campaign(SYSTEM, ImplTarget, examples=examples, step_count=steps, seed=seed)
cpu = time.process_time() - cpu
print(json.dumps({"steps": result.steps, "runs": result.examples, "cpu": cpu, "ok": result.ok}))
"""


class AgainstError(Exception):
    """REF cannot be measured against: not a commit, or no git checkout to find it in."""


@dataclass(frozen=True)
class ChildRun:
    steps: int
    runs: int
    #: CPU seconds of the campaign, by the child's own clock.
    cpu: float
    #: CPU seconds of the whole child (user + system, interpreter start and imports included).
    process_cpu: float

    @property
    def rate(self) -> float:
        return self.steps / self.cpu


@dataclass(frozen=True)
class Comparison:
    ref: str
    commit: str
    current: list[ChildRun]
    baseline: list[ChildRun]

    @property
    def ratios(self) -> list[float]:
        """Per repeat, this tree's steps/s over REF's, from the two children run side by side."""
        return [a.rate / b.rate for a, b in zip(self.current, self.baseline)]


def resolve_ref(ref: str, repo: Path = SOURCE_TREE) -> str:
    """The full commit id of `ref` in `repo`'s git checkout, or AgainstError saying why not."""
    if shutil.which("git") is None:
        raise AgainstError(f"--against {ref}: git is not installed, so no other commit can be measured")
    inside = subprocess.run(["git", "-C", str(repo), "rev-parse", "--show-toplevel"],
                            capture_output=True, text=True)
    if inside.returncode != 0:
        raise AgainstError(f"--against {ref}: duespec runs from {repo}, which is not a git checkout, "
                           "so there is no commit to measure against")
    found = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
                           capture_output=True, text=True)
    if found.returncode != 0 or not found.stdout.strip():
        raise AgainstError(f"--against {ref}: no such commit in the git checkout at {repo} "
                           "(a branch, tag or commit id such as main or HEAD~1)")
    return found.stdout.strip()


def export_commit(commit: str, into: Path, repo: Path = SOURCE_TREE) -> None:
    """`git archive` of the commit's package folders, laid out as installed."""
    archive = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", commit, *LAYOUT],
                             capture_output=True)
    if archive.returncode != 0:
        raise AgainstError(f"git archive {commit[:12]} failed: {archive.stderr.decode(errors='replace').strip()}")
    staging = into.with_name(into.name + "-archive")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(staging, filter="data")
    lay_out(staging, into)
    shutil.rmtree(staging)


def lay_out(source: Path, into: Path) -> None:
    """`source`'s package folders copied into `into` as the installed package has them."""
    for folder, place in LAYOUT.items():
        if not (source / folder).is_dir():
            raise AgainstError(f"{source} has no {folder}/: not a duespec tree")
        shutil.copytree(source / folder, into / place, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))


def run_child(tree: Path, examples: int, steps: int, seed: int) -> ChildRun:
    """One campaign in a fresh interpreter with `tree` first on PYTHONPATH; the child's
    whole CPU time is the RUSAGE_CHILDREN delta across it (it is reaped in between)."""
    environment = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    child = subprocess.run([sys.executable, "-c", CHILD, str(tree), str(examples), str(steps), str(seed)],
                           capture_output=True, env=environment, cwd=tree)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if child.returncode != 0:
        last = child.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["(nothing on stderr)"]
        raise AgainstError(f"the campaign on {tree} failed (exit {child.returncode}): {last[0]}")
    report = json.loads(child.stdout.decode().strip().splitlines()[-1])
    whole = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return ChildRun(report["steps"], report["runs"], report["cpu"], whole)


def compare(ref: str, repeats: int = 5, examples: int = EXAMPLES, steps: int = STEPS, seed: int = SEED,
            repo: Path = SOURCE_TREE, current: Path = SOURCE_TREE) -> Comparison:
    """The same campaign on the tree at `current` and on the commit `ref` of `repo`,
    `repeats` times each in alternation (A B, B A, ...), repeat i at seed `seed` + i."""
    commit = resolve_ref(ref, repo)
    with tempfile.TemporaryDirectory(prefix="duespec-against-") as scratch:
        ours, theirs = Path(scratch) / "current", Path(scratch) / "ref"
        lay_out(current, ours)  # the working tree, edits included
        export_commit(commit, theirs, repo)
        sides: list[list[ChildRun]] = [[], []]
        order = [0, 1]
        for repeat in range(repeats):
            for side in order:
                sides[side].append(run_child((ours, theirs)[side], examples, steps, seed + repeat))
            order.reverse()
    return Comparison(ref, commit, sides[0], sides[1])


def summary(comparison: Comparison) -> dict[str, float]:
    """The figures the bench prints beside the ratio, for --json."""
    def median(values: list[float]) -> float:
        return statistics.median(values)
    def pooled(runs: list[ChildRun]) -> float:
        return sum(run.steps for run in runs) / sum(run.cpu for run in runs)
    return {
        "steps_current": float(sum(run.steps for run in comparison.current)),
        "steps_ref": float(sum(run.steps for run in comparison.baseline)),
        "steps_per_s_current": pooled(comparison.current),
        "steps_per_s_ref": pooled(comparison.baseline),
        "pooled_ratio": pooled(comparison.current) / pooled(comparison.baseline),
        "child_cpu_current": median([run.process_cpu for run in comparison.current]),
        "child_cpu_ref": median([run.process_cpu for run in comparison.baseline]),
        "cpu_per_run_ratio": median([(a.cpu / a.runs) / (b.cpu / b.runs)
                                     for a, b in zip(comparison.current, comparison.baseline)]),
    }
